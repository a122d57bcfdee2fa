package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"hijack/archive"
	"hijack/internal/testutil"
	"hijack/preset/all"
	"hijack/rewrite"
	"hijack/rules"
)

// testObjects compiles two objects of testdata/src into dir: loops.o
// (-O1, calls kept) and kitchen.o.
func testObjects(t *testing.T, dir string) (loops, kitchen string) {
	t.Helper()
	return testutil.Compile(t, dir, "gcc", "../../testdata/src/loops.c", "-O1", "-fno-inline"),
		testutil.Compile(t, dir, "gcc", "../../testdata/src/kitchen.c", "-O2")
}

// makeArchive runs ar with operation op (rcs, rcT) to make lib of members.
func makeArchive(t *testing.T, op, lib string, members ...string) {
	t.Helper()
	if out, err := exec.Command("ar", append([]string{op, lib}, members...)...).CombinedOutput(); err != nil {
		t.Fatalf("ar: %v %s", err, out)
	}
}

// The rewrite of an archive, streamed member by member through a spill
// file, writes the archive the in-memory way gave: every member rewritten
// on its own and the whole laid out by archive.Write. Regular and thin
// archives, one job and several.
func TestRewriteArchiveStreamed(t *testing.T) {
	testutil.Need(t, "gcc", "ar")
	dir := t.TempDir()
	loops, kitchen := testObjects(t, dir)
	notes := filepath.Join(dir, "notes_with_a_long_name.txt")
	os.WriteFile(notes, []byte("not an object, odd\n"), 0o644)
	rf, err := rules.Default(all.Presets().Registry(), "pad")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		ar   string // ar's operation
		jobs string
	}{
		{"regular -j 1", "rcs", "1"},
		{"regular -j 3", "rcs", "3"},
		{"thin -j 1", "rcT", "1"},
		{"thin -j 2", "rcT", "2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lib := filepath.Join(t.TempDir(), "lib.a")
			makeArchive(t, tt.ar, lib, loops, notes, kitchen)
			ms, err := archive.ReadFile(lib)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range ms {
				d, _, err := rewrite.Rewrite(fmt.Sprintf("lib.a(%s)", m.Name), m.Data, rf, all.Presets(), func(string) {})
				if err == nil {
					ms[i] = archive.Member{Name: m.Name, Data: d}
				} else {
					ms[i] = archive.Member{Name: m.Name, Data: m.Data}
				}
			}
			want, err := archive.Write(ms)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out.a")
			var o, e bytes.Buffer
			if st := run([]string{"-q", "-j", tt.jobs, "-p", "pad", lib, out}, &o, &e); st != 0 {
				t.Fatalf("status %d: %s", st, e.String())
			}
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) {
				t.Errorf("rewritten archive (%d bytes) differs from the in-memory way's (%d bytes)", len(got), len(want))
			}
		})
	}
}

// A rewrite that fails leaves OUT as it was and nothing behind, in TMPDIR
// (where the spill file is) or beside OUT: a member that is a corrupt ELF
// object, a thin archive's member file gone, a TMPDIR that cannot be
// written (the one-line error names it).
func TestRewriteArchiveFails(t *testing.T) {
	testutil.Need(t, "gcc", "ar")
	dir := t.TempDir()
	loops, kitchen := testObjects(t, dir)
	corrupt := filepath.Join(dir, "corrupt.o")
	k, _ := os.ReadFile(kitchen)
	bad := bytes.Clone(k[:len(k)/2])
	copy(bad[0x28:], bytes.Repeat([]byte{0xff}, 8)) // e_shoff beyond the file
	os.WriteFile(corrupt, bad, 0o644)
	gone := filepath.Join(dir, "gone.o")
	os.WriteFile(gone, k, 0o644)
	thin := filepath.Join(dir, "libthin.a")
	makeArchive(t, "rcT", thin, loops, gone, kitchen)
	os.Remove(gone)
	regular := filepath.Join(dir, "libbad.a")
	makeArchive(t, "rcs", regular, loops, corrupt, kitchen)
	good := filepath.Join(dir, "libgood.a")
	makeArchive(t, "rcs", good, loops, kitchen)
	for _, tt := range []struct {
		name   string
		lib    string
		jobs   string
		tmpdir string // "": a fresh empty directory
		stderr string
	}{
		{"corrupt member -j 1", regular, "1", "", "member corrupt.o: "},
		{"corrupt member -j 2", regular, "2", "", "member corrupt.o: "},
		{"thin member gone", thin, "2", "", "thin archive member " + gone},
		{"TMPDIR missing", good, "1", filepath.Join(dir, "nonexistent"), "cannot create a temporary file in " + filepath.Join(dir, "nonexistent") + " (TMPDIR)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp := tt.tmpdir
			if tmp == "" {
				tmp = t.TempDir()
			}
			outDir := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			out := filepath.Join(outDir, "out.a")
			os.WriteFile(out, []byte("old output"), 0o640)
			var o, e bytes.Buffer
			st := run([]string{"-q", "-j", tt.jobs, "-p", "pad", tt.lib, out}, &o, &e)
			lines := strings.Split(strings.TrimSuffix(e.String(), "\n"), "\n")
			if st != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "hijack: "+tt.lib+": ") || !strings.Contains(lines[0], tt.stderr) {
				t.Errorf("status %d, stderr %q; want 1 and one line with %q", st, e.String(), tt.stderr)
			}
			if data, err := os.ReadFile(out); err != nil || string(data) != "old output" {
				t.Errorf("OUT changed: %q %v", data, err)
			}
			for _, d := range []string{tmp, outDir} {
				ents, _ := os.ReadDir(d)
				if d == outDir && len(ents) == 1 || d == tmp && len(ents) == 0 {
					continue
				}
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("%s: left behind: %v", d, names)
			}
		})
	}
}
