package archive_test

import (
	"bytes"
	"io"
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

// thinLib makes a thin archive (ar rcT) of a few of libz's members, one of
// them in a subdirectory and one with a long name, and returns its path.
func thinLib(t *testing.T) string {
	t.Helper()
	testutil.Need(t, "ar")
	testutil.NeedFile(t, "/usr/lib/x86_64-linux-gnu/libz.a")
	dir := t.TempDir()
	data, _ := os.ReadFile("/usr/lib/x86_64-linux-gnu/libz.a")
	ms, err := archive.Read(data)
	if err != nil || len(ms) < 3 {
		t.Fatalf("libz.a: %v, %d members", err, len(ms))
	}
	names := []string{"sub/" + ms[0].Name, ms[1].Name, "a_member_with_a_long_file_name.o"}
	for i, n := range names {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(n)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, n), ms[i].Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib := filepath.Join(dir, "libthin.a")
	cmd := exec.Command("ar", append([]string{"rcT", lib}, names...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ar: %v: %s", err, out)
	}
	return lib
}

// The streamed way (Open, ReadMember, a Spill filled out of order,
// PrepareAt) reads the members Read and ReadFile read and writes the bytes
// Write writes, for real archives, regular and thin.
func TestStreamedLayoutEqualsInMemory(t *testing.T) {
	for _, tt := range []struct {
		lib  string // "": a thin archive made here
		thin bool
	}{
		{"/usr/lib/x86_64-linux-gnu/libz.a", false},
		{"/usr/lib/x86_64-linux-gnu/libsqlite3.a", false},
		{"/usr/lib/x86_64-linux-gnu/liblua5.4.a", false},
		{"", true},
	} {
		name := filepath.Base(tt.lib)
		if tt.lib == "" {
			name = "thin"
		}
		t.Run(name, func(t *testing.T) {
			lib := tt.lib
			if lib == "" {
				lib = thinLib(t)
			}
			testutil.NeedFile(t, lib)
			want, err := archive.ReadFile(lib)
			if err != nil {
				t.Fatal(err)
			}
			wantBytes, err := archive.Write(want)
			if err != nil {
				t.Fatal(err)
			}
			a, err := archive.Open(lib)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if len(a.Members) != len(want) || a.Thin != tt.thin {
				t.Fatalf("%d members (thin %v), want %d", len(a.Members), a.Thin, len(want))
			}
			f, err := os.CreateTemp(t.TempDir(), "spill")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			spill := archive.NewSpill(f, len(a.Members))
			// Backwards: the spill's order is not the archive's.
			for i := len(a.Members) - 1; i >= 0; i-- {
				e := a.Members[i]
				data, err := a.ReadMember(i)
				if err != nil {
					t.Fatal(err)
				}
				if e.Name != want[i].Name || e.Path != want[i].Path || !bytes.Equal(data, want[i].Data) {
					t.Fatalf("member %d: %q (path %q, %d bytes), want %q (%q, %d bytes)", i, e.Name, e.Path, len(data), want[i].Name, want[i].Path, len(want[i].Data))
				}
				if err := spill.Set(i, e.Name, data); err != nil {
					t.Fatal(err)
				}
			}
			l, err := spill.Layout()
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if n, err := l.WriteTo(&got); err != nil || n != l.Size() || int64(got.Len()) != l.Size() {
				t.Fatalf("WriteTo: %d bytes, %v; size %d", n, err, l.Size())
			}
			if !bytes.Equal(got.Bytes(), wantBytes) {
				t.Fatalf("streamed archive (%d bytes) differs from Write's (%d bytes)", got.Len(), len(wantBytes))
			}
		})
	}
}

// A Spill refuses a layout with a member missing or set twice, and a
// spill file that lost bytes makes WriteTo fail naming the member.
func TestSpillErrors(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "spill")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := archive.NewSpill(f, 2)
	if err := s.Set(0, "a.o", []byte("first")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		err  func() error
		want string
	}{
		{"unset", func() error { _, err := s.Layout(); return err }, "member 1: never set"},
		{"twice", func() error { return s.Set(0, "a.o", []byte("again")) }, "set twice"},
		{"out of range", func() error { return s.Set(2, "c.o", nil) }, "out of range"},
		{"short spill", func() error {
			if err := s.Set(1, "b.o", []byte("second")); err != nil {
				return err
			}
			l, err := s.Layout()
			if err != nil {
				return err
			}
			f.Truncate(7)
			_, err = l.WriteTo(io.Discard)
			return err
		}, "member b.o: reading its 6 bytes at 5: unexpected EOF"},
	} {
		if err := tt.err(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// Open finds what Read finds wrong, and a thin archive's missing member
// before any member is read.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, data, want string
	}{
		{"empty", "", "not an ar archive"},
		{"short header", "!<arch>\nshort", "member header at 8: truncated"},
		{"bad size", "!<arch>\n" + strings.Repeat(" ", 48) + "99999999  `\n", "bad size"},
	} {
		p := filepath.Join(dir, tt.name+".a")
		os.WriteFile(p, []byte(tt.data), 0o644)
		if _, err := archive.Open(p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
		if _, err := archive.Read([]byte(tt.data)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Read: error %v, want %q", tt.name, err, tt.want)
		}
	}
	lib := thinLib(t)
	m := filepath.Join(filepath.Dir(lib), "a_member_with_a_long_file_name.o")
	os.Rename(m, m+".gone")
	if _, err := archive.Open(lib); err == nil || !strings.Contains(err.Error(), "thin archive member a_member_with_a_long_file_name.o") {
		t.Errorf("missing thin member: error %v", err)
	}
	os.WriteFile(m, []byte(archive.Magic), 0o644)
	if _, err := archive.Open(lib); err == nil || !strings.Contains(err.Error(), "is itself an archive") {
		t.Errorf("nested thin member: error %v", err)
	}
}
