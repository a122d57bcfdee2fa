package main

import (
	"bytes"
	"debug/elf"
	"hijack/vptrace/abi"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hijack/internal/testutil"
)

func TestParseCC(t *testing.T) {
	tests := []struct {
		args    string
		mode    ccMode
		output  string
		sources []int
	}{
		{"-O2 -c a.c", modeCompile, "", []int{2}},
		{"-O2 -c a.c -o x/a.o", modeCompile, "x/a.o", []int{2}},
		{"-c -I inc -Dx=1 b.cpp -ob.o", modeCompile, "b.o", []int{4}},
		{"-O2 a.c b.s -o app -lm", modeLink, "app", []int{1, 2}},
		{"a.o b.o -o app", modeLink, "app", nil},
		{"-E a.c", modeOther, "", []int{1}},
		{"-S a.c", modeOther, "", []int{1}},
		{"--version", modeOther, "", nil},
		{"-x c - -c -o out.o", modeCompile, "out.o", []int{2}},
		{"-include pre.h -c a.c", modeCompile, "", []int{3}},
		{"-x c-header h.h -o h.h.gch", modeOther, "h.h.gch", nil},
		{"t.hpp", modeOther, "", nil},
		{"-x c-header h.h a.c -o app", modeOther, "app", nil},
		{"-x c-header h.h -x none a.c -o app", modeLink, "app", []int{5}},
		{"-gcc-toolchain /opt/gcc.c -c a.c", modeCompile, "", []int{3}},
		{"-working-directory sub.c -c a.c", modeCompile, "", []int{3}},
	}
	for _, tc := range tests {
		p := parseCC(strings.Fields(tc.args))
		if p.mode != tc.mode || p.output != tc.output || !reflect.DeepEqual(p.sources, tc.sources) {
			t.Errorf("%q: got %+v, want mode %d output %q sources %v", tc.args, p, tc.mode, tc.output, tc.sources)
		}
	}
}

