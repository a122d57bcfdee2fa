// Package owner names what a traced page held: the heap block an
// allocation site returned, the global or static variable of the
// executable or of a library, a thread's stack or TLS block, a mapped file,
// an anonymous mapping. It works from what the vptrace runtime recorded
// (allocation events, the process's mappings, each thread's stack and TLS
// ranges: trace format 1.3) and from the symbol tables of the mapped files
// themselves, so a page is named by its address whichever instruction
// touched it, and no -g is needed (DWARF line information, when the
// binary has it, adds file:line to allocation sites).
package owner

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ianlancetaylor/demangle"

	"hijack/vptrace/trace"
)

// Segments: what kind of memory a page is.
const (
	SegGlobal  = "global"  // the executable's data (.data, .bss, .rodata, ...)
	SegHeap    = "heap"    // a block from malloc, new, ...
	SegStack   = "stack"   // a thread's stack
	SegTLS     = "tls"     // a thread's TLS block
	SegMmap    = "mmap"    // a mapping the program made, a mapped file, anonymous memory
	SegLib     = "lib"     // a shared library's data (or the vdso)
	SegUnknown = "unknown" // in no known mapping
)

// Owner is what a page held.
type Owner struct {
	// Segment is one of the Seg constants.
	Segment string
	// Name is the owner as the report prints it: a variable's name (a
	// library's as "libc.so.6:stdout"), "const" (unnamed read-only data),
	// a section name (".got"), ALLOCATOR@FUNC+0xOFF for heap blocks and
	// anonymous mappings the program made, a file mapping's path,
	// "stack:TID", "tls:TID", "anon" or "unknown".
	Name string
	// Region is the heap block, mapping, stack or TLS block (nil for
	// globals and for memory no event described).
	Region *trace.Region
}

// Resolver names owners and allocation sites for one trace. It reads the
// mapped files' symbol tables on first use; a file that cannot be read
// (deleted, replaced since the run) leaves its addresses named by the
// mapping.
type Resolver struct {
	t       *trace.Trace
	maps    []trace.Mapping // every snapshot's mappings, latest snapshot first
	exe     string
	mainTID uint32

	mu     sync.Mutex
	images map[string]*image
	warned []string
}

// New returns a resolver for t.
func New(t *trace.Trace) *Resolver {
	r := &Resolver{t: t, images: map[string]*image{}}
	if t.Header != nil {
		r.exe, r.mainTID = t.Header.Exe, t.Header.PID
	}
	for i := len(t.Maps) - 1; i >= 0; i-- {
		r.maps = append(r.maps, t.Maps[i].Maps...)
	}
	return r
}

// HasMaps reports whether the trace recorded the process's mappings (and
// so whether pages can be named by address at all).
func (r *Resolver) HasMaps() bool { return len(r.maps) > 0 }

// Problems lists the mapped files whose symbols could not be read.
func (r *Resolver) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.warned)
}

// Of names the owner of page pg when region (Page.Region,
// PagePart.Region; may be nil) held it.
func (r *Resolver) Of(pg uint64, region *trace.Region) Owner {
	if region != nil {
		return Owner{Segment: region.Kind.String(), Name: r.regionName(region), Region: region}
	}
	addr := pg << trace.PageShift
	if im, _ := r.imageAt(addr); im != nil {
		seg := SegLib
		if im.main {
			seg = SegGlobal
		}
		return Owner{Segment: seg, Name: im.dataName(addr)}
	}
	m := r.mappingAt(addr)
	if m == nil {
		return Owner{Segment: SegUnknown, Name: "unknown"}
	}
	switch {
	case m.Path == "":
		return Owner{Segment: SegMmap, Name: "anon"}
	case m.Path == "[heap]":
		// brk memory no recorded allocation covers: allocator metadata,
		// blocks allocated before tracking began
		return Owner{Segment: SegHeap, Name: "unknown"}
	case m.Path == "[stack]":
		return Owner{Segment: SegStack, Name: fmt.Sprintf("stack:%d", r.mainTID)}
	case strings.HasPrefix(m.Path, "["):
		return Owner{Segment: SegLib, Name: m.Path}
	}
	return Owner{Segment: SegMmap, Name: m.Path}
}

// OfInstruction names a page's owner from what the instruction that
// touched it told (its site's segment and the variable it addressed
// RIP-relative): all a trace without allocation events and mappings
// (written before format 1.3) can say. known: the site is in the
// trace's site tables.
func OfInstruction(known bool, seg trace.Segment, symbol string) Owner {
	if !known {
		return Owner{Segment: SegUnknown, Name: "unknown"}
	}
	switch seg {
	case trace.SegGlobal:
		if symbol != "" {
			return Owner{Segment: SegGlobal, Name: symbol}
		}
		return Owner{Segment: SegGlobal, Name: "unknown"}
	case trace.SegStack:
		return Owner{Segment: SegStack, Name: "unknown"}
	case trace.SegTLS:
		return Owner{Segment: SegTLS, Name: "unknown"}
	}
	return Owner{Segment: SegUnknown, Name: "unknown"}
}

