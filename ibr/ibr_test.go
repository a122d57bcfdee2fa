package ibr_test

import (
	"debug/elf"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"hijack/ibr"
	"hijack/internal/testutil"
)

func build(t *testing.T, obj string) *ibr.Object {
	t.Helper()
	return testutil.BuildIBR(t, obj)
}

func buildString(t *testing.T, cc, name, text string, flags ...string) *ibr.Object {
	t.Helper()
	return build(t, testutil.CompileString(t, t.TempDir(), cc, name, text, flags...))
}

func funcNamed(t *testing.T, o *ibr.Object, name string) *ibr.Func {
	t.Helper()
	for _, fn := range o.Funcs {
		if fn.Name == name {
			return fn
		}
	}
	t.Fatalf("no function %s", name)
	return nil
}

func TestIdioms(t *testing.T) {
	o := build(t, testutil.Compile(t, t.TempDir(), "gcc", "../testdata/src/idioms.s"))
	if len(o.Code) != 1 || !o.Code[0].Rewritable() {
		t.Fatalf("section not rewritable: %s", o.Code[0].Problem)
	}
	s := o.Code[0]

	// count_locked: "jne 1f; lock; 1: xadd" splits the lock prefix off.
	fn := funcNamed(t, o, "count_locked")
	var prefix, glued int
	for i := fn.Start; i < fn.End; i++ {
		switch s.Insts[i].Flags {
		case ibr.Prefix:
			prefix = i
		case ibr.Glued:
			glued = i
			if s.Asm(i).Op != x86asm.XADD {
				t.Errorf("glued instruction is %v, want XADD", s.Asm(i).Op)
			}
			if s.CanInsertBefore(i) {
				t.Error("insertion allowed between a prefix and its instruction")
			}
		}
	}
	if prefix == 0 || glued != prefix+1 {
		t.Fatalf("lock prefix not split: prefix %d glued %d", prefix, glued)
	}
	var jne *ibr.Inst
	for i := fn.Start; i < fn.End; i++ {
		if s.Asm(i).Op == x86asm.JNE {
			jne = &s.Insts[i]
		}
	}
	if jne == nil || jne.Link == nil || jne.Link.Target != glued {
		t.Fatalf("jne does not link to the instruction after the prefix")
	}

	// table_lookup: lea and VEX load of data in code, call of a local
	// function without relocation.
	fn = funcNamed(t, o, "table_lookup")
	var dataIdx = -1
	for i := range s.Insts {
		if s.Insts[i].Kind == ibr.Data {
			dataIdx = i
		}
	}
	if dataIdx < 0 || s.Insts[dataIdx].Len != 64 {
		t.Fatalf("constants are not one 64-byte data element")
	}
	seen := map[x86asm.Op]bool{}
	for i := fn.Start; i < fn.End; i++ {
		in := &s.Insts[i]
		switch s.Asm(i).Op {
		case x86asm.LEA, x86asm.VMOVDQU:
			if in.Link == nil || in.Link.Kind != ibr.LinkRIP || in.Link.Target != dataIdx || in.Link.Delta != 0 {
				t.Errorf("%v at 0x%x does not link to the constants: %+v", s.Asm(i).Op, in.Off, in.Link)
			}
			seen[s.Asm(i).Op] = true
		case x86asm.CALL:
			h := funcNamed(t, o, "helper")
			if in.Link == nil || in.Link.Kind != ibr.LinkBranch || in.Link.Target != h.Start {
				t.Errorf("call does not link to helper")
			}
			seen[s.Asm(i).Op] = true
		}
	}
	if len(seen) != 3 {
		t.Errorf("missing lea/vmovdqu/call: %v", seen)
	}
	// The VEX load's operand is RIP-relative in the repaired semantics.
	for i := fn.Start; i < fn.End; i++ {
		if s.Asm(i).Op == x86asm.VMOVDQU {
			if m, ok := s.Asm(i).Args[1].(x86asm.Mem); !ok || m.Base != x86asm.RIP {
				t.Errorf("VEX operand not RIP-relative: %v", s.Asm(i).Args)
			}
		}
	}
}

