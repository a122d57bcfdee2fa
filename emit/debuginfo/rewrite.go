package debuginfo

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"hijack/elfobj"
	"hijack/ibr"
)

// Rewrite makes the DWARF debug information of f follow moved code; maps
// holds the new layout of every code section whose code moved, by section
// index. It returns the new contents of the debug sections it rewrote, by
// section index, for the caller to install (relocations in them and
// symbols into them move by Section.MapOff); f is not changed.
//
// Addresses the assembler left to relocations (DW_AT_low_pc, DW_FORM_addr
// attributes, .debug_addr entries, DW_LNE_set_address, DW_OP_addr,
// relocated list entries) already follow through the relocation remapping.
// What the assembler computed as constants is recomputed here from the old
// relocations and symbols, before any of them changes:
//
//   - .debug_line: every address advance of every sequence, so that each row
//     lands on the new address of its instruction (a row at an instruction
//     start lands on the code inserted before it); headers stay as they are.
//   - .debug_info: DW_AT_high_pc (and DW_AT_entry_pc) of constant class, as
//     lengths from DW_AT_low_pc, patched in place.
//   - .debug_rnglists and .debug_loclists (DWARF 5): offset pairs relative
//     to a base address (the unit's, DW_RLE/LLE_base_address(x)), lengths
//     of start_length and startx_length entries, and the offset tables of
//     DW_FORM_rnglistx/loclistx; lists may change size, so the sections are
//     rebuilt and references into them follow.
//   - .debug_ranges and .debug_loc (DWARF 2-4): pairs relative to the unit's
//     base address or to a base address selection entry.
//   - .debug_aranges: lengths of address ranges.
//   - .debug_frame: FDE address ranges and advances, as in .eh_frame.
//
// An instruction start maps to the start of the code inserted before it
// (where a debugger should put a breakpoint); a byte inside an instruction
// (gcc ends some location ranges at the last byte of a call) maps to the
// same byte of the instruction's new encoding, see mapDebugAddr.
// Compressed sections (SHF_COMPRESSED, zlib) are read uncompressed and, if
// rewritten, written back uncompressed.
//
// Whatever is not understood (a version, form, list entry kind or opcode it
// does not know, a section it cannot parse, a value that no longer fits its
// field, split DWARF .dwo sections) is left as it was and named in a
// warning; a problem with debug information never fails the rewrite.
func Rewrite(f *elfobj.File, maps map[int]CodeMap, warn func(string)) (map[int]*Section, error) {
	d := newDebugRewrite(f, maps)
	if !d.refersToMovedCode() {
		return nil, nil
	}
	res := make(map[int]*Section)
	install := func(idx int, rb *Section, err error) {
		name := f.SectionName(idx)
		if err == nil {
			err = d.readable(idx)
		}
		if err == nil && rb != nil {
			err = d.checkRebuilt(idx, rb)
		}
		if err != nil {
			d.warnf("section %s: %v: left as it was, so its addresses inside rewritten code are stale", name, err)
			return
		}
		if rb == nil {
			return
		}
		if prev := res[idx]; prev != nil {
			d.warnf("section %s: rewritten twice (internal problem): left as it was", name)
			delete(res, idx)
			return
		}
		res[idx] = rb
		d.uncompressed(idx)
	}
	for _, part := range []struct {
		name string
		fn   func(int) (*Section, error)
	}{{".debug_line", d.rewriteLine}, {".debug_aranges", d.rewriteAranges}, {".debug_frame", d.rewriteDebugFrame}} {
		for _, idx := range d.byName[part.name] {
			if err := d.readable(idx); err != nil {
				install(idx, nil, err)
				continue
			}
			rb, err := part.fn(idx)
			install(idx, rb, err)
		}
	}
	d.rewriteInfo(install)
	var split []string
	for _, s := range f.Sections {
		if strings.HasSuffix(s.Name, ".dwo") && s.Type == elf.SHT_PROGBITS {
			split = append(split, s.Name)
		}
	}
	if len(split) > 0 {
		d.warnf("split DWARF sections (%s) are not rewritten: lengths and offsets in them are stale", strings.Join(split, ", "))
	}
	if warn != nil {
		for _, w := range dwDedupWarnings(d.warns) {
			warn("debug information: " + w)
		}
	}
	return res, nil
}

// maxWarningsPerSection bounds the warnings about one section; the rest
// are counted.
const maxWarningsPerSection = 5

// dwDedupWarnings drops repeated warnings, counting them, and keeps the
// first few about each section.
func dwDedupWarnings(ws []string) []string {
	count := make(map[string]int)
	var order []string
	for _, w := range ws {
		if count[w] == 0 {
			order = append(order, w)
		}
		count[w]++
	}
	out := make([]string, 0, len(order))
	perSec := make(map[string]int)
	var secOrder []string
	for _, w := range order {
		sec, _, _ := strings.Cut(w, ":")
		if perSec[sec] == 0 {
			secOrder = append(secOrder, sec)
		}
		if perSec[sec]++; perSec[sec] > maxWarningsPerSection {
			continue
		}
		if n := count[w]; n > 1 {
			w = fmt.Sprintf("%s (%d times)", w, n)
		}
		out = append(out, w)
	}
	for _, sec := range secOrder {
		if n := perSec[sec] - maxWarningsPerSection; n > 0 {
			out = append(out, fmt.Sprintf("%s: %d more problems", sec, n))
		}
	}
	return out
}

