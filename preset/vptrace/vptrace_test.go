package vptrace_test

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"hijack/internal/testutil"
	"hijack/preset"
	"hijack/preset/vptrace"
	"hijack/rewrite"
	"hijack/rules"
	"hijack/vptrace/abi"
	"hijack/vptrace/trace"
)

// runtimeArchive builds bin/libvptrace.a into a temporary directory once.
var runtimeDir string

func runtimeArchive(t *testing.T) string {
	t.Helper()
	if runtimeDir == "" {
		dir, err := os.MkdirTemp("", "vptrace-rt-")
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("sh", "../../vptrace/runtime/build.sh", dir).CombinedOutput(); err != nil {
			t.Fatalf("building the runtime: %v\n%s", err, out)
		}
		runtimeDir = dir
	}
	return filepath.Join(runtimeDir, "libvptrace.a")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if runtimeDir != "" {
		os.RemoveAll(runtimeDir)
	}
	os.Exit(code)
}

func instrument(t *testing.T, obj string, settings ...string) string {
	t.Helper()
	rf, err := rules.Default(preset.Set{vptrace.Preset{}}.Registry(), "vptrace", settings...)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := rewrite.Rewrite(filepath.Base(obj), data, rf, preset.Set{vptrace.Preset{}}, func(w string) { t.Logf("warning: %s", w) })
	if err != nil {
		t.Fatal(err)
	}
	p := strings.TrimSuffix(obj, ".o") + ".inst.o"
	os.WriteFile(p, out, 0o644)
	return p
}

func relocTypes(t *testing.T, obj string) map[elf.R_X86_64]int {
	f, err := elf.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := make(map[elf.R_X86_64]int)
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA {
			continue
		}
		d, _ := s.Data()
		for k := 0; k+24 <= len(d); k += 24 {
			m[elf.R_X86_64(binary.LittleEndian.Uint64(d[k+8:])&0xffffffff)]++
		}
	}
	return m
}

