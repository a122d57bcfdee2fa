package tune

import (
	"cmp"
	"debug/elf"
	"fmt"
	"slices"

	"hijack/vptrace/abi"
	"hijack/vptrace/trace"
)

// Layout is where a linked executable's data lives, so that pages from
// runs of differently instrumented builds can be compared. Instrumentation
// grows .text, which moves everything after it: .rodata, .data, .bss and
// the brk heap (it starts at the page after the image). Runs are made with
// address-space randomisation off, so memory mapped at run time (shared
// libraries, mmap'ed allocations, thread stacks) is at the same addresses
// in every build; only the image and the brk heap need translating.
type Layout struct {
	Path     string
	Sections []Section // allocated sections that are not code, ascending Addr
	Start    uint64    // link-time start of the image (lowest PT_LOAD address)
	End      uint64    // link-time end of the image (highest PT_LOAD end)
	vptrace  Section   // the .vptrace section: where the object descriptors are
	data     []byte    // its contents
}

// Section is one allocated section of the executable, at link-time
// addresses.
type Section struct {
	Name       string
	Addr, Size uint64
}

// ReadLayout reads the layout of a linked executable.
func ReadLayout(path string) (*Layout, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l := &Layout{Path: path, Start: ^uint64(0)}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			l.Start = min(l.Start, p.Vaddr&^pageMask)
			l.End = max(l.End, p.Vaddr+p.Memsz)
		}
	}
	if l.End == 0 {
		return nil, fmt.Errorf("%s: no loadable segments", path)
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 {
			continue
		}
		if s.Name == ".vptrace" {
			l.vptrace = Section{s.Name, s.Addr, s.Size}
			if s.Type != elf.SHT_NOBITS {
				l.data, _ = s.Data()
			}
		}
		if s.Flags&elf.SHF_EXECINSTR != 0 || s.Flags&elf.SHF_TLS != 0 {
			continue
		}
		l.Sections = append(l.Sections, Section{s.Name, s.Addr, s.Size})
	}
	slices.SortFunc(l.Sections, func(a, b Section) int {
		return cmp.Compare(a.Addr, b.Addr)
	})
	return l, nil
}

// Bias finds the load bias of the executable in a run (0 for a non-PIE
// executable) from the runtime address of an object descriptor the trace
// recorded: the descriptor with the same id is in the executable's
// .vptrace section. ok is false when no descriptor matches (the trace is
// from another build, or the objects are in a shared library).
func (l *Layout) Bias(tr *trace.Trace) (bias uint64, ok bool) {
	for _, ob := range tr.Objects {
		for off := 0; off+abi.ObjectSize <= len(l.data); off += 8 {
			if d, _ := abi.UnmarshalObject(l.data[off:]); d.Magic == abi.Magic && d.ID == ob.ID {
				return ob.Desc - (l.vptrace.Addr + uint64(off)), true
			}
		}
	}
	return 0, false
}

// brk is the link-time address where the brk heap starts (the kernel puts
// it at the page after the image when randomisation is off).
func (l *Layout) brk() uint64 { return (l.End + pageMask) &^ pageMask }

const pageMask = trace.PageSize - 1

// brkSpan bounds the brk heap the translation assumes: addresses from the
// brk start up to this far above it are heap.
const brkSpan = 1 << 40

// Translator maps the addresses of one run of one build to the addresses
// the same memory had in the reference build's run.
type Translator struct {
	from, to         *Layout
	fromBias, toBias uint64
	secs             []secMap
}

type secMap struct {
	lo, hi uint64 // run-time range in the translated build
	delta  uint64 // added (mod 2^64) to translate
}

// NewTranslator returns a translator from a run of build from (load bias
// fromBias) to a run of build to (toBias). Sections are matched by name;
// the brk heap moves with the end of the image. A nil translator
// translates nothing.
func NewTranslator(from *Layout, fromBias uint64, to *Layout, toBias uint64) *Translator {
	if from == nil || to == nil {
		return nil
	}
	t := &Translator{from: from, to: to, fromBias: fromBias, toBias: toBias}
	byName := map[string]Section{}
	for _, s := range to.Sections {
		byName[s.Name] = s
	}
	for _, s := range from.Sections {
		d, ok := byName[s.Name]
		if !ok {
			continue
		}
		t.secs = append(t.secs, secMap{lo: s.Addr + fromBias, hi: s.Addr + s.Size + fromBias, delta: (d.Addr + toBias) - (s.Addr + fromBias)})
	}
	lo := from.brk() + fromBias
	t.secs = append(t.secs, secMap{lo: lo, hi: lo + brkSpan, delta: (to.brk() + toBias) - lo})
	return t
}

// Addr translates one address.
func (t *Translator) Addr(a uint64) uint64 {
	if t == nil {
		return a
	}
	for _, s := range t.secs {
		if a >= s.lo && a < s.hi {
			return a + s.delta
		}
	}
	return a
}

// Identity reports whether the translator changes nothing.
func (t *Translator) Identity() bool {
	if t == nil {
		return true
	}
	for _, s := range t.secs {
		if s.delta != 0 {
			return false
		}
	}
	return true
}

func (s Section) String() string { return fmt.Sprintf("%s@%#x+%#x", s.Name, s.Addr, s.Size) }