func (r *Resolver) regionName(g *trace.Region) string {
	switch g.Kind {
	case trace.RegionStack:
		return fmt.Sprintf("stack:%d", g.TID)
	case trace.RegionTLS:
		return fmt.Sprintf("tls:%d", g.TID)
	case trace.RegionMmap:
		if g.Flags&trace.AllocFile != 0 && g.Path != "" {
			return g.Path
		}
	}
	return g.Alloc.String() + "@" + r.Site(g.Site)
}

// Site names a code address (an allocation site: the return address of
// the call) as FUNC+0xOFF, the function demangled; in a library whose
// symbols do not name it, LIB+0xOFF; else the address.
func (r *Resolver) Site(addr uint64) string {
	im, _ := r.imageAt(addr)
	if im == nil {
		return fmt.Sprintf("%#x", addr)
	}
	if f := im.funcAt(addr - 1); f != nil { // addr - 1: the call, not what follows it
		return fmt.Sprintf("%s+%#x", f.name, addr-f.addr)
	}
	return fmt.Sprintf("%s+%#x", filepath.Base(im.path), addr-im.bias)
}

// Line is the source position of the call before return address addr
// ("file.c:42"), or "" when the binary has no line information for it.
func (r *Resolver) Line(addr uint64) string {
	im, _ := r.imageAt(addr)
	if im == nil {
		return ""
	}
	return im.line(addr - 1 - im.bias)
}

// mappingAt returns the mapping holding addr in the latest snapshot that
// has one.
func (r *Resolver) mappingAt(addr uint64) *trace.Mapping {
	for i := range r.maps {
		if m := &r.maps[i]; addr >= m.Start && addr < m.End {
			return m
		}
	}
	return nil
}

// imageAt returns the ELF image (executable, library) whose loaded range
// holds addr, including its .bss beyond the file's mappings.
func (r *Resolver) imageAt(addr uint64) (*image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.maps {
		m := &r.maps[i]
		if m.Path == "" || strings.HasPrefix(m.Path, "[") {
			continue
		}
		im := r.load(m)
		if im != nil && addr >= im.lo && addr < im.hi {
			return im, nil
		}
	}
	return nil, nil
}

// load opens the image a file mapping belongs to (nil if it is not one).
func (r *Resolver) load(m *trace.Mapping) *image {
	if im, ok := r.images[m.Path]; ok {
		return im
	}
	im, err := openImage(m.Path, r.maps)
	if err != nil {
		if !strings.Contains(err.Error(), "bad magic") {
			r.warned = append(r.warned, err.Error())
		}
		im = nil
	}
	if im != nil {
		im.main = m.Path == r.exe
	}
	r.images[m.Path] = im
	return im
}

// ---- images ----

type sym struct {
	name      string
	addr, end uint64 // runtime addresses
	// goRuntime: data of the Go runtime linked into the executable with
	// libvptrace.a (runtime.noptrdata..runtime.enoptrdata and the like):
	// not the program's, it names a page only when no program variable
	// shares it
	goRuntime bool
}

type section struct {
	name      string
	addr, end uint64 // runtime addresses
	rodata    bool
	// linker tables (.got, .got.plt, .dynamic, .init_array, ...): the
	// program's code does not address their bytes as data, so they do not
	// outweigh a variable sharing their page
	linker bool
}

type image struct {
	path   string
	main   bool
	bias   uint64 // runtime address - link address
	lo, hi uint64 // runtime range of the PT_LOAD segments
	data   []sym  // ascending addr
	maxEnd []uint64
	funcs  []sym // ascending addr
	secs   []section

	dwarfOnce sync.Once
	lines     []lineRow
	f         *elf.File
}

type lineRow struct {
	addr uint64 // link address
	pos  string
}

