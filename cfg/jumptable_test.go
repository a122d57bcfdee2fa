package cfg_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/elfobj"
	"hijack/ibr"
	"hijack/internal/testutil"
	"hijack/preset"
	"hijack/preset/clobber"
	"hijack/rewrite"
	"hijack/rules"
)

// build is a compiler and its flags.
type build struct {
	cc    string
	flags []string
}

func (b build) String() string { return b.cc + strings.Join(b.flags, "") }

// nonPIE reports whether objects of b must be linked with -no-pie.
func (b build) nonPIE() bool { return slices.Contains(b.flags, "-fno-pie") }

// clobbered links obj as it is and rewritten by the clobber preset (which
// destroys every register and flag liveness calls dead before every
// instruction) with two seeds, runs the programs and fails the test when
// a rewritten one prints something else. It returns what the original
// printed.
func clobbered(t *testing.T, b build, obj string) string {
	t.Helper()
	dir := filepath.Dir(obj)
	base := strings.TrimSuffix(filepath.Base(obj), ".o")
	var ld []string
	if b.nonPIE() {
		ld = append(ld, "-no-pie")
	}
	exe := filepath.Join(dir, base)
	testutil.Link(t, b.cc, exe, append([]string{obj}, ld...)...)
	want := testutil.Run(20*time.Second, exe)
	if want.Exit != 0 || want.TimedOut {
		t.Fatalf("%s: the original program fails: %+v", base, want)
	}
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []string{"1", "2"} {
		rf, err := rules.Default(preset.Set{clobber.Preset{}}.Registry(), "clobber", "seed="+seed)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := rewrite.Rewrite(obj, data, rf, preset.Set{clobber.Preset{}}, nil)
		if err != nil {
			t.Fatalf("%s: clobber: %v", base, err)
		}
		rw := filepath.Join(dir, base+".clobber"+seed+".o")
		if err := os.WriteFile(rw, out, 0o644); err != nil {
			t.Fatal(err)
		}
		rexe := filepath.Join(dir, base+".clobber"+seed)
		testutil.Link(t, b.cc, rexe, append([]string{rw}, ld...)...)
		if got := testutil.Run(20*time.Second, rexe); got != want {
			t.Errorf("%s, clobber seed %s: the rewritten program prints\n%s(exit %d, timed out %v)\nthe original\n%s",
				base, seed, got.Stdout+got.Stderr, got.Exit, got.TimedOut, want.Stdout)
		}
	}
	return want.Stdout
}

// checked verifies every table of p and fails the test for tables the
// independent decoder could not check.
func checked(t *testing.T, name string, p *cfg.Program) tally {
	t.Helper()
	n := verifyTables(t, name, p)
	if n.unchecked > 0 {
		t.Errorf("%s: %d of %d tables not checked", name, n.unchecked, n.tables)
	}
	return n
}

// baseLoads returns the instructions of g that load the address of one
// of its tables (the tables' Base), in address order.
func baseLoads(g *cfg.Graph) []int {
	var out []int
	for _, jt := range g.Tables {
		if jt.Base >= 0 && !slices.Contains(out, jt.Base) {
			out = append(out, jt.Base)
		}
	}
	slices.Sort(out)
	return out
}