func TestCompileOnlyFlags(t *testing.T) {
	args := strings.Fields("-O2 -g a.c -Iinc -L/x -lm -Wl,--as-needed -o app b.o -pthread -Xlinker -z -include h.h --rtlib=libgcc -unwindlib=libgcc -nostdlib++")
	got := compileOnlyFlags(args, map[int]bool{2: true})
	want := strings.Fields("-O2 -g -Iinc -pthread -include h.h")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestCCWrapper builds a program through the wrapper, compile-and-link in
// one command and separately, and checks the objects were rewritten and
// the program still works.
func TestCCWrapper(t *testing.T) {
	testutil.Need(t, "gcc")
	dir := t.TempDir()
	for _, f := range []string{"kitchen.c", "idioms.s", "idioms_main.c"} {
		b, err := os.ReadFile("../../testdata/src/" + f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	wrap := func(args ...string) string {
		var out, errb bytes.Buffer
		wd, _ := os.Getwd()
		os.Chdir(dir)
		st := run(append([]string{"cc", "-p", "pad", "--"}, args...), &out, &errb)
		os.Chdir(wd)
		if st != 0 {
			t.Fatalf("hijack cc %v: status %d: %s", args, st, errb.String())
		}
		return out.String()
	}
	wrap("gcc", "-O2", "-c", "kitchen.c")
	plain := filepath.Join(dir, "plain.o")
	if out, err := exec.Command("gcc", "-O2", "-c", filepath.Join(dir, "kitchen.c"), "-o", plain).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "kitchen.o"))
	b, _ := os.ReadFile(plain)
	if bytes.Equal(a, b) || len(a) <= len(b) {
		t.Fatalf("kitchen.o was not rewritten (%d vs %d bytes)", len(a), len(b))
	}
	wrap("gcc", "-O2", "idioms.s", "idioms_main.c", "-o", "idm")
	got := testutil.Run(10e9, filepath.Join(dir, "idm"))
	if out, err := exec.Command("gcc", "-O2", filepath.Join(dir, "idioms.s"), filepath.Join(dir, "idioms_main.c"), "-o", filepath.Join(dir, "idm0")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := testutil.Run(10e9, filepath.Join(dir, "idm0"))
	if got != want || got.Exit != 0 {
		t.Fatalf("wrapped build behaves differently: %+v vs %+v", got, want)
	}
	if v := wrap("gcc", "--version"); !strings.Contains(v, "gcc") {
		t.Fatalf("--version not passed through: %q", v)
	}
}

// TestParsePIC: the last code model option decides whether a compile's
// objects may go into a shared library; -shared says so whatever follows.
func TestParsePIC(t *testing.T) {
	for _, tc := range []struct {
		args string
		pic  bool
	}{
		{"-O2 -c a.c", false},
		{"-fPIC -c a.c", true},
		{"-fpic -c a.c", true},
		{"-fPIC -fPIE -c a.c", false},
		{"-fPIE -fPIC -c a.c", true},
		{"-fPIC -fno-pic -c a.c", false},
		{"-shared -fPIC a.c -o liba.so", true},
		{"-shared a.c -o liba.so", true},
		{"-shared -fno-PIC a.c -o liba.so", true},
		{"a.c -o app", false},
	} {
		if p := parseCC(strings.Fields(tc.args)); p.pic != tc.pic {
			t.Errorf("%q: pic %v, want %v", tc.args, p.pic, tc.pic)
		}
	}
}

// TestCCTLSModel: hijack cc knows what the object alone cannot show,
// whether it was compiled for executables (no -fPIC, -fpic or -shared):
// vptrace then keeps its slots initial-exec, not indirect, for an object
// whose relocations would be the same either way (a function of its
// arguments only). Not for assembly, which those options do not change.
func TestCCTLSModel(t *testing.T) {
	testutil.Need(t, "gcc")
	dir := t.TempDir()
	for name, text := range map[string]string{
		"get.c": "long get(const long *p, long i) { return p[i]; }\n",
		"get.s": "\t.text\n\t.globl get\n\t.type get, @function\nget:\n\tmovq (%rdi,%rsi,8), %rax\n\tret\n\t.size get, .-get\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		src   string
		flags []string
		want  abi.Flags
	}{
		{"get.c", nil, abi.FlagIE},
		{"get.c", []string{"-fPIE"}, abi.FlagIE},
		{"get.c", []string{"-fPIC"}, abi.FlagIE | abi.FlagIndirect},
		{"get.c", []string{"-fPIC", "-fno-pic"}, abi.FlagIE},
		{"get.s", nil, abi.FlagIE | abi.FlagIndirect},
	} {
		src := filepath.Join(dir, tc.src)
		obj := filepath.Join(dir, "get.o")
		var out, errb bytes.Buffer
		args := append(append([]string{"cc", "-q", "-p", "vptrace", "--", "gcc", "-O2"}, tc.flags...), "-c", src, "-o", obj)
		if st := run(args, &out, &errb); st != 0 {
			t.Fatalf("hijack %v: status %d: %s", args, st, errb.String())
		}
		f, err := elf.Open(obj)
		if err != nil {
			t.Fatal(err)
		}
		sec := f.Section(".vptrace")
		if sec == nil {
			f.Close()
			t.Fatalf("%v %s: no .vptrace section", tc.flags, tc.src)
		}
		data, err := sec.Data()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		d, err := abi.UnmarshalObject(data)
		if err != nil {
			t.Fatal(err)
		}
		// (the TLS model's flags: not whether the table was packed, nor
		// the slot count, epoch word and kinds every object has)
		if got := d.Flags &^ (abi.FlagPacked | abi.FlagSlots | abi.FlagEpoch | abi.FlagKinds); got != tc.want {
			t.Errorf("gcc %v %s: descriptor flags %#x, want %#x", tc.flags, tc.src, got, tc.want)
		}
	}
}
