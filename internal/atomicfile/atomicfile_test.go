package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("write failed")
	for _, tt := range []struct {
		name    string
		write   func(io.Writer) error
		err     error
		content string
	}{
		{"error keeps the old file", func(w io.Writer) error { io.WriteString(w, "partial"); return failed }, failed, "old"},
		{"success replaces it", func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, nil, "new"},
	} {
		err := Write(path, ".test-*", tt.write)
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != tt.content {
			t.Errorf("%s: content %q, want %q", tt.name, got, tt.content)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: %d files in the directory, want 1 (no temporary left)", tt.name, len(ents))
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", fi.Mode().Perm(), err)
	}
}