// TestDispatchHoisted is the minimal reproduction of issue 10's first
// silent miscompile (pcre2's find_minlength, gcc 12 -O2 -fPIC):
// testdata/src/dispatch_hoisted.c has two switches in a loop whose
// table bases gcc hoists before the loop, table A's first, so that the
// table address loaded nearest before dispatch A is table B's. Each
// dispatch must get its own table (checked against the relocations by
// decodeTable), and the program rewritten with clobber must print what
// the original prints (it crashed when dispatch A had table B's targets).
func TestDispatchHoisted(t *testing.T) {
	builds := []build{
		{"gcc", []string{"-O2", "-fPIC"}}, {"gcc", []string{"-O2"}}, {"gcc", []string{"-O3"}}, {"gcc", []string{"-Os"}},
		{"gcc", []string{"-O2", "-fno-pie"}}, {"clang", []string{"-O2", "-fPIC"}}, {"clang", []string{"-O0"}},
	}
	for _, b := range builds {
		t.Run(b.String(), func(t *testing.T) {
			t.Parallel()
			obj := testutil.Compile(t, t.TempDir(), b.cc, "../testdata/src/dispatch_hoisted.c", b.flags...)
			p := program(t, obj)
			checked(t, filepath.Base(obj), p)
			g := graph(t, p, "minlen")
			for _, ij := range g.Indirect {
				t.Errorf("jump at 0x%x unresolved: %s", g.Sec.Insts[ij.Inst].Off, ij.Reason)
			}
			if len(g.Tables) != 2 {
				t.Errorf("%d jump tables, want 2", len(g.Tables))
			}
			if b.cc == "gcc" && !b.nonPIE() && len(g.Tables) == 2 {
				// The shape of the miscompile: both bases loaded before
				// the first dispatch, the other table's last.
				first := g.Tables[0]
				loads := baseLoads(g)
				if len(loads) != 2 || loads[1] > first.Jump || first.Base != loads[0] {
					t.Errorf("gcc did not hoist both table bases before the first dispatch, its own first (bases at %v, dispatch at %x): the test no longer reproduces pcre2's shape",
						offsets(g, loads), g.Sec.Insts[first.Jump].Off)
				}
			}
			if out := clobbered(t, b, obj); out != "minlen 81\n" {
				t.Errorf("the original prints %q", out)
			}
		})
	}
}

// TestDispatchTailCall is the minimal reproduction of issue 10's second
// silent miscompile (xz's lzma_properties_decode with clang -O2):
// testdata/src/dispatch_tailcall.c's props_decode dispatches through a
// switch's jump table, then tail-calls through a table of function
// pointers (jmp *0x8(%r8,%rax,1)). That jump is not a table dispatch: it
// must stay unresolved, as a tail call, with the argument registers live;
// the switch's table must be resolved; and the program rewritten with
// clobber must print "11109 515622080".
func TestDispatchTailCall(t *testing.T) {
	builds := []build{
		{"clang", []string{"-O2"}}, {"clang", []string{"-O2", "-fPIC"}}, {"clang", []string{"-O3"}},
		{"clang", []string{"-O2", "-fno-pie"}}, {"gcc", []string{"-O2", "-fPIC"}}, {"gcc", []string{"-O0"}},
	}
	args := effect.RegSet(0)
	for _, r := range []effect.Reg{effect.RDI, effect.RSI, effect.RDX, effect.RCX} {
		args |= r.Set()
	}
	for _, b := range builds {
		t.Run(b.String(), func(t *testing.T) {
			t.Parallel()
			obj := testutil.Compile(t, t.TempDir(), b.cc, "../testdata/src/dispatch_tailcall.c", b.flags...)
			p := program(t, obj)
			checked(t, filepath.Base(obj), p)
			g := graph(t, p, "props_decode")
			lv := p.Liveness()[g]
			// Every unresolved jump of props_decode is a tail call
			// (through the table of pointers, or through a register
			// loaded from it), the arguments live into it.
			tail := 0
			for _, ij := range g.Indirect {
				where := fmt.Sprintf("jump at 0x%x", g.Sec.Insts[ij.Inst].Off)
				if !ij.TailCall {
					t.Errorf("%s: not taken as a tail call (%s)", where, ij.Reason)
				}
				if live := lv.Before(ij.Inst).Regs; live&args != args {
					t.Errorf("%s: live before it %v, want the arguments %v", where, live, args)
				}
				if m, ok := g.Sec.Asm(ij.Inst).Args[0].(x86asm.Mem); ok && m.Index != 0 {
					tail++
				}
			}
			// clang: one switch table, and jmp *0x8(%r8,%rax,1) (or,
			// with the cases cloned, one jump through memory each).
			if b.cc == "clang" && (tail == 0 && !b.nonPIE() || len(g.Tables) != 1) {
				t.Errorf("%d indexed tail calls through memory and %d tables: the test no longer reproduces xz's shape", tail, len(g.Tables))
			}
			if out := clobbered(t, b, obj); out != "11109 515622080\n" {
				t.Errorf("the original prints %q", out)
			}
		})
	}
}

