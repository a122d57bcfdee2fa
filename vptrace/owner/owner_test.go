package owner

import (
	"bytes"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hijack/vptrace/trace"
)

// build compiles testdata/globals.cc and returns the binary's path.
func build(t *testing.T, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("no g++")
	}
	out := filepath.Join(t.TempDir(), "globals")
	args := append([]string{"-O1", "-o", out, "testdata/globals.cc"}, flags...)
	if b, err := exec.Command("g++", args...).CombinedOutput(); err != nil {
		t.Fatalf("g++ %v: %v\n%s", args, err, b)
	}
	return out
}

// nmAddrs is the oracle for symbol addresses: nm's (link) addresses by
// mangled name.
func nmAddrs(t *testing.T, bin string) map[string]uint64 {
	out, err := exec.Command("nm", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 {
			v, _ := strconv.ParseUint(f[0], 16, 64)
			m[f[2]] = v
		}
	}
	return m
}

// load maps bin's PT_LOAD segments at bias the way ld.so does (file
// pages, then the anonymous rest of .bss) and adds the usual others.
func load(t *testing.T, bin string, bias uint64) *trace.Trace {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const pg = trace.PageSize
	var ms []trace.Mapping
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		start := bias + p.Vaddr&^(pg-1)
		fileEnd := bias + (p.Vaddr+p.Filesz+pg-1)&^(pg-1)
		ms = append(ms, trace.Mapping{Start: start, End: fileEnd, Offset: p.Off &^ (pg - 1), Prot: trace.ProtRead, Path: bin})
		if memEnd := bias + (p.Vaddr+p.Memsz+pg-1)&^(pg-1); memEnd > fileEnd {
			ms = append(ms, trace.Mapping{Start: fileEnd, End: memEnd, Prot: trace.ProtRead | trace.ProtWrite})
		}
	}
	ms = append(ms,
		trace.Mapping{Start: 0x10000000, End: 0x10100000, Path: "[heap]"},
		trace.Mapping{Start: 0x20000000, End: 0x20010000},
		trace.Mapping{Start: 0x7ff000000000, End: 0x7ff000021000, Path: "[stack]"})
	return &trace.Trace{Header: &trace.Header{PID: 77, Exe: bin}, Maps: []*trace.Maps{{Why: trace.MapsStart, Maps: ms}}}
}

func TestOwnersOfGlobals(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
		bias  uint64
	}{
		{"pie", []string{"-fPIE", "-pie", "-g"}, 0x555555554000},
		{"no-pie", []string{"-fno-pie", "-no-pie"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := build(t, c.flags...)
			syms := nmAddrs(t, bin)
			r := New(load(t, bin, c.bias))
			page := func(sym string, off uint64) uint64 {
				a, ok := syms[sym]
				if !ok {
					t.Fatalf("nm: no %s", sym)
				}
				return (a + c.bias + off) >> trace.PageShift
			}
			for _, w := range []struct {
				page       uint64
				seg, owner string
			}{
				{page("_ZN4grid5cellsE", 8192), SegGlobal, "grid::cells"},
				{page("_ZL6counts", 4096), SegGlobal, "counts"},
				{page("weights", 4096), SegGlobal, "weights"},
				{page("_ZZ10make_thingE3buf", 4096), SegGlobal, "make_thing::buf"},
				{0x10000, SegHeap, "unknown"},
				{0x20000, SegMmap, "anon"},
				{0x7ff000010, SegStack, "stack:77"},
				{0x30000, SegUnknown, "unknown"},
			} {
				if o := r.Of(w.page, nil); o.Segment != w.seg || o.Name != w.owner {
					t.Errorf("page %#x: %s %s, want %s %s", w.page, o.Segment, o.Name, w.seg, w.owner)
				}
			}
			// the string literal: read-only data no symbol names
			f, _ := elf.Open(bin)
			ro := f.Section(".rodata")
			data, _ := ro.Data()
			defer f.Close()
			i := bytes.Index(data, []byte("a string literal"))
			if o := r.Of((ro.Addr+uint64(i)+c.bias)>>trace.PageShift, nil); o.Name != "const" || o.Segment != SegGlobal {
				t.Errorf("string literal: %+v", o)
			}
			// a variable sharing its page with the linker's tables (the
			// GOT, the dynamic section) is the page's owner: the program
			// addresses the variable, not the tables
			if got := f.Section(".got.plt"); got != nil {
				pg := (got.Addr + got.Size - 1 + c.bias) >> trace.PageShift // its last page, .data follows
				var vars []string
				es, _ := f.Symbols()
				for _, s := range es {
					if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Size > 0 && s.Section != elf.SHN_UNDEF &&
						(s.Value+c.bias)>>trace.PageShift <= pg && (s.Value+s.Size-1+c.bias)>>trace.PageShift >= pg {
						vars = append(vars, Demangle(s.Name))
					}
				}
				if o := r.Of(pg, nil); len(vars) > 0 && !slices.Contains(vars, o.Name) {
					t.Errorf("page of .got.plt: owner %q, want one of the variables on it %v", o.Name, vars)
				} else {
					t.Logf("page of .got.plt: %q; variables on it %v", o.Name, vars)
				}
			}
			// allocation sites are return addresses: the call's function
			mt := syms["make_thing"] + c.bias
			if s := r.Site(mt + 9); s != "make_thing+0x9" {
				t.Errorf("site %s, want make_thing+0x9", s)
			}
			if s := r.Site(mt); !strings.HasPrefix(s, "main+") && s != "make_thing+0x0" && !strings.Contains(s, "+0x") {
				t.Errorf("site at a function's first byte: %s", s)
			}
			line := r.Line(mt + 9)
			if c.name == "pie" && !regexp.MustCompile(`^globals\.cc:\d+$`).MatchString(line) {
				t.Errorf("line %q, want globals.cc:N (built with -g)", line)
			}
			if c.name == "no-pie" && line != "" {
				t.Errorf("line %q without -g", line)
			}
			if p := r.Problems(); len(p) > 0 {
				t.Errorf("problems: %v", p)
			}
		})
	}
}