// vptraceData returns the contents of an instrumented object's .vptrace
// section: its descriptor, site records and strings.
func vptraceData(t *testing.T, obj string) []byte {
	t.Helper()
	f, err := elf.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sec := f.Section(".vptrace")
	if sec == nil {
		t.Fatalf("%s: no .vptrace section", obj)
	}
	data, err := sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// descriptor returns the vptrace descriptor of an instrumented object.
func descriptor(t *testing.T, obj string) abi.Object {
	t.Helper()
	d, err := abi.UnmarshalObject(vptraceData(t, obj))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSweepsExact runs kernels whose loops become sweeps (and some that
// cannot) and compares the traced pages with the pages the driver knows
// they touched: none missing, none extra.
//
// The kernels are linked into the program with the runtime archive, and
// (shared) built -fPIC into a shared library (tls auto: indirect) that
// depends on the shared runtime.
func TestSweepsExact(t *testing.T) {
	testutil.Need(t, "gcc")
	rt := runtimeArchive(t)
	for _, opt := range []string{"-O0", "-O1", "-O2", "-O3", "-O0/shared", "-O2/shared", "-O3/shared"} {
		t.Run(opt, func(t *testing.T) {
			opt, shared := strings.CutSuffix(opt, "/shared")
			dir := t.TempDir()
			drv := testutil.Compile(t, dir, "gcc", "testdata/sweeps_main.c", "-O2")
			exe := filepath.Join(dir, "app")
			if shared {
				inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/sweeps.c", opt, "-fPIC"))
				so := filepath.Join(dir, "libsweeps.so")
				testutil.Link(t, "gcc", so, "-shared", inst, "-L"+runtimeDir, "-lvptrace", "-Wl,-rpath,"+runtimeDir)
				testutil.Link(t, "gcc", exe, drv, so, "-Wl,-rpath,"+dir)
			} else {
				inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/sweeps.c", opt))
				testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
			}
			out, vpt := runTraced(t, exe)
			// (the kernels' own constants, which vectorised code loads
			// from .rodata.cst*, are real accesses the driver does not
			// know of)
			tr, want := exactPages(t, out, vpt, constantsOnly)
			sweeps, dyn := 0, 0
			spilled, spilledSweeps := 0, 0
			byFunc := map[string]int{} // sweep sites
			for _, o := range tr.Objects {
				for _, r := range o.Sites {
					if r.Kind&trace.KindRange != 0 {
						byFunc[o.Str(r.Func)]++
					}
					if o.Str(r.Func) == "spilled" && r.Size == 4 {
						spilled++
						if r.Kind&trace.KindRange != 0 {
							spilledSweeps++
						}
					}
					if r.Kind&trace.KindRange != 0 {
						sweeps++
					}
					if r.Kind&trace.KindDynStep != 0 {
						dyn++
					}
				}
			}
			// fill and backwards are sweeps once the compiler keeps
			// the index in a register.
			if opt != "-O0" && sweeps < 2 {
				t.Errorf("%d sweep sites, want at least 2", sweeps)
			}
			// strided's step is its stride parameter, in a register
			if opt != "-O0" && dyn < 1 {
				t.Errorf("%d sweep sites with a register step, want at least 1", dyn)
			}
			// spilled's loop reads 12 arrays, some through pointers it
			// loads from the stack in every iteration: all sweeps
			if (opt == "-O1" || opt == "-O2") && (spilled < 12 || spilledSweeps != spilled) {
				t.Errorf("spilled: %d sweep sites of %d int accesses, want all of at least 12", spilledSweeps, spilled)
			}
			// loops that leave through taken branches, over words: their
			// exit code goes on those paths (takenExitSize); over bytes
			// (mismatch) they keep their checks
			if opt != "-O0" && (byFunc["wmismatch"] != 2 || byFunc["search"] < 1 || byFunc["early_exit"] != 1 || byFunc["mismatch"] != 0) {
				t.Errorf("sweep sites by function %v: want wmismatch 2, search 1 or more, early_exit 1, mismatch 0", byFunc)
			}
			t.Logf("%d pages, all traced, none extra; %d sweep sites, %d with a register step; by function %v", want, sweeps, dyn, byFunc)
		})
	}
}

// TestTLSModel: an object that can only go into an executable uses
// local-exec TLS for its slots; one that may go into a shared library uses
// indirect (one initial-exec word: ABI.md), unless the rules ask for a
// model. Whatever the model, the object reaches the runtime through the
// GOT only (no PLT, whose lazy-binding resolver clobbers registers), and
// unregisters itself from a last destructor. The PIC objects link into a
// shared library that depends on the shared runtime and run.
func TestTLSModel(t *testing.T) {
	testutil.Need(t, "gcc")
	runtimeArchive(t)
	dir := t.TempDir()
	exeObj := testutil.CompileString(t, dir, "gcc", "g.c", "extern long g[]; long get(long i) { long s = 0; for (long k = 0; k < i; k++) s += g[k]; return s; }\n", "-O2")
	pic := testutil.Compile(t, dir, "gcc", "testdata/sweeps.c", "-O2", "-fPIC")
	drv := testutil.Compile(t, dir, "gcc", "testdata/sweeps_main.c", "-O2")
	for _, c := range []struct {
		name     string
		obj      string
		settings []string
		tls      elf.R_X86_64 // the slots' relocation: TPOFF32 or GOTTPOFF
		flags    uint32       // descriptor flags (bit 0 initial-exec, bit 2 indirect)
		word     bool         // the slots symbol is one word
	}{
		{"executable", exeObj, nil, elf.R_X86_64_TPOFF32, 0, false},
		{"PIC", pic, nil, elf.R_X86_64_GOTTPOFF, 5, true},
		{"PIC initial-exec", pic, []string{"tls=initial-exec"}, elf.R_X86_64_GOTTPOFF, 1, false},
		{"PIC indirect", pic, []string{"tls=indirect"}, elf.R_X86_64_GOTTPOFF, 5, true},
		{"PIC local-exec", pic, []string{"tls=local-exec"}, elf.R_X86_64_TPOFF32, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cd := t.TempDir()
			obj := filepath.Join(cd, "k.o")
			data, err := os.ReadFile(c.obj)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(obj, data, 0o644)
			inst := instrument(t, obj, c.settings...)
			f, err := elf.Open(inst)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			syms, _ := f.Symbols()
			// The slots' TLS model, and the inline cache probe's
			// initial-exec access to the runtime's TLS whatever it is
			// (the runtime may be a shared library).
			r := relocTypes(t, inst)
			probeTLS := symRelocs(t, f, syms, func(name string) bool { return name == "vpt_probe_tls" })
			if len(probeTLS) != 1 || probeTLS[elf.R_X86_64_GOTTPOFF] == 0 {
				t.Errorf("the probe's references to vpt_probe_tls: %v, want R_X86_64_GOTTPOFF only", probeTLS)
			}
			r[elf.R_X86_64_GOTTPOFF] -= probeTLS[elf.R_X86_64_GOTTPOFF]
			other := elf.R_X86_64_GOTTPOFF + elf.R_X86_64_TPOFF32 - c.tls
			if r[c.tls] == 0 || r[other] != 0 {
				t.Errorf("relocations %v (but the probe's), want %v and no %v", r, c.tls, other)
			}
			d := descriptor(t, inst)
			// (FlagPacked says only whether the site table was worth
			// compressing: not the TLS model; every object has its
			// epoch word, whose field FlagSlots' descriptor has, and
			// its sites' kinds)
			if all := abi.FlagSlots | abi.FlagEpoch | abi.FlagKinds; d.Flags&all != all {
				t.Errorf("descriptor flags %#x, want FlagSlots, FlagEpoch and FlagKinds", d.Flags)
			}
			// the kinds after the packed table (or the strings), one
			// byte a site, as in the records
			vdata := vptraceData(t, inst)
			at := abi.ObjectStrsRelOff + int(d.StrsRel) + int(d.NStrs)
			if d.Flags&abi.FlagPacked != 0 {
				at = abi.ObjectPackedRelOff + int(d.PackedRel) + int(d.PackedLen)
			}
			if at+int(d.NSites) != len(vdata) || d.NSites == 0 {
				t.Errorf("the kinds at %d, %d of them, in %d bytes of .vptrace", at, d.NSites, len(vdata))
			} else {
				for k := 0; k < int(d.NSites); k++ {
					rec, err := abi.UnmarshalSite(vdata[abi.ObjectSitesRelOff+int(d.SitesRel)+abi.SiteSize*k:])
					if err != nil || vdata[at+k] != byte(rec.Kind) {
						t.Errorf("site %d: kind %#x, its record's %#x (%v)", k, vdata[at+k], rec.Kind, err)
						break
					}
				}
			}
			if d.Flags&^(abi.FlagPacked|abi.FlagSlots|abi.FlagEpoch|abi.FlagKinds) != abi.Flags(c.flags) {
				t.Errorf("descriptor flags %#x, want %#x", d.Flags, c.flags)
			}
			nsites := d.Slots()
			for _, sym := range syms {
				if strings.HasPrefix(sym.Name, "__vpt_slots_") {
					want := 8 * uint64(max(nsites, 1))
					if c.word {
						want = 8
					}
					if sym.Size != want {
						t.Errorf("%s: %d bytes, want %d (%d slots)", sym.Name, sym.Size, want, nsites)
					}
				}
			}
			if f.Section(".fini_array.00000") == nil {
				t.Error("no .fini_array.00000: the object never unregisters")
			}
			calls := runtimeRelocs(t, f, syms)
			for typ, n := range calls {
				if typ != elf.R_X86_64_GOTPCRELX {
					t.Errorf("%d references to the runtime by %v, want GOTPCRELX only (never the PLT)", n, typ)
				}
			}
			if calls[elf.R_X86_64_GOTPCRELX] == 0 {
				t.Error("no call into the runtime")
			}
			if c.obj != pic || c.tls == elf.R_X86_64_TPOFF32 {
				return
			}
			so := filepath.Join(cd, "libsweeps.so")
			testutil.Link(t, "gcc", so, "-shared", inst, "-L"+runtimeDir, "-lvptrace", "-Wl,-rpath,"+runtimeDir)
			exe := filepath.Join(cd, "app")
			testutil.Link(t, "gcc", exe, drv, so, "-Wl,-rpath,"+cd)
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), "VPTRACE_OUT="+filepath.Join(cd, "so.vpt"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			tr, err := trace.Load(filepath.Join(cd, "so.vpt"))
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Threads) == 0 {
				t.Fatal("no thread traced from the shared library")
			}
		})
	}
}

// runtimeRelocs counts, by type, the relocations of f that refer to the
// runtime's entry points (vpt_*, undefined in the object).
func runtimeRelocs(t *testing.T, f *elf.File, syms []elf.Symbol) map[elf.R_X86_64]int {
	t.Helper()
	// (the probe's data references are not calls: TestTLSModel checks them)
	return symRelocs(t, f, syms, func(name string) bool {
		return strings.HasPrefix(name, "vpt_") && name != "vpt_probe_tls" && name != "vpt_probe_hot"
	})
}

// symRelocs counts by type the relocations of f against the undefined
// symbols whose names want accepts.
func symRelocs(t *testing.T, f *elf.File, syms []elf.Symbol, want func(string) bool) map[elf.R_X86_64]int {
	t.Helper()
	m := map[elf.R_X86_64]int{}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA {
			continue
		}
		d, _ := s.Data()
		for k := 0; k+24 <= len(d); k += 24 {
			info := binary.LittleEndian.Uint64(d[k+8:])
			i := int(info>>32) - 1 // (Symbols drops the null symbol)
			if i < 0 || i >= len(syms) {
				continue
			}
			if sym := syms[i]; want(sym.Name) && sym.Section == elf.SHN_UNDEF {
				m[elf.R_X86_64(info&0xffffffff)]++
			}
		}
	}
	return m
}