// TestJumpTableForms compiles testdata/src/jumptables.c with gcc and
// clang at every level, position-independent and not: every indirect
// jump of its functions is a table dispatch cfg must prove, through
// hoisted bases, several tables per function, split sparse switches,
// range checks on memory, in stack slots (-O0), through copies or before
// a shift, a byte's 256 values, callee-saved bases across calls; each table must be
// what its relocations say; and the clobber preset must not change what
// the program prints.
func TestJumpTableForms(t *testing.T) {
	funcs := []string{"two_clusters", "three_tables", "byte_op", "with_calls", "nested", "shifted"}
	var builds []build
	for _, cc := range []string{"gcc", "clang"} {
		for _, fl := range [][]string{{"-O0"}, {"-O1"}, {"-O2"}, {"-O2", "-fPIC"}, {"-O2", "-fno-pie"}, {"-O3"}, {"-O3", "-fno-pie"}, {"-Os"}, {"-O2", "-fcf-protection"}} {
			builds = append(builds, build{cc, fl})
		}
	}
	for _, b := range builds {
		t.Run(b.String(), func(t *testing.T) {
			t.Parallel()
			obj := testutil.Compile(t, t.TempDir(), b.cc, "../testdata/src/jumptables.c", b.flags...)
			p := program(t, obj)
			n := checked(t, filepath.Base(obj), p)
			for _, name := range funcs {
				g := graph(t, p, name)
				for _, ij := range g.Indirect {
					t.Errorf("%s: jump at 0x%x unresolved: %s", name, g.Sec.Insts[ij.Inst].Off, ij.Reason)
				}
			}
			if n.tables < 6 {
				t.Errorf("%d tables, want at least 6", n.tables)
			}
			abs := 0
			for _, g := range p.Graphs {
				for _, jt := range g.Tables {
					if !jt.Relative {
						abs++
					}
				}
			}
			// Code that is not position-independent reads 8-byte
			// addresses (R_X86_64_64); PIE and PIC code 4-byte offsets.
			if b.nonPIE() != (abs > 0) {
				t.Errorf("%d of %d tables absolute", abs, n.tables)
			}
			if b.nonPIE() && abs != n.tables {
				t.Errorf("%d of %d tables absolute, want all", abs, n.tables)
			}
			clobbered(t, b, obj)
		})
	}
}

