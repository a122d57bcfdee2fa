package atomicfile

import (
	"io"
	"os"
	"testing"
)

// A new file is written without a name until it is complete, and WriteWith
// calls named only before it names a temporary file: to replace a file, or
// when the finished file cannot be linked in because the path appeared
// during the write (it is then replaced like any file).
func TestWriteUnnamed(t *testing.T) {
	for _, tt := range []struct {
		name       string
		existing   bool // dir/out exists before the write
		appears    bool // dir/out is created during the write
		named      int  // calls of named
		nameDuring bool // a temporary name exists during the write
	}{
		{name: "new file", named: 0},
		{name: "replacement", existing: true, named: 1, nameDuring: true},
		{name: "path appears meanwhile", appears: true, named: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.existing {
				mustWrite(t, dir+"/out", "old", 0o644)
			}
			calls := 0
			var during []os.DirEntry
			err := WriteWith(dir+"/out", ".test-*", func() { calls++ }, func(w io.Writer) error {
				if tt.appears {
					mustWrite(t, dir+"/out", "other", 0o644)
				}
				during, _ = os.ReadDir(dir)
				_, err := io.WriteString(w, "new")
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != tt.named {
				t.Errorf("named called %d times, want %d", calls, tt.named)
			}
			want := 0
			if tt.existing || tt.appears {
				want = 1
			}
			if tt.nameDuring {
				want++
			}
			if len(during) != want {
				t.Errorf("during the write the directory holds %v, want %d entries", during, want)
			}
			if got, _ := os.ReadFile(dir + "/out"); string(got) != "new" {
				t.Errorf("out is %q, want %q", got, "new")
			}
			if after, _ := os.ReadDir(dir); len(after) != 1 {
				t.Errorf("afterwards the directory holds %v", after)
			}
		})
	}
}