// refersToMovedCode reports whether any debug section has a relocation
// into moved code; otherwise nothing needs rewriting.
func (d *debugRewrite) refersToMovedCode() bool {
	for sec, rs := range d.rel {
		if sec <= 0 || sec >= len(d.f.Sections) || !strings.HasPrefix(d.f.Sections[sec].Name, ".debug_") {
			continue
		}
		for _, r := range rs {
			if int(r.Sym) < len(d.f.Symbols) && d.maps[int(d.f.Symbols[r.Sym].Shndx)] != nil {
				return true
			}
		}
	}
	return false
}

// checkRebuilt verifies that the caller can map every relocation inside
// section idx and every relocation target in it.
func (d *debugRewrite) checkRebuilt(idx int, rb *Section) error {
	for off := range d.rel[idx] {
		if _, err := rb.MapOff(off); err != nil {
			return fmt.Errorf("relocation at 0x%x has no place in the rewritten section", off)
		}
	}
	for _, rs := range d.f.Sections {
		if rs.Type != elf.SHT_RELA {
			continue
		}
		for _, r := range rs.Relocs {
			if int(r.Sym) >= len(d.f.Symbols) || ibr.ClassOf(r.Type) == ibr.RelocOther {
				continue
			}
			sym := &d.f.Symbols[r.Sym]
			if int(sym.Shndx) != idx || sym.Shndx >= 0xffff0000 {
				continue
			}
			if _, err := rb.MapOff(uint64(int64(sym.Value) + r.Addend)); err != nil {
				return fmt.Errorf("relocation in %s at 0x%x refers to 0x%x, which has no place in the rewritten section", rs.Name, r.Off, int64(sym.Value)+r.Addend)
			}
		}
	}
	return nil
}

// dwBuilder assembles a rebuilt section from pieces of the old one and new
// bytes.
type dwBuilder struct {
	old  []byte
	out  []byte
	segs []Segment
	// fixups run once the layout is known, with a function mapping old
	// offsets to new ones.
	fixups []func(mapOff func(uint64) (uint64, error), out []byte) error
}

func newDwBuilder(old []byte) *dwBuilder {
	return &dwBuilder{old: old, out: make([]byte, 0, len(old)+len(old)/8)}
}

func (b *dwBuilder) pos() uint64 { return uint64(len(b.out)) }

// copy appends old bytes [lo, hi), which keep their place in the mapping.
func (b *dwBuilder) copy(lo, hi uint64) {
	if hi <= lo {
		return
	}
	n := hi - lo
	if k := len(b.segs) - 1; k >= 0 {
		s := &b.segs[k]
		if s.Old+s.N == lo && s.New+s.N == b.pos() {
			s.N += n
			b.out = append(b.out, b.old[lo:hi]...)
			return
		}
	}
	b.segs = append(b.segs, Segment{lo, n, b.pos()})
	b.out = append(b.out, b.old[lo:hi]...)
}

// emit appends new bytes.
func (b *dwBuilder) emit(p ...byte) { b.out = append(b.out, p...) }

// fixup registers a patch that needs the final layout.
func (b *dwBuilder) fixup(fn func(mapOff func(uint64) (uint64, error), out []byte) error) {
	b.fixups = append(b.fixups, fn)
}

// fixLength registers the patch of a unit length field at old offset off
// (a 4-byte length, or 0xffffffff and an 8-byte one) for a unit that ends
// at old offset end.
func (b *dwBuilder) fixLength(off, end uint64, offSize int) {
	b.fixup(func(mapOff func(uint64) (uint64, error), out []byte) error {
		ns, err := mapOff(off)
		if err != nil {
			return err
		}
		ne, err := mapOff(end)
		if err != nil {
			return err
		}
		if offSize == 4 {
			l := ne - ns - 4
			if l >= 0xfffffff0 {
				return fmt.Errorf("unit at 0x%x is too long", off)
			}
			put32(out[ns:], uint32(l))
		} else {
			binary.LittleEndian.PutUint64(out[ns+4:], ne-ns-12)
		}
		return nil
	})
}

// finish applies the fixups and returns the section, or nil if nothing
// changed.
func (b *dwBuilder) finish() (*Section, error) {
	rb := &Section{Data: b.out, Segs: b.segs, Size: uint64(len(b.old))}
	for _, fn := range b.fixups {
		if err := fn(rb.MapOff, b.out); err != nil {
			return nil, err
		}
	}
	if bytes.Equal(b.out, b.old) {
		return nil, nil
	}
	return rb, nil
}

// patchedSection returns a rebuilt section with the same layout and new contents.
func patchedSection(data []byte) *Section {
	return &Section{Data: data, Segs: []Segment{{0, uint64(len(data)), 0}}, Size: uint64(len(data))}
}

// dwBounds sorts and deduplicates offsets, keeping those in [0, size].
func dwBounds(v []uint64, size uint64) []uint64 {
	v = slices.DeleteFunc(v, func(x uint64) bool { return x > size })
	slices.SortFunc(v, cmp.Compare[uint64])
	return slices.Compact(v)
}

// dwMark is a point a builder can return to.
type dwMark struct {
	out, segs int
	last      Segment
}

func (b *dwBuilder) mark() dwMark {
	m := dwMark{out: len(b.out), segs: len(b.segs)}
	if m.segs > 0 {
		m.last = b.segs[m.segs-1]
	}
	return m
}

// reset drops everything appended since m.
func (b *dwBuilder) reset(m dwMark) {
	b.out = b.out[:m.out]
	b.segs = b.segs[:m.segs]
	if m.segs > 0 {
		b.segs[m.segs-1] = m.last
	}
}
