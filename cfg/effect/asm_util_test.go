package effect

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// requireTool returns the path of an external tool or skips the test, but
// fails it under CI=true where the environment is expected to be complete.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, name+" not found in PATH")
	}
	return p
}

// missing skips locally and fails under CI=true.
func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (required under CI=true)", what)
	}
	t.Skipf("%s; skipping (set CI=true to make this a failure)", what)
}

// assemble assembles each line (GNU as syntax; a line may start with
// ".intel_syntax noprefix;" style directives joined by ';') as one
// instruction and returns the bytes of each, in order. All lines go through
// one `as --64` run: every line is preceded by a global label, and the bytes
// of line i are those between label i and label i+1.
func assemble(t testing.TB, lines []string) [][]byte {
	t.Helper()
	as := requireTool(t, "as")
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("\t.text\n")
	for i, l := range lines {
		fmt.Fprintf(&src, "__t%d:\n\t%s\n", i, l)
	}
	fmt.Fprintf(&src, "__t%d:\n", len(lines))
	// Targets for branches in the snippets.
	src.WriteString("target:\n\tnop\n")
	sfile := filepath.Join(dir, "t.s")
	ofile := filepath.Join(dir, "t.o")
	if err := os.WriteFile(sfile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(as, "--64", "-o", ofile, sfile).CombinedOutput()
	if err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	f, err := elf.Open(ofile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	off := make([]int, len(lines)+1)
	for i := range off {
		off[i] = -1
	}
	for _, s := range syms {
		var k int
		if _, err := fmt.Sscanf(s.Name, "__t%d", &k); err == nil && k <= len(lines) && strings.HasPrefix(s.Name, "__t") {
			off[k] = int(s.Value)
		}
	}
	if !sort.IntsAreSorted(off) || off[0] < 0 {
		t.Fatalf("assemble: labels out of order: %v", off)
	}
	res := make([][]byte, len(lines))
	for i := range lines {
		res[i] = bytes.Clone(code[off[i]:off[i+1]])
	}
	return res
}
