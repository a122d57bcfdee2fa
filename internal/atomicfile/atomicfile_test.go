package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// node makes a special file in the test's own directory (never aim a
// writing test at the real /dev/null or /dev/full).
func node(t *testing.T, path string, mode uint32, major, minor int) {
	t.Helper()
	if err := syscall.Mknod(path, mode, major<<8|minor); err != nil {
		t.Skipf("mknod %s: %v (needs root)", path, err)
	}
}

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

var errFailed = errors.New("write failed")

func failing(w io.Writer) error { io.WriteString(w, "partial"); return errFailed }

func TestWrite(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string) // makes dir/out (and more)
		write func(io.Writer) error
		// expectations
		err     error       // errors.Is; nil: success
		content string      // of dir/out (through links), "" to skip
		mode    fs.FileMode // of dir/out after (Lstat), 0 to skip
		files   int         // entries in dir afterwards (no temporary left)
	}{
		{name: "new file gets 0666 minus umask",
			setup: func(t *testing.T, dir string) {},
			write: writeString("new"), content: "new", mode: 0o640, files: 1},
		{name: "failure creates nothing",
			setup: func(t *testing.T, dir string) {},
			write: failing, err: errFailed, files: 0},
		{name: "existing file keeps its mode",
			setup: func(t *testing.T, dir string) { mustWrite(t, dir+"/out", "old", 0o751) },
			write: writeString("new"), content: "new", mode: 0o751, files: 1},
		{name: "set-id bits kept",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, dir+"/out", "old", 0o755)
				os.Chmod(dir+"/out", 0o755|fs.ModeSetgid)
			},
			write: writeString("new"), content: "new", mode: 0o755 | fs.ModeSetgid, files: 1},
		{name: "failure keeps the old file",
			setup: func(t *testing.T, dir string) { mustWrite(t, dir+"/out", "old", 0o600) },
			write: failing, err: errFailed, content: "old", mode: 0o600, files: 1},
		{name: "symlink: target replaced, link kept",
			setup: func(t *testing.T, dir string) {
				os.Mkdir(dir+"/sub", 0o755)
				mustWrite(t, dir+"/sub/real", "old", 0o644)
				mustLink(t, "sub/real", dir+"/out")
			},
			write: writeString("new"), content: "new", mode: fs.ModeSymlink | 0o777, files: 2},
		{name: "chain of symlinks",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, dir+"/real", "old", 0o644)
				mustLink(t, "real", dir+"/l1")
				mustLink(t, dir+"/l1", dir+"/out")
			},
			write: writeString("new"), content: "new", mode: fs.ModeSymlink | 0o777, files: 3},
		{name: "dangling symlink: target created",
			setup: func(t *testing.T, dir string) { mustLink(t, "made", dir+"/out") },
			write: writeString("new"), content: "new", mode: fs.ModeSymlink | 0o777, files: 2},
		{name: "symlink loop",
			setup: func(t *testing.T, dir string) { mustLink(t, "out", dir+"/out") },
			write: writeString("new"), err: syscall.ELOOP, mode: fs.ModeSymlink | 0o777, files: 1},
		{name: "directory",
			setup: func(t *testing.T, dir string) { os.Mkdir(dir+"/out", 0o755) }, // (minus the umask)
			write: writeString("new"), err: ErrIsDir, mode: fs.ModeDir | 0o750, files: 1},
		{name: "character device written into",
			setup: func(t *testing.T, dir string) { node(t, dir+"/out", syscall.S_IFCHR|0o666, 1, 3) },
			write: writeString("new"), mode: fs.ModeDevice | fs.ModeCharDevice | 0o640, files: 1},
		{name: "full device: error, node kept",
			setup: func(t *testing.T, dir string) { node(t, dir+"/out", syscall.S_IFCHR|0o666, 1, 7) },
			write: writeString("new"), err: syscall.ENOSPC, mode: fs.ModeDevice | fs.ModeCharDevice | 0o640, files: 1},
		{name: "block device refused",
			setup: func(t *testing.T, dir string) { node(t, dir+"/out", syscall.S_IFBLK|0o600, 7, 200) },
			write: writeString("new"), err: ErrBlockDevice, mode: fs.ModeDevice | 0o600, files: 1},
		{name: "socket refused",
			setup: func(t *testing.T, dir string) {
				l, err := net.Listen("unix", dir+"/out")
				if err != nil {
					t.Skip(err)
				}
				t.Cleanup(func() { l.Close() })
			},
			write: writeString("new"), err: ErrSocket, files: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			path := dir + "/out"
			err := Write(path, ".test-*", tt.write)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err != nil {
				var pe *fs.PathError
				if !errors.As(err, &pe) || pe.Path != path {
					t.Errorf("error %q does not name %s as its path", err, path)
				}
				if strings.Contains(err.Error(), ".test-") {
					t.Errorf("error %q names the temporary file", err)
				}
			}
			if tt.content != "" {
				if got, _ := os.ReadFile(path); string(got) != tt.content {
					t.Errorf("content %q, want %q", got, tt.content)
				}
			}
			if tt.mode != 0 {
				if fi, err := os.Lstat(path); err != nil || fi.Mode() != tt.mode {
					t.Errorf("mode %v (%v), want %v", fi.Mode(), err, tt.mode)
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != tt.files {
				t.Errorf("%d entries in the directory, want %d (a temporary left behind?)", len(ents), tt.files)
			}
		})
	}
}

// A fifo is written into (a reader gets the bytes), not replaced.
func TestWriteFifo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skip(err)
	}
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(path)
		got <- string(b)
	}()
	if err := Write(path, ".test-*", writeString("through")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through" {
		t.Errorf("reader got %q", s)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("fifo replaced: %v %v", fi.Mode(), err)
	}
}

// Errors about a missing directory name the caller's path.
func TestWriteMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "out")
	err := Write(path, ".test-*", writeString("x"))
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), ".test-") {
		t.Fatalf("error %v", err)
	}
}

func mustWrite(t *testing.T, path, s string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func mustLink(t *testing.T, to, path string) {
	t.Helper()
	if err := os.Symlink(to, path); err != nil {
		t.Fatal(err)
	}
}

// A signal during a write: RemoveTemporaries removes the temporary file of
// the write in progress (the command then ends; the destination is as it
// was).
func TestRemoveTemporaries(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir+"/out", "old", 0o644)
	var during []os.DirEntry
	Write(dir+"/out", ".test-*", func(w io.Writer) error {
		io.WriteString(w, "partial")
		RemoveTemporaries()
		during, _ = os.ReadDir(dir)
		return errFailed
	})
	if len(during) != 1 || during[0].Name() != "out" {
		t.Errorf("after RemoveTemporaries the directory holds %v, want only out", during)
	}
	if got, _ := os.ReadFile(dir + "/out"); string(got) != "old" {
		t.Errorf("out is %q", got)
	}
}

// TempFile gives a file that holds what is written to it and has no name
// in its directory; a directory it cannot use is an error naming it.
func TestTempFile(t *testing.T) {
	dir := t.TempDir()
	f, err := TempFile(dir, ".test-*", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("spilled"), 3); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := f.ReadAt(buf, 3); err != nil || string(buf) != "spilled" {
		t.Fatalf("read back %q, %v", buf, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d names in the directory, want none", len(ents))
	}
	missing := filepath.Join(dir, "missing")
	_, err = TempFile(missing, ".test-*", nil)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: error %v", err)
	}
}