// constantsOnly reports whether every site that touched the page reads a
// read-only data section of the kernel.
func constantsOnly(tr *trace.Trace, pg *trace.Page) bool {
	for _, sc := range pg.Sites {
		site := tr.Site(sc.Site)
		if site.Seg != trace.SegGlobal || !strings.HasPrefix(site.Symbol, ".rodata") && !strings.HasPrefix(site.Symbol, ".LC") {
			return false
		}
	}
	return len(pg.Sites) > 0
}

// exactPages compares the pages a driver printed ("page 0x...", in out)
// with those of the trace at vpt, but for pages skip says to leave out
// (nil: none), and fails the test where one is missing or extra. It
// returns the trace and how many pages the driver printed.
func exactPages(t *testing.T, out []byte, vpt string, skip func(*trace.Trace, *trace.Page) bool) (*trace.Trace, int) {
	t.Helper()
	want := map[uint64]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		var p uint64
		if _, err := fmt.Sscanf(line, "page 0x%x", &p); err == nil {
			want[p>>12] = true
		}
	}
	tr, err := trace.Load(vpt)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64]bool{}
	for _, th := range tr.Threads {
		for p, pg := range th.Pages {
			if skip == nil || !skip(tr, pg) {
				got[p] = true
			}
		}
	}
	var missing, extra []string
	for p := range want {
		if !got[p] {
			missing = append(missing, hex(p))
		}
	}
	for p := range got {
		if !want[p] {
			extra = append(extra, hex(p))
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("%d pages expected, %d traced: missing %v, extra %v", len(want), len(got), head(missing), head(extra))
	}
	return tr, len(want)
}