func TestJumpTables(t *testing.T) {
	for _, c := range []struct {
		cc    string
		flags []string
	}{
		{"gcc", []string{"-O2"}}, {"gcc", []string{"-O2", "-fno-pie"}}, {"gcc", []string{"-O1", "-fPIC"}},
		{"clang", []string{"-O2"}}, {"clang", []string{"-O2", "-fno-pie"}},
	} {
		t.Run(c.cc+strings.Join(c.flags, ""), func(t *testing.T) {
			o := build(t, testutil.Compile(t, t.TempDir(), c.cc, "../testdata/src/kitchen.c", c.flags...))
			// classify's switch (x % 9, cases 0..7 and default) has a
			// table of at least 8 entries, all leading into classify
			// (or the function it was inlined into).
			entries := 0
			for _, r := range o.Refs {
				f := o.File.Sections[r.RelaSec]
				if !strings.Contains(f.Name, "rodata") && !strings.Contains(f.Name, "data.rel") {
					continue
				}
				entries++
				if fn := r.Target.FuncAt(r.Inst); fn == nil {
					t.Errorf("table entry leads outside every function")
				}
			}
			if entries < 8 {
				t.Fatalf("%d jump-table entries resolved, want >= 8", entries)
			}
			for _, s := range o.Code {
				if !s.Rewritable() {
					t.Errorf("%s: %s", s.Elf.Name, s.Problem)
				}
			}
		})
	}
}

// TestProblems: constructs hijack cannot move safely make the section not
// rewritable, with a reason.
func TestProblems(t *testing.T) {
	tests := []struct {
		name, src, want string
		cc, file        string
	}{
		{"bytes outside functions", ".text\n.globl f\n.type f,@function\nf: ret\n.size f,.-f\n.byte 1,2,3,4,5\n", "belong to no function", "gcc", "a.s"},
		{"branch into an instruction", ".text\n.globl f\n.type f,@function\nf: jmp 1f+2\n1: movl $1,%eax\nret\n.size f,.-f\n", "not the start of an instruction", "gcc", "b.s"},
		{"label difference", "int f(int i){ static const int t[] = {&&a - &&a, &&b - &&a}; goto *(&&a + t[i&1]); a: return 1; b: return 2; }\n", "address of", "gcc", "d.c"},
		{"undecodable", ".text\n.globl f\n.type f,@function\nf: .byte 0x06\nret\n.size f,.-f\n", "cannot decode", "gcc", "e.s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := buildString(t, tc.cc, tc.file, tc.src, "-O2", "-fPIC")
			s := o.Code[0]
			if s.Rewritable() || !strings.Contains(s.Problem, tc.want) {
				t.Fatalf("problem %q, want one containing %q", s.Problem, tc.want)
			}
			if err := s.InsertBefore(0, &ibr.Snippet{Code: []byte{0x90}}); err == nil {
				t.Fatal("insertion into a section that is not rewritable was accepted")
			}
		})
	}
}

// TestComputedGoto: a table of label addresses is made of relocations
// against code, which follow moved code: the section stays rewritable.
func TestComputedGoto(t *testing.T) {
	o := buildString(t, "gcc", "cg.c", "int f(int i){ static void *t[] = {&&a, &&b}; goto *t[i&1]; a: return 1; b: return 2; }\n", "-O2", "-fPIC")
	if !o.Code[0].Rewritable() {
		t.Fatal(o.Code[0].Problem)
	}
	if len(o.Refs) < 2 {
		t.Fatalf("%d references to code, want the 2 label addresses", len(o.Refs))
	}
}

// TestFind checks the offset lookup over every element of a real section.
func TestFind(t *testing.T) {
	o := build(t, testutil.Compile(t, t.TempDir(), "gcc", "../testdata/src/kitchen.c", "-O2"))
	for _, s := range o.Code {
		for i := range s.Insts {
			in := &s.Insts[i]
			for off := in.Off; off < in.End(); off++ {
				if got := s.Find(uint64(off)); got != i {
					t.Fatalf("Find(0x%x) = %d, want %d", off, got, i)
				}
			}
		}
		if s.Find(uint64(len(s.Elf.Data))) != len(s.Insts) || s.Find(uint64(len(s.Elf.Data))+1) != -1 {
			t.Fatal("Find at or beyond the end")
		}
	}
}