func TestOwnersOfRegions(t *testing.T) {
	r := New(&trace.Trace{Header: &trace.Header{PID: 5}})
	for _, c := range []struct {
		g          trace.Region
		seg, owner string
	}{
		{trace.Region{Kind: trace.RegionHeap, Alloc: trace.AllocCalloc, Site: 0x1234}, SegHeap, "calloc@0x1234"},
		{trace.Region{Kind: trace.RegionStack, TID: 9}, SegStack, "stack:9"},
		{trace.Region{Kind: trace.RegionTLS, TID: 9}, SegTLS, "tls:9"},
		{trace.Region{Kind: trace.RegionMmap, Alloc: trace.AllocMmap, Flags: trace.AllocFile, Path: "/data/x"}, SegMmap, "/data/x"},
		{trace.Region{Kind: trace.RegionMmap, Alloc: trace.AllocMmap, Site: 0x99}, SegMmap, "mmap@0x99"},
	} {
		if o := r.Of(1, &c.g); o.Segment != c.seg || o.Name != c.owner || o.Region != &c.g {
			t.Errorf("%+v: %+v, want %s %s", c.g, o, c.seg, c.owner)
		}
	}
	if r.HasMaps() {
		t.Errorf("maps without a MAPS chunk")
	}
	// a mapped file that is gone: named by the mapping, and said
	gone := filepath.Join(t.TempDir(), "gone.so")
	r = New(&trace.Trace{Header: &trace.Header{}, Maps: []*trace.Maps{{Maps: []trace.Mapping{{Start: 0x1000, End: 0x2000, Path: gone}}}}})
	if o := r.Of(1, nil); o.Segment != SegMmap || o.Name != gone {
		t.Errorf("missing file: %+v", o)
	}
	if p := r.Problems(); len(p) != 1 || !strings.Contains(p[0], gone) {
		t.Errorf("problems %v", p)
	}
}

// TestDataName: which name a page of an image's data gets, on made-up
// layouts: a variable against string literals, padding and the linker's
// tables sharing its page.
func TestDataName(t *testing.T) {
	const p = trace.PageSize
	got := section{name: ".got.plt", addr: 0x1000, end: 0x1040, linker: true}
	data := section{name: ".data", addr: 0x1040, end: 0x3000}
	ro := section{name: ".rodata", addr: 0x5000, end: 0x6000, rodata: true}
	for _, c := range []struct {
		name string
		syms []sym
		secs []section
		page uint64
		want string
	}{
		{"small variable, GOT and padding", []sym{{"flag", 0x1040, 0x1048, false}}, []section{got, data}, 0x1000, "flag"},
		{"the bigger of two variables", []sym{{"a", 0x1040, 0x1080, false}, {"b", 0x1080, 0x1800, false}}, []section{got, data}, 0x1000, "b"},
		{"a variable across pages", []sym{{"big", 0x1040, 0x2800, false}}, []section{got, data}, 0x2000, "big"},
		{"no symbol: the section", nil, []section{got, data}, 0x1000, ".data"},
		{"only the GOT", nil, []section{got}, 0x1000, ".got.plt"},
		{"string literals outweigh a small constant", []sym{{"k", 0x5000, 0x5010, false}}, []section{ro}, 0x5000, "const"},
		{"the program's variable before the Go runtime's", []sym{{"internal/strconv.pow10Tab", 0x1000, 0x1800, true}, {"table", 0x1860, 0x9000, false}}, []section{data}, 0x1000, "table"},
		{"only the Go runtime's", []sym{{"runtime.x", 0x1000, 0x1800, true}}, []section{data}, 0x1000, "runtime.x"},
		{"a table outweighs string literals", []sym{{"tab", 0x5000, 0x5900, false}}, []section{ro}, 0x5000, "tab"},
	} {
		im := &image{main: true, data: c.syms, secs: c.secs}
		for i, s := range im.data {
			im.maxEnd = append(im.maxEnd, s.end)
			if i > 0 {
				im.maxEnd[i] = max(im.maxEnd[i], im.maxEnd[i-1])
			}
		}
		if got := im.dataName(c.page &^ (p - 1)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestOfInstruction: a trace without owners names pages by the site's view.
func TestOfInstruction(t *testing.T) {
	for _, c := range []struct {
		known     bool
		seg       trace.Segment
		sym, want string
		wantSeg   string
	}{
		{true, trace.SegGlobal, "table", "table", SegGlobal},
		{true, trace.SegGlobal, "", "unknown", SegGlobal},
		{true, trace.SegStack, "", "unknown", SegStack},
		{true, trace.SegTLS, "", "unknown", SegTLS},
		{true, trace.SegUnknown, "", "unknown", SegUnknown}, // a pointer: never heap for what may not be
		{false, trace.SegGlobal, "table", "unknown", SegUnknown},
	} {
		if o := OfInstruction(c.known, c.seg, c.sym); o.Name != c.want || o.Segment != c.wantSeg {
			t.Errorf("%v %v %q: %s %s, want %s %s", c.known, c.seg, c.sym, o.Segment, o.Name, c.wantSeg, c.want)
		}
	}
}
