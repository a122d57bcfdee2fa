package emit

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"hijack/ibr"
	"hijack/internal/testutil"
)

// TestLoopHeadsKeepAlignment: the labels gcc aligns inside functions
// (`.p2align` before a loop's head) stay at a multiple of the alignment
// they had (up to 16) when code of every length is inserted before the
// instructions. The oracle is the compiler's own assembly: the object is
// assembled from it with its local labels kept (as -L), and each label
// the assembly aligned is looked up before and after.
func TestLoopHeadsKeepAlignment(t *testing.T) {
	testutil.Need(t, "gcc")
	for _, c := range []struct{ src, opt string }{
		{"loops.c", "-O2"}, {"loops.c", "-O3"}, {"kitchen.c", "-O2"}, {"kitchen.c", "-O3"},
	} {
		t.Run(c.src+c.opt, func(t *testing.T) {
			dir := t.TempDir()
			asm, obj := filepath.Join(dir, "in.s"), filepath.Join(dir, "in.o")
			for _, args := range [][]string{
				{c.opt, "-S", filepath.Join("..", "testdata", "src", c.src), "-o", asm},
				{"-c", "-Wa,-L", asm, "-o", obj},
			} {
				if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
					t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			aligned := alignedLabels(t, asm)
			o := testutil.BuildIBR(t, obj)
			old := map[string]uint64{}
			for _, sym := range o.File.Symbols {
				if aligned[sym.Name] {
					old[sym.Name] = sym.Value
				}
			}
			if len(old) < 5 {
				t.Fatalf("%d labels the assembly aligns, want 5 or more", len(old))
			}
			n := 0
			for _, s := range o.Code {
				for i := range s.Insts {
					if s.CanInsertBefore(i) {
						nop := &ibr.Snippet{Code: make([]byte, 1+n%15)}
						FillNops(nop.Code)
						if err := s.InsertBefore(i, nop); err != nil {
							t.Fatal(err)
						}
						n++
					}
				}
			}
			if err := Emit(o, nil); err != nil {
				t.Fatal(err)
			}
			for _, sym := range o.File.Symbols {
				v, ok := old[sym.Name]
				if !ok {
					continue
				}
				a := min(v&-v, 16)
				if v == 0 {
					a = 16
				}
				if sym.Value%a != 0 {
					t.Errorf("%s: at 0x%x, was 0x%x: not a multiple of %d", sym.Name, sym.Value, v, a)
				}
			}
		})
	}
}

// alignedLabels returns the labels of an assembly file that directly
// follow a .p2align (or .align) directive.
func alignedLabels(t *testing.T, asm string) map[string]bool {
	f, err := os.Open(asm)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	labels := map[string]bool{}
	after := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, ".p2align") || strings.HasPrefix(line, ".align"):
			after = true
		case strings.HasSuffix(line, ":") && after:
			labels[strings.TrimSuffix(line, ":")] = true
		default:
			after = false
		}
	}
	return labels
}