// TestTLSCallsGlued: the call of __tls_get_addr after a general- or
// local-dynamic TLS load is glued to it, so nothing can be inserted between
// the two instructions ld relaxes as one sequence.
func TestTLSCallsGlued(t *testing.T) {
	// Two static TLS variables in one function: gcc and clang use one
	// local-dynamic call for both (a single one gets general dynamic).
	src := `__thread int g; static __thread int l[8], n;
int get(int i) { n++; return g + l[i & 7] + n; }
int *addr(void) { return &g; }`
	for _, b := range []struct {
		cc    string
		flags []string
		ld    bool // local dynamic expected too (gcc -O0 uses general dynamic only)
	}{
		{"gcc", []string{"-O2", "-fPIC"}, true},
		{"gcc", []string{"-O0", "-fPIC"}, false},
		{"gcc", []string{"-O2", "-fPIC", "-fno-plt"}, true},
		{"clang", []string{"-O2", "-fPIC"}, true},
		{"clang", []string{"-O2", "-fPIC", "-fno-plt"}, true},
	} {
		t.Run(b.cc+strings.Join(b.flags, ""), func(t *testing.T) {
			testutil.Need(t, b.cc)
			o := buildString(t, b.cc, "tls.c", src, append([]string{"-c"}, b.flags...)...)
			s := o.Code[0]
			pairs := map[elf.R_X86_64]int{}
			for i := range s.Insts {
				for _, fr := range s.Insts[i].Relocs {
					typ := o.File.Sections[fr.Sec].Relocs[fr.Index].Type
					if typ != elf.R_X86_64_TLSGD && typ != elf.R_X86_64_TLSLD {
						continue
					}
					pairs[typ]++
					if op := s.Asm(i + 1).Op; op != x86asm.CALL {
						t.Errorf("%v at 0x%x is followed by %v, want the call of __tls_get_addr", typ, s.Insts[i].Off, op)
					}
					if s.CanInsertAfter(i) || s.CanInsertBefore(i+1) {
						t.Errorf("%v at 0x%x: insertion allowed between the load and its call", typ, s.Insts[i].Off)
					}
					if err := s.InsertBefore(i+1, &ibr.Snippet{Code: []byte{0x90}}); err == nil {
						t.Errorf("%v at 0x%x: InsertBefore the call succeeded", typ, s.Insts[i].Off)
					}
					if err := s.InsertAfter(i, &ibr.Snippet{Code: []byte{0x90}}); err == nil {
						t.Errorf("%v at 0x%x: InsertAfter the load succeeded", typ, s.Insts[i].Off)
					}
					if !s.CanInsertBefore(i) {
						t.Errorf("%v at 0x%x: insertion before the load refused", typ, s.Insts[i].Off)
					}
				}
			}
			if pairs[elf.R_X86_64_TLSGD] == 0 || b.ld && pairs[elf.R_X86_64_TLSLD] == 0 {
				t.Fatalf("want general-dynamic loads (and local-dynamic ones: %v), got %v", b.ld, pairs)
			}
		})
	}
}