func openImage(path string, maps []trace.Mapping) (*image, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	im := &image{path: path, f: f}
	// the bias: a mapping of the file at its lowest address, and the
	// PT_LOAD segment holding that mapping's file offset
	var first *trace.Mapping
	for i := range maps {
		if m := &maps[i]; m.Path == path && (first == nil || m.Start < first.Start) {
			first = m
		}
	}
	var loads []*elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p)
		}
	}
	if len(loads) == 0 {
		return nil, fmt.Errorf("%s: no loadable segments", path)
	}
	found := false
	for _, p := range loads {
		lo := p.Off &^ (trace.PageSize - 1)
		if first.Offset >= lo && first.Offset < p.Off+max(p.Filesz, 1) {
			im.bias = first.Start - (p.Vaddr - (p.Off - first.Offset))
			found = true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: its mapping at %#x (offset %#x) is in no loadable segment: the file changed since the run?", path, first.Start, first.Offset)
	}
	im.lo = ^uint64(0)
	for _, p := range loads {
		im.lo = min(im.lo, (p.Vaddr&^(trace.PageSize-1))+im.bias)
		im.hi = max(im.hi, p.Vaddr+p.Memsz+im.bias)
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 || s.Flags&elf.SHF_TLS != 0 {
			continue
		}
		im.secs = append(im.secs, section{name: s.Name, addr: s.Addr + im.bias, end: s.Addr + s.Size + im.bias,
			rodata: s.Flags&(elf.SHF_WRITE|elf.SHF_EXECINSTR) == 0, linker: linkerTable(s)})
	}
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	seen := map[[2]uint64]bool{}
	for _, s := range append(syms, dyn...) {
		if s.Value == 0 || s.Section == elf.SHN_UNDEF || s.Name == "" {
			continue
		}
		typ := elf.ST_TYPE(s.Info)
		k := [2]uint64{s.Value, s.Size}
		switch {
		case typ == elf.STT_FUNC || typ == elf.STT_GNU_IFUNC:
			if !seen[k] {
				im.funcs = append(im.funcs, sym{name: pretty(s.Name), addr: s.Value + im.bias, end: s.Value + s.Size + im.bias})
			}
		case (typ == elf.STT_OBJECT || typ == elf.STT_COMMON || typ == elf.STT_NOTYPE) && s.Size > 0 &&
			!strings.HasPrefix(s.Name, ".L") && !strings.HasPrefix(s.Name, instrumentationPrefix):
			if !seen[k] {
				im.data = append(im.data, sym{name: pretty(s.Name), addr: s.Value + im.bias, end: s.Value + s.Size + im.bias})
			}
		default:
			continue
		}
		seen[k] = true
	}
	markGoData(im.data, syms, im.bias)
	byAddr := func(a, b sym) int { return cmp.Or(cmp.Compare(a.addr, b.addr), cmp.Compare(b.end, a.end)) }
	slices.SortFunc(im.data, byAddr)
	slices.SortFunc(im.funcs, byAddr)
	im.maxEnd = make([]uint64, len(im.data))
	var e uint64
	for i, s := range im.data {
		e = max(e, s.end)
		im.maxEnd[i] = e
	}
	return im, nil
}

// markGoData marks the data symbols inside the ranges a Go linker
// brackets with runtime.X and runtime.eX symbols (the Go runtime's data,
// bss, types and read-only data, in an executable that links a Go
// c-archive such as libvptrace.a).
func markGoData(data []sym, syms []elf.Symbol, bias uint64) {
	at := map[string]uint64{}
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "runtime.") || s.Name == "go:buildinfo" {
			at[s.Name] = s.Value + bias
		}
	}
	var spans [][2]uint64
	for _, k := range []string{"noptrdata", "data", "bss", "noptrbss", "types", "rodata"} {
		lo, ok1 := at["runtime."+k]
		hi, ok2 := at["runtime.e"+k]
		if ok1 && ok2 && lo < hi {
			spans = append(spans, [2]uint64{lo, hi})
		}
	}
	for i := range data {
		for _, sp := range spans {
			if data[i].addr >= sp[0] && data[i].addr < sp[1] {
				data[i].goRuntime = true
			}
		}
	}
}

// Demangle returns a C++ (Itanium ABI) name demangled
// ("_ZN4grid5cellsE" -> "grid::cells"); other names as they are.
func Demangle(name string) string { return pretty(name) }

// pretty demangles a C++ name; other names stay as they are.
func pretty(name string) string {
	if strings.HasPrefix(name, "_Z") {
		return demangle.Filter(name, demangle.NoClones)
	}
	return name
}

