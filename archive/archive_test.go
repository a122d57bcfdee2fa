package archive_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"hijack/archive"
	"hijack/internal/testutil"
)

func TestRoundTripAgainstBinutils(t *testing.T) {
	testutil.Need(t, "ar", "nm")
	for _, lib := range []string{"libz.a", "libsqlite3.a"} {
		path := "/usr/lib/x86_64-linux-gnu/" + lib
		testutil.NeedFile(t, path)
		data, _ := os.ReadFile(path)
		ms, err := archive.Read(data)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command("ar", "t", path).Output()
		if got, want := len(ms), len(strings.Fields(string(out))); got != want {
			t.Fatalf("%s: %d members, ar t lists %d", lib, got, want)
		}
		w, err := archive.Write(ms)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), lib)
		os.WriteFile(p, w, 0o644)
		// binutils must read it, and its symbol index must equal the
		// original's.
		a, err1 := exec.Command("nm", "--print-armap", path).Output()
		b, err2 := exec.Command("nm", "--print-armap", p).Output()
		if err1 != nil || err2 != nil {
			t.Fatalf("nm: %v %v", err1, err2)
		}
		idx := func(s []byte) string { return string(s[:bytes.Index(s, []byte("\n\n"))]) }
		if idx(a) != idx(b) {
			t.Errorf("%s: symbol index differs", lib)
		}
		back, err := archive.Read(w)
		if err != nil || len(back) != len(ms) {
			t.Fatalf("reading back: %v", err)
		}
		for i := range ms {
			if back[i].Name != ms[i].Name || !bytes.Equal(back[i].Data, ms[i].Data) {
				t.Fatalf("member %d differs", i)
			}
		}
	}
}

func TestLongNames(t *testing.T) {
	ms := []archive.Member{{Name: "short.o", Data: []byte("x")}, {Name: "a_rather_long_member_name.o", Data: []byte("yy")}}
	w, err := archive.Write(ms)
	if err != nil {
		t.Fatal(err)
	}
	back, err := archive.Read(w)
	if err != nil || len(back) != 2 || back[1].Name != "a_rather_long_member_name.o" || string(back[0].Data) != "x" {
		t.Fatalf("%v %+v", err, back)
	}
}

func TestBadArchives(t *testing.T) {
	for _, d := range []string{"", "!<arch>\nshort", "!<arch>\n" + strings.Repeat(" ", 48) + "99999999  `\n"} {
		if _, err := archive.Read([]byte(d)); err == nil {
			t.Errorf("%q: no error", d)
		}
	}
}

// Thin archives (ar rcT) name their members' files; ReadFile loads them
// relative to the archive, with paths and long names as GNU ar wrote them.
func TestThinAgainstBinutils(t *testing.T) {
	testutil.Need(t, "ar")
	dir := t.TempDir()
	files := map[string]string{
		"a.o":                              "first member",
		"a_member_with_a_long_file_name.o": "second member, odd length",
		"sub/c.o":                          "third, in a subdirectory",
		"sub/deeper/another_long_name_1.o": "fourth",
	}
	var names []string
	for name, body := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		names = append(names, name)
	}
	lib := filepath.Join(dir, "libthin.a")
	cmd := exec.Command("ar", append([]string{"rcT", lib}, names...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ar: %v: %s", err, out)
	}
	data, _ := os.ReadFile(lib)
	if !archive.IsArchive(data) || !archive.IsThin(data) {
		t.Fatalf("not recognised as a thin archive: %q", data[:8])
	}
	ms, err := archive.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != len(names) {
		t.Fatalf("%d members, want %d", len(ms), len(names))
	}
	for i, m := range ms {
		if m.Path != names[i] || m.Name != filepath.Base(names[i]) || string(m.Data) != files[names[i]] {
			t.Errorf("member %d: %q (path %q) %q, want %q %q", i, m.Name, m.Path, m.Data, names[i], files[names[i]])
		}
	}
	// A missing member file is an error naming it.
	os.Remove(filepath.Join(dir, "sub/c.o"))
	if _, err := archive.ReadFile(lib); err == nil || !strings.Contains(err.Error(), "sub/c.o") {
		t.Errorf("missing member: error %v", err)
	}
}

// TestUTF8Names: member names with multi-byte UTF-8 fit the 16-byte name
// field (fmt padded them by runes: the header overflowed, found by
// FuzzRead) and binutils lists them.
func TestUTF8Names(t *testing.T) {
	testutil.Need(t, "ar")
	ms := []archive.Member{{Name: "café.o", Data: []byte("one")}, {Name: "ψψψψψψψ.o", Data: []byte("two")}, {Name: "déjà-vu-long-name.o", Data: []byte("three")}}
	out, err := archive.Write(ms)
	if err != nil {
		t.Fatal(err)
	}
	back, err := archive.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(archive.SortedNames(back), " "), strings.Join(archive.SortedNames(ms), " "); got != want {
		t.Fatalf("read back %q, want %q", got, want)
	}
	p := filepath.Join(t.TempDir(), "utf8.a")
	os.WriteFile(p, out, 0o644)
	listed, err := exec.Command("ar", "t", p).CombinedOutput()
	if err != nil || string(listed) != "café.o\nψψψψψψψ.o\ndéjà-vu-long-name.o\n" {
		t.Fatalf("ar t: %v\n%s", err, listed)
	}
}