// TestJumpTableAsm checks the forms of testdata/src/jumptables.s: table
// dispatches cfg must prove with the number of entries each has, and
// counterfeits it must leave unresolved (no range check, a base loaded
// from memory, redefined on one path or by a function called on the way,
// a check on one path only or before the index changes, a table of
// function pointers), as tail calls with the argument registers live or
// as unknown jumps with everything live.
func TestJumpTableAsm(t *testing.T) {
	obj := testutil.Compile(t, t.TempDir(), "gcc", "../testdata/src/jumptables.s")
	p := program(t, obj)
	checked(t, "jumptables.s", p)
	lv := p.Liveness()
	cases := []struct {
		name     string
		entries  int    // > 0: a table of that many entries
		relative bool   // its entries are 4-byte offsets
		guard    string // the instruction that bounds the index
		reason   string // else: the reason, and
		tail     bool   // whether it is taken as a tail call
	}{
		{name: "je_255", entries: 255, relative: true, guard: "JE"},
		{name: "stack_slot", entries: 4, relative: true, guard: "JA"},
		{name: "check_before_copy", entries: 6, relative: true, guard: "JA"},
		{name: "abs_base", entries: 3, guard: "JA"},
		{name: "abs_disp", entries: 5, guard: "JA"},
		{name: "base_twice", entries: 4, relative: true, guard: "JA"},
		{name: "base_across_call", entries: 4, relative: true, guard: "JA"},
		{name: "padded_label", entries: 8, relative: true, guard: "JBE"},
		{name: "base_across_dispatch", entries: 4, relative: true, guard: "JA"},
		{name: "shift_check", entries: 3, relative: true, guard: "JA"},
		{name: "and_mask", entries: 8, relative: true, guard: "AND"},
		{name: "no_check", reason: "no range check bounds the index", tail: true},
		{name: "base_loaded", reason: "not with a table address", tail: true},
		{name: "base_redefined", reason: "2 reaching definitions", tail: true},
		{name: "check_one_path", reason: "no range check bounds the index", tail: true},
		{name: "check_then_add", reason: "no range check bounds the index", tail: true},
		{name: "base_clobbered_by_call", reason: "not with a table address", tail: true},
		{name: "shift_byte_wide", reason: "no range check bounds the index", tail: true},
		{name: "tail_table", reason: "leads out of the function's section", tail: true},
		{name: "pushed_jump", reason: "comes from outside the function"},
	}
	all := effect.RegSet(0)
	for r := effect.Reg(0); r < 16; r++ {
		if r != effect.RSP {
			all |= r.Set()
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := graph(t, p, c.name)
			if c.entries > 0 {
				for _, ij := range g.Indirect {
					t.Errorf("jump at 0x%x unresolved: %s", g.Sec.Insts[ij.Inst].Off, ij.Reason)
				}
				if len(g.Tables) != 1 {
					t.Fatalf("%d tables, want 1", len(g.Tables))
				}
				jt := g.Tables[0]
				if len(jt.Entries) != c.entries || jt.Relative != c.relative {
					t.Errorf("%d entries (relative %v), want %d (%v)", len(jt.Entries), jt.Relative, c.entries, c.relative)
				}
				if op := g.Sec.Asm(jt.Guard).Op.String(); op != c.guard {
					t.Errorf("bounded by %s at 0x%x, want %s", op, g.Sec.Insts[jt.Guard].Off, c.guard)
				}
				return
			}
			if len(g.Tables) != 0 || len(g.Indirect) != 1 {
				t.Fatalf("%d tables, %d unresolved jumps: want the jump unresolved", len(g.Tables), len(g.Indirect))
			}
			ij := g.Indirect[0]
			if !strings.Contains(ij.Reason, c.reason) || ij.TailCall != c.tail {
				t.Errorf("unresolved (tail call %v) because %q, want tail call %v, %q", ij.TailCall, ij.Reason, c.tail, c.reason)
			}
			live := lv[g].Before(ij.Inst).Regs
			want := all
			if c.tail {
				want = effect.ArgRegs &^ effect.RAX.Set()
			}
			if live&want != want {
				t.Errorf("live before the jump %v, want %v", live, want)
			}
		})
	}
}

// TestStrayLabels: an unresolved jump is a tail call (the arguments and
// callee-saved registers live) only when it cannot land in the middle of
// other code or at code that does not follow the ABI:
// testdata/src/straylabels.s, whose only such label is entered by a
// direct jump from a .cold part; then with data holding that label's
// address (TAKEN), or with a jump table holding a .cold part's entry
// (COLD, cold_case: its own jump is unknown too, whatever proves its
// table).
func TestStrayLabels(t *testing.T) {
	for _, c := range []struct {
		flags []string
		tail  bool
	}{{nil, true}, {[]string{"-Wa,--defsym,TAKEN=1"}, false}, {[]string{"-Wa,--defsym,COLD=1"}, false}} {
		t.Run(fmt.Sprint(c.flags), func(t *testing.T) {
			obj := testutil.Compile(t, t.TempDir(), "gcc", "../testdata/src/straylabels.s", c.flags...)
			p := program(t, obj)
			lv := p.Liveness()
			names := []string{"virtual_tail"}
			if strings.Contains(fmt.Sprint(c.flags), "COLD") {
				names = append(names, "cold_case")
			}
			for _, name := range names {
				g := graph(t, p, name)
				if len(g.Indirect) != 1 {
					t.Fatalf("%s: %d unresolved jumps, want 1", name, len(g.Indirect))
				}
				ij := g.Indirect[0]
				if ij.TailCall != c.tail {
					t.Errorf("%s: tail call %v, want %v (%s)", name, ij.TailCall, c.tail, ij.Reason)
				}
				if name == "cold_case" && !strings.Contains(ij.Reason, "into other code of the object") {
					t.Errorf("%s: reason %q", name, ij.Reason)
				}
				want := effect.CalleeSaved | effect.ArgRegs&^effect.RAX.Set()
				if !c.tail {
					want = effect.CallerSaved | effect.CalleeSaved
				}
				want &^= effect.RSP.Set()
				if live := lv[g].Before(ij.Inst).Regs; live&want != want {
					t.Errorf("%s: live before the jump %v, want %v", name, live, want)
				}
			}
		})
	}
}

