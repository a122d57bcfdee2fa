package objmut

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// Object is a compiled object of the corpus.
type Object struct {
	Name string // compiler, flags and source
	Data []byte
}

// config is one way of compiling a corpus source.
type config struct {
	cc, src string
	flags   []string
}

// configs cover what the readers and the rewriter interpret: gcc and clang
// at several -O levels, DWARF 4 and 5 (compressed too), C++ exceptions
// (.gcc_except_table, personality, COMDAT groups), -ffunction-sections,
// PIC, AVX code and hand-written assembly.
var configs = []config{
	{"gcc", "kitchen.c", []string{"-O0", "-g"}},
	{"gcc", "kitchen.c", []string{"-O2", "-g", "-gz"}},
	{"gcc", "kitchen.c", []string{"-O3", "-ffunction-sections", "-fdata-sections"}},
	{"clang", "kitchen.c", []string{"-O2", "-g", "-fPIC"}},
	{"g++", "cxx.cpp", []string{"-O2", "-g"}},
	{"clang++", "cxx.cpp", []string{"-O1"}},
	{"gcc", "loops.c", []string{"-O3", "-march=x86-64-v3", "-gdwarf-4"}},
	{"gcc", "idioms.s", nil},
}

// Corpus compiles the corpus sources found in srcDir (testdata/src) into
// dir and returns the objects. Compilers that are missing skip the test
// (fail it under CI), as testutil.Compile does.
func Corpus(t testing.TB, srcDir, dir string) []Object {
	t.Helper()
	var out []Object
	for _, c := range configs {
		obj := testutil.Compile(t, dir, c.cc, filepath.Join(srcDir, c.src), c.flags...)
		data, err := os.ReadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Object{Name: c.cc + strings.Join(c.flags, "") + "/" + c.src, Data: data})
	}
	return out
}