func hex(page uint64) string { return fmt.Sprintf("%#x", page<<12) }

func head(s []string) []string {
	if len(s) > 8 {
		return append(s[:8:8], "...")
	}
	return s
}

// TestPerRuleParams: two vptrace rules for different functions of one
// object each get their own parameters. exact is per site; the TLS model is
// one per object, so an explicit tls wins over auto and two explicit ones
// that differ are an error naming both rules.
func TestPerRuleParams(t *testing.T) {
	testutil.Need(t, "gcc")
	dir := t.TempDir()
	obj := testutil.CompileString(t, dir, "gcc", "two.c", `
long a[1000], b[1000];
long f1(long n) { long s = 0; for (long i = 0; i < n; i++) s += a[i]; return s; }
long f2(long n) { long s = 0; for (long i = 0; i < n; i++) s += b[i * 7 % 1000]; return s; }
`, "-O2", "-fno-PIC", "-fno-pie")
	const head = "version: 1\nrules:\n  - preset: vptrace\n    functions: [f1]\n    params: {tls: initial-exec, exact: true}\n  - preset: vptrace\n    functions: [f2]\n"
	rewriteWith := func(yaml string) (string, error) {
		rf, err := rules.Parse("r.yaml", []byte(yaml), preset.Set{vptrace.Preset{}}.Registry())
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(obj)
		out, _, err := rewrite.Rewrite("two.o", data, rf, preset.Set{vptrace.Preset{}}, nil)
		if err != nil {
			return "", err
		}
		p := filepath.Join(dir, "two.inst.o")
		os.WriteFile(p, out, 0o644)
		return p, nil
	}
	inst, err := rewriteWith(head)
	if err != nil {
		t.Fatal(err)
	}
	if r := relocTypes(t, inst); r[elf.R_X86_64_GOTTPOFF] == 0 || r[elf.R_X86_64_TPOFF32] != 0 {
		t.Errorf("rule 1 asked for initial-exec: relocations %v, want GOTTPOFF only (rule 2's auto follows rule 1)", r)
	}
	exact := siteExactness(t, inst)
	if exact["f1"][true] == 0 || exact["f1"][false] != 0 || exact["f2"][true] != 0 || exact["f2"][false] == 0 {
		t.Errorf("exact sites per function %v: want f1 all exact, f2 none", exact)
	}
	// The same with the auto rule first: its functions are instrumented
	// first, and must already use the model rule 2 asks for.
	inst, err = rewriteWith("version: 1\nrules:\n  - preset: vptrace\n    functions: [f2]\n  - preset: vptrace\n    functions: [f1]\n    params: {tls: initial-exec}\n")
	if err != nil {
		t.Fatal(err)
	}
	if r := relocTypes(t, inst); r[elf.R_X86_64_GOTTPOFF] == 0 || r[elf.R_X86_64_TPOFF32] != 0 {
		t.Errorf("rule 2 asked for initial-exec: relocations %v, want GOTTPOFF only", r)
	}
	_, err = rewriteWith(head + "    params: {tls: local-exec}\n")
	if err == nil || !strings.Contains(err.Error(), "r.yaml:3: rule 1 asks for tls: initial-exec and r.yaml:6: rule 2 for tls: local-exec") {
		t.Errorf("conflicting TLS models: error %v", err)
	}
}

// siteExactness counts, per function, the sites of an instrumented
// object's site table with and without the exact kind bit (ABI.md).
func siteExactness(t *testing.T, obj string) map[string]map[bool]int {
	d := vptraceData(t, obj)
	le := binary.LittleEndian
	n := int(le.Uint32(d[8:]))
	sites := 16 + int(le.Uint32(d[16:]))
	strs := 20 + int(le.Uint32(d[20:]))
	out := map[string]map[bool]int{}
	for k := 0; k < n; k++ {
		r := d[sites+32*k:]
		name := d[strs+int(le.Uint32(r)):]
		name = name[:strings.IndexByte(string(name), 0)]
		if out[string(name)] == nil {
			out[string(name)] = map[bool]int{}
		}
		out[string(name)][r[16]&4 != 0]++
	}
	return out
}