// dataName names the data at page address addr: the variable covering
// most of the page, else "const" for read-only data no symbol names
// (string literals, .LC constants), else the section's name.
func (im *image) dataName(addr uint64) string {
	lo, hi := addr, addr+trace.PageSize
	overlap := func(a, b uint64) uint64 {
		a, b = max(a, lo), min(b, hi)
		if b <= a {
			return 0
		}
		return b - a
	}
	var best *sym
	var bestN uint64
	i := sort.Search(len(im.data), func(i int) bool { return im.data[i].addr >= hi }) - 1
	for ; i >= 0 && im.maxEnd[i] > lo; i-- {
		s := &im.data[i]
		n := overlap(s.addr, s.end)
		if n == 0 {
			continue
		}
		// the program's variables before the Go runtime's, then by bytes
		if best == nil || (best.goRuntime && !s.goRuntime) ||
			(best.goRuntime == s.goRuntime && (n > bestN || n == bestN && s.addr < best.addr)) {
			best, bestN = s, n
		}
	}
	// the bytes of the page no symbol names (string literals, padding)
	// against the best symbol's
	var named uint64
	for k := i + 1; k < len(im.data) && im.data[k].addr < hi; k++ {
		named += overlap(im.data[k].addr, im.data[k].end)
	}
	// Unnamed read-only bytes are string literals and .LC constants;
	// unnamed writable bytes are padding (statics have local symbols),
	// and the linker's tables are not the program's data: only the first
	// weigh against a variable.
	var inSecs uint64
	for k := range im.secs {
		if sec := &im.secs[k]; sec.rodata && !sec.linker {
			inSecs += overlap(sec.addr, sec.end)
		}
	}
	name := ""
	if best != nil && (bestN >= inSecs-min(inSecs, named) || bestN >= trace.PageSize/2) {
		name = best.name
	} else {
		var sec *section
		var secN uint64
		for k := range im.secs {
			if n := overlap(im.secs[k].addr, im.secs[k].end); n > secN {
				sec, secN = &im.secs[k], n
			}
		}
		switch {
		case sec == nil:
			name = filepath.Base(im.path)
		case sec.rodata:
			name = "const"
		default:
			name = sec.name
		}
	}
	if !im.main {
		name = filepath.Base(im.path) + ":" + name
	}
	return name
}

// instrumentationPrefix starts the names of the data the presets add to
// a rewritten object (site tables, slots): not the program's variables,
// so they never name a page the program touched.
const instrumentationPrefix = "__vpt_"

// linkerTable tells the sections the linker and loader fill (GOT, PLT
// GOT, dynamic section, constructor arrays, symbol and relocation tables,
// unwind tables) from those holding the program's own data.
func linkerTable(s *elf.Section) bool {
	switch s.Type {
	case elf.SHT_DYNAMIC, elf.SHT_INIT_ARRAY, elf.SHT_FINI_ARRAY, elf.SHT_PREINIT_ARRAY,
		elf.SHT_DYNSYM, elf.SHT_HASH, elf.SHT_GNU_HASH, elf.SHT_RELA, elf.SHT_REL, elf.SHT_NOTE,
		elf.SHT_GNU_VERSYM, elf.SHT_GNU_VERDEF, elf.SHT_GNU_VERNEED:
		return true
	}
	switch {
	case s.Name == ".got", s.Name == ".got.plt", s.Name == ".interp", s.Name == ".dynstr",
		s.Name == ".tm_clone_table", s.Name == ".gcc_except_table",
		strings.HasPrefix(s.Name, ".eh_frame"):
		return true
	}
	return false
}

// funcAt returns the function holding addr, or nil. A symbol without a
// size (hand-written assembly) holds what follows it up to the next one.
func (im *image) funcAt(addr uint64) *sym {
	i := sort.Search(len(im.funcs), func(i int) bool { return im.funcs[i].addr > addr }) - 1
	for k := i; k >= 0 && k > i-8; k-- { // nested or aliased symbols: look a few back
		if f := &im.funcs[k]; addr < f.end {
			return f
		}
	}
	if i >= 0 && im.funcs[i].end == im.funcs[i].addr {
		return &im.funcs[i]
	}
	return nil
}

// line returns "file:line" for a link address, from DWARF line tables
// (read once per image), or "".
func (im *image) line(addr uint64) string {
	im.dwarfOnce.Do(func() {
		d, err := im.f.DWARF()
		if err != nil {
			return
		}
		rd := d.Reader()
		for {
			e, err := rd.Next()
			if err != nil || e == nil {
				break
			}
			if e.Tag != dwarf.TagCompileUnit {
				rd.SkipChildren()
				continue
			}
			lr, err := d.LineReader(e)
			if err != nil || lr == nil {
				continue
			}
			var le dwarf.LineEntry
			for lr.Next(&le) == nil {
				pos := ""
				if !le.EndSequence && le.File != nil {
					pos = fmt.Sprintf("%s:%d", filepath.Base(le.File.Name), le.Line)
				}
				im.lines = append(im.lines, lineRow{le.Address, pos})
			}
			rd.SkipChildren()
		}
		slices.SortStableFunc(im.lines, func(a, b lineRow) int { return cmp.Compare(a.addr, b.addr) })
	})
	i := sort.Search(len(im.lines), func(i int) bool { return im.lines[i].addr > addr }) - 1
	if i < 0 {
		return ""
	}
	return im.lines[i].pos
}
