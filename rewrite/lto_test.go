package rewrite_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hijack/elfobj"
	"hijack/internal/testutil"
	"hijack/rewrite"
)

// ltoSource has a function the linker keeps (called through a volatile
// pointer, so that LTO cannot fold it away) and a global it reads.
const ltoSource = `
#include <stdio.h>
int data[64];
__attribute__((noinline)) int sum(int n) { int s = 0; for (int i = 0; i < n; i++) s += data[i] * i; return s; }
int (*volatile fp)(int) = sum;
int main(void) { for (int i = 0; i < 64; i++) data[i] = i; printf("%d\n", fp(64)); return 0; }
`

// TestLTORefused: LTO objects without machine code are refused with what
// they are, instead of being "rewritten" with no function (gcc) or called
// "not an ELF file" (clang).
func TestLTORefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cc    string
		flags []string
		want  string
	}{
		{"gcc", []string{"-O2", "-flto"}, "LTO object (GIMPLE IR): compile with -fno-lto"},
		{"gcc", []string{"-O0", "-g", "-flto"}, "LTO object (GIMPLE IR): compile with -fno-lto"},
		{"clang", []string{"-O2", "-flto"}, "LTO object (LLVM bitcode): compile with -fno-lto"},
		{"clang", []string{"-O2", "-flto=thin"}, "LTO object (LLVM bitcode): compile with -fno-lto"},
	} {
		obj := testutil.CompileString(t, dir, c.cc, "lto.c", ltoSource, c.flags...)
		data, err := os.ReadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = rewrite.Rewrite("lto.o", data, padRules(t), presets, nil)
		if err == nil || err.Error() != c.want || !errors.Is(err, elfobj.ErrLTO) {
			t.Errorf("%s %s: error %v, want %q (ErrLTO)", c.cc, strings.Join(c.flags, " "), err, c.want)
		}
	}
	// The bitcode wrapper (0x0B17C0DE, then offset and size of the
	// bitcode) is recognised as well.
	wrapped := append([]byte{0xde, 0xc0, 0x17, 0x0b, 0, 0, 0, 0, 20, 0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 1}, "BC\xc0\xde"...)
	if _, err := elfobj.Read(wrapped); !errors.Is(err, elfobj.ErrLTO) || !strings.Contains(err.Error(), "LLVM bitcode") {
		t.Errorf("bitcode wrapper: %v", err)
	}
}

// TestFatLTO: a fat LTO object (machine code and GIMPLE) loses its IR, with
// a warning, so that a link with -flto uses the rewritten code: the padded
// function is in the program, as large as in the rewritten object. With
// the IR left in (as before), the linker plugin compiled the IR again and
// the program had no instrumentation at all.
func TestFatLTO(t *testing.T) {
	testutil.Need(t, "readelf")
	dir := t.TempDir()
	for _, c := range []struct {
		cc, src, fn string
		flags       []string
	}{
		{"gcc", ltoSource, "sum", []string{"-O2", "-flto", "-ffat-lto-objects"}},
		// -g: early debug information in .gnu.debuglto_* goes too.
		{"gcc", ltoSource, "sum", []string{"-O1", "-g", "-flto", "-ffat-lto-objects", "-ffunction-sections"}},
		// C++: COMDAT groups, exceptions.
		{"g++", `#include <cstdio>
#include <stdexcept>
template <class T> __attribute__((noinline)) T twice(T x) { if (x < 0) throw std::runtime_error("neg"); return x + x; }
int (*volatile fp)(int) = twice<int>;
int main() { try { fp(-1); } catch (const std::exception &e) { std::printf("%s %d\n", e.what(), fp(21)); } return 0; }
`, "_Z5twiceIiET_S0_", []string{"-O2", "-g", "-flto", "-ffat-lto-objects"}},
	} {
		name := c.cc + strings.Join(c.flags, "")
		t.Run(name, func(t *testing.T) {
			ext := ".c"
			if c.cc == "g++" {
				ext = ".cpp"
			}
			obj := testutil.CompileString(t, dir, c.cc, "fat"+ext, c.src, c.flags...)
			data, err := os.ReadFile(obj)
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			out, _, err := rewrite.Rewrite("fat.o", data, padRules(t, "seed=9"), presets, func(w string) { warnings = append(warnings, w) })
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(warnings, "\n"), "fat LTO object: LTO IR removed, so that the link uses the instrumented code") {
				t.Errorf("warnings %q lack the fat LTO one", warnings)
			}
			f, err := elfobj.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range f.Sections {
				if elfobj.IsLTOSection(s.Name) || strings.HasPrefix(s.Name, ".rela.gnu.") {
					t.Errorf("section %s left in", s.Name)
				}
			}
			for _, s := range f.Symbols {
				if elfobj.IsLTOMarker(s.Name) {
					t.Errorf("symbol %s left in", s.Name)
				}
			}
			rw := filepath.Join(dir, "fat-rw-"+name+".o")
			if err := os.WriteFile(rw, out, 0o644); err != nil {
				t.Fatal(err)
			}
			// readelf must be happy with what is left (groups, links).
			if msg, err := exec.Command("readelf", "-aW", rw).CombinedOutput(); err != nil || bytes.Contains(msg, []byte("readelf: Warning")) || bytes.Contains(msg, []byte("readelf: Error")) {
				t.Errorf("readelf -a: %v\n%s", err, grepLines(string(msg), "readelf:"))
			}
			exeOrig, exeRW := filepath.Join(dir, "orig-"+name), filepath.Join(dir, "rw-"+name)
			testutil.Link(t, c.cc, exeOrig, append([]string{obj}, c.flags...)...)
			testutil.Link(t, c.cc, exeRW, append([]string{rw}, c.flags...)...)
			a, b := testutil.Run(10*time.Second, exeOrig), testutil.Run(10*time.Second, exeRW)
			if a != b || a.Exit != 0 {
				t.Fatalf("outputs differ or fail: %+v vs %+v", a, b)
			}
			sizeObj, sizeOrig, sizeExe := symSize(t, obj, c.fn), symSize(t, rw, c.fn), symSize(t, exeRW, c.fn)
			if sizeExe != sizeOrig || sizeOrig == sizeObj {
				t.Errorf("%s: %d bytes in the original object, %d rewritten, %d in the program linked with -flto: the instrumentation is not live", c.fn, sizeObj, sizeOrig, sizeExe)
			}
		})
	}
}

// symSize returns the size of a defined symbol of an object or program
// (debug/elf: nm shows the IR's symbols of fat LTO objects, without sizes).
func symSize(t *testing.T, file, sym string) uint64 {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, s := range syms {
		if s.Name == sym && s.Section != elf.SHN_UNDEF {
			return s.Size
		}
	}
	t.Fatalf("%s: no symbol %s", file, sym)
	return 0
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