// TestInsertedOrder: code inserted before and after one instruction, in
// any interleaving, comes out in the order of each kind's calls, and a
// caller that appends to Before cannot overwrite After (they share one
// slice in Inst).
func TestInsertedOrder(t *testing.T) {
	o := buildString(t, "gcc", "f.c", "int f(int x) { return x * 3 + 1; }\n", "-O2")
	s := o.Code[0]
	fn := funcNamed(t, o, "f")
	i := fn.Start
	if !s.CanInsertBefore(i) || !s.CanInsertAfter(i) {
		t.Fatalf("cannot insert at the first instruction of f")
	}
	sn := func(b byte) *ibr.Snippet { return &ibr.Snippet{Code: []byte{b}} }
	steps := []struct {
		after bool
		code  byte
	}{{true, 0xa1}, {false, 0xb1}, {true, 0xa2}, {false, 0xb2}, {false, 0xb3}}
	for _, st := range steps {
		var err error
		if st.after {
			err = s.InsertAfter(i, sn(st.code))
		} else {
			err = s.InsertBefore(i, sn(st.code))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	codes := func(sns []*ibr.Snippet) (b []byte) {
		for _, x := range sns {
			b = append(b, x.Code...)
		}
		return b
	}
	in := &s.Insts[i]
	if got, want := codes(in.Before()), []byte{0xb1, 0xb2, 0xb3}; string(got) != string(want) {
		t.Errorf("Before = % x, want % x", got, want)
	}
	if got, want := codes(in.After()), []byte{0xa1, 0xa2}; string(got) != string(want) {
		t.Errorf("After = % x, want % x", got, want)
	}
	if got, want := codes(in.Inserted()), []byte{0xb1, 0xb2, 0xb3, 0xa1, 0xa2}; string(got) != string(want) {
		t.Errorf("Inserted = % x, want % x", got, want)
	}
	_ = append(in.Before(), sn(0xff))
	if got := codes(in.After()); got[0] != 0xa1 {
		t.Errorf("appending to Before changed After: % x", got)
	}
	if s.Insertions != 1 {
		t.Errorf("Insertions = %d, want 1 (one instruction)", s.Insertions)
	}
}

// TestColdLinks: links to a snippet's parts are checked like links to
// instructions: to the cold part only from a snippet that has one, to
// the hot part only from a cold part, inside the part.
func TestColdLinks(t *testing.T) {
	o := buildString(t, "gcc", "f.c", "int f(int x) { return x * 3 + 1; }\n", "-O2")
	s := o.Code[0]
	i := funcNamed(t, o, "f").Start
	jmp := func(to ibr.LinkTo, delta int64) ibr.SnippetLink {
		return ibr.SnippetLink{Off: 1, End: 5, To: to, Delta: delta}
	}
	code := []byte{0xe9, 0, 0, 0, 0}
	pair := func(hot, cold ibr.SnippetLink) *ibr.Snippet {
		return &ibr.Snippet{Code: code, Links: []ibr.SnippetLink{hot}, Cold: &ibr.Snippet{Code: code, Links: []ibr.SnippetLink{cold}}}
	}
	tests := []struct {
		name string
		sn   *ibr.Snippet
		ok   bool
	}{
		{"there and back", pair(jmp(ibr.LinkCold, 0), jmp(ibr.LinkHot, 5)), true},
		{"to the cold part without one", &ibr.Snippet{Code: code, Links: []ibr.SnippetLink{jmp(ibr.LinkCold, 0)}}, false},
		{"to the hot part from itself", pair(jmp(ibr.LinkHot, 0), jmp(ibr.LinkHot, 5)), false},
		{"to the cold part from itself", pair(jmp(ibr.LinkCold, 0), jmp(ibr.LinkCold, 0)), true},
		{"past the cold part from itself", pair(jmp(ibr.LinkCold, 0), jmp(ibr.LinkCold, 5)), false},
		{"past the hot part", pair(jmp(ibr.LinkCold, 0), jmp(ibr.LinkHot, 6)), false},
		{"to the end of the cold part", pair(jmp(ibr.LinkCold, 5), jmp(ibr.LinkHot, 5)), false},
		{"cold part of a cold part", &ibr.Snippet{Code: code, Links: []ibr.SnippetLink{jmp(ibr.LinkCold, 0)},
			Cold: &ibr.Snippet{Code: code, Links: []ibr.SnippetLink{jmp(ibr.LinkHot, 0)}, Cold: &ibr.Snippet{Code: code}}}, false},
		{"unknown part", pair(jmp(ibr.LinkCold+1, 0), jmp(ibr.LinkHot, 5)), false},
		{"bad relocation in the cold part", &ibr.Snippet{Code: code, Links: []ibr.SnippetLink{jmp(ibr.LinkCold, 0)},
			Cold: &ibr.Snippet{Code: code, Relocs: []ibr.SnippetReloc{{Off: 3, Type: elf.R_X86_64_PC32, Sym: "x"}}}}, false},
	}
	for _, tc := range tests {
		err := s.InsertBefore(i, tc.sn)
		if (err == nil) != tc.ok {
			t.Errorf("%s: InsertBefore: %v", tc.name, err)
		}
	}
}