// verifierArchives are the static libraries TestVerifyTables goes
// through: Debian's C library, OpenSSL's libcrypto (libssl-dev) and
// libstdc++ (libstdc++-12-dev, found with gcc -print-file-name).
func verifierArchives() []string {
	libs := []string{"/usr/lib/x86_64-linux-gnu/libc.a", "/usr/lib/x86_64-linux-gnu/libcrypto.a"}
	if out, err := exec.Command("gcc", "-print-file-name=libstdc++.a").Output(); err == nil && filepath.IsAbs(strings.TrimSpace(string(out))) {
		libs = append(libs, strings.TrimSpace(string(out)))
	} else {
		libs = append(libs, "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a")
	}
	return libs
}

// TestVerifyTables checks, over every function of libc.a, libcrypto.a and
// libstdc++.a, that each jump table cfg resolved is the one decodeTable
// finds on its own (address, entries, targets) and is what the dispatch's
// block leads to, and that every unresolved indirect jump leaves its
// function as a tail call or an unknown jump. A table decodeTable cannot
// tell fails the test too: it would be one nobody checked. It logs the numbers per
// archive. The three archives take a few seconds together, so it runs in
// full in `make unit`; CFG_VERIFY_DIR=DIR adds every object under DIR
// (go test ./cfg -run VerifyTables/dir -v); cmd/hijack's TestAnalyzeIndirectJumps checks that
// analyze lists every jmp * of the same archives.
func TestVerifyTables(t *testing.T) {
	for _, path := range verifierArchives() {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			testutil.NeedFile(t, path)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			members, err := testutil.ReadArchive(data)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			var n tally
			skipped := 0
			for _, m := range members {
				if !verifyObject(t, m.Name, m.Data, &n, true) {
					skipped++
				}
			}
			t.Logf("%s: %d members (%d not read), %v, in %v", filepath.Base(path), len(members), skipped, n, time.Since(start).Round(time.Millisecond))
			if n.tables == 0 {
				t.Errorf("no jump table resolved")
			}
		})
	}
	// CFG_VERIFY_DIR=DIR: also every object under DIR (a build tree,
	// such as the real-world suite's .cache/realworld/build). Tables the
	// decoder cannot tell are logged there, not failed: any build may
	// hold forms it does not know.
	if dir := os.Getenv("CFG_VERIFY_DIR"); dir != "" {
		t.Run("dir", func(t *testing.T) {
			start := time.Now()
			var n tally
			objs, skipped := 0, 0
			err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(path, ".o") {
					return err
				}
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				objs++
				if !verifyObject(t, path, data, &n, false) {
					skipped++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d objects (%d not read), %v, in %v", dir, objs, skipped, n, time.Since(start).Round(time.Millisecond))
		})
	}
}

// verifyObject checks the tables of one object (see TestVerifyTables)
// and adds its counts to n; false when it is not an object hijack reads
// (LTO IR, another architecture), which is not an error here. strict: a
// table decodeTable cannot tell is an error too.
func verifyObject(t *testing.T, name string, data []byte, n *tally, strict bool) bool {
	f, err := elfobj.Read(data)
	if err != nil {
		t.Logf("%s: %v", name, err)
		return false
	}
	o, err := ibr.Build(f)
	if err != nil {
		t.Logf("%s: %v", name, err)
		return false
	}
	if strict {
		n.add(checked(t, name, cfg.Build(o)))
	} else {
		n.add(verifyTables(t, name, cfg.Build(o)))
	}
	return true
}
