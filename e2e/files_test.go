package e2e

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// File safety: whatever hijack is asked to write, and whether it succeeds
// or fails, it never destroys what the user had. A failed command leaves
// every path as it was; a special file at the output path is written into,
// never replaced; a regular file is replaced atomically and keeps its
// permissions; links, directories and OUT == IN have the documented
// behaviour (hijack help files). Special files are nodes this test makes
// in its own directory (never the real /dev/null or /dev/full).

// fileState is what the test compares before and after a command.
type fileState struct {
	exists  bool
	mode    fs.FileMode
	ino     uint64
	content string // hash of a regular file's content
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		return fileState{}
	}
	s := fileState{exists: true, mode: fi.Mode(), ino: fi.Sys().(*syscall.Stat_t).Ino}
	if fi.Mode().IsRegular() {
		b, _ := os.ReadFile(path)
		s.content = hashStrings(string(b))
	}
	return s
}

func (s fileState) String() string {
	if !s.exists {
		return "absent"
	}
	return fmt.Sprintf("%v inode %d content %.8s", s.mode, s.ino, s.content)
}

func mknod(t *testing.T, path string, mode uint32, major, minor int) {
	t.Helper()
	if err := syscall.Mknod(path, mode, major<<8|minor); err != nil {
		if cfg.ci {
			t.Fatalf("mknod %s: %v", path, err)
		}
		t.Skipf("mknod %s: %v (needs root)", path, err)
	}
}

func TestOutputFiles(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in does not implement the output rules")
	}
	pad := filepath.Join(cfg.root, "testdata", "rules", "pad.yaml")
	obj := compile(t, "gcc", []string{"-O2"}, testdata("demo", "hashtab.c"))
	good, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte("this is not an object\n")
	isObject := func(b []byte) bool {
		f, err := elf.NewFile(bytes.NewReader(b))
		return err == nil && f.Type == elf.ET_REL
	}
	type tcase struct {
		name string
		// setup makes the files in dir; "in.o" is always a good object
		// and "bad.o" garbage.
		setup func(t *testing.T, dir string)
		args  []string // after -rules pad.yaml
		fail  bool     // the command must fail (exit 1, one line naming want)
		want  string   // substring of the error line
		// unchanged lists paths that must be exactly as before; check
		// runs further checks after the command.
		unchanged []string
		check     func(t *testing.T, dir string, stdout []byte)
	}
	rewritten := func(path string) func(t *testing.T, dir string, _ []byte) {
		return func(t *testing.T, dir string, _ []byte) {
			b, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil || !isObject(b) || bytes.Equal(b, good) {
				t.Errorf("%s is not a rewritten object (%d bytes, %v)", path, len(b), err)
			}
		}
	}
	cases := []tcase{
		{name: "swapped arguments keep the object",
			setup: func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "foo.o"), good) },
			args:  []string{"foo.inst.o", "foo.o"}, fail: true, want: "foo.inst.o",
			unchanged: []string{"foo.o", "foo.inst.o"}},
		{name: "bad input keeps the existing output",
			setup: func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "out.o"), []byte("precious")) },
			args:  []string{"bad.o", "out.o"}, fail: true, want: "bad.o",
			unchanged: []string{"out.o"}},
		{name: "bad input keeps a device node",
			setup: func(t *testing.T, dir string) { mknod(t, filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1, 3) },
			args:  []string{"bad.o", "null"}, fail: true, want: "bad.o",
			unchanged: []string{"null"}},
		{name: "null device written into",
			setup: func(t *testing.T, dir string) { mknod(t, filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1, 3) },
			args:  []string{"in.o", "null"}, unchanged: []string{"null"}},
		{name: "full device: write error, node kept",
			setup: func(t *testing.T, dir string) { mknod(t, filepath.Join(dir, "full"), syscall.S_IFCHR|0o666, 1, 7) },
			args:  []string{"in.o", "full"}, fail: true, want: "full: cannot write: no space left on device",
			unchanged: []string{"full"}},
		{name: "block device refused",
			setup: func(t *testing.T, dir string) { mknod(t, filepath.Join(dir, "blk"), syscall.S_IFBLK|0o600, 7, 250) },
			args:  []string{"in.o", "blk"}, fail: true, want: "blk: cannot write: is a block device",
			unchanged: []string{"blk"}},
		{name: "directory refused",
			setup: func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "outdir"), 0o755) },
			args:  []string{"in.o", "outdir"}, fail: true, want: "outdir: cannot write: is a directory",
			unchanged: []string{"outdir"}},
		{name: "missing directory named, not a temporary",
			setup: func(t *testing.T, dir string) {},
			args:  []string{"in.o", "nodir/out.o"}, fail: true, want: "nodir/out.o: cannot create: in directory nodir: no such file or directory"},
		{name: "existing output keeps its mode",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "out.o"), []byte("old"))
				os.Chmod(filepath.Join(dir, "out.o"), 0o751)
			},
			args: []string{"in.o", "out.o"},
			check: func(t *testing.T, dir string, _ []byte) {
				rewritten("out.o")(t, dir, nil)
				if fi, err := os.Stat(filepath.Join(dir, "out.o")); err != nil || fi.Mode() != 0o751 {
					t.Errorf("mode %v, want -rwxr-x--x (%v)", fi.Mode(), err)
				}
			}},
		{name: "new output gets 0666 minus the umask",
			setup: func(t *testing.T, dir string) {},
			args:  []string{"in.o", "new.o"},
			check: func(t *testing.T, dir string, _ []byte) {
				rewritten("new.o")(t, dir, nil)
				// the test process's umask, which the hijack process inherits
				mask := syscall.Umask(0)
				syscall.Umask(mask)
				want := fs.FileMode(0o666 &^ mask)
				if fi, err := os.Stat(filepath.Join(dir, "new.o")); err != nil || fi.Mode() != want {
					t.Errorf("mode %v, want %v (%v)", fi.Mode(), want, err)
				}
			}},
		{name: "symlink followed, link kept",
			setup: func(t *testing.T, dir string) {
				os.Mkdir(filepath.Join(dir, "objs"), 0o755)
				writeFile(t, filepath.Join(dir, "objs", "real.o"), []byte("old"))
				os.Symlink("objs/real.o", filepath.Join(dir, "link.o"))
			},
			args: []string{"in.o", "link.o"}, unchanged: []string{"link.o"},
			check: rewritten("objs/real.o")},
		{name: "dangling symlink creates its target",
			setup: func(t *testing.T, dir string) { os.Symlink("made.o", filepath.Join(dir, "link.o")) },
			args:  []string{"in.o", "link.o"}, unchanged: []string{"link.o"},
			check: rewritten("made.o")},
		{name: "output is the input: rewritten in place",
			setup: func(t *testing.T, dir string) {}, args: []string{"in.o", "in.o"},
			check: rewritten("in.o")},
		{name: "output is the input through a link",
			setup: func(t *testing.T, dir string) { os.Symlink("in.o", filepath.Join(dir, "alias.o")) },
			args:  []string{"in.o", "alias.o"}, unchanged: []string{"alias.o"},
			check: rewritten("in.o")},
	}
	if fifoOK := syscall.Mkfifo(filepath.Join(t.TempDir(), "probe"), 0o644) == nil; fifoOK {
		cases = append(cases, tcase{name: "fifo written into",
			setup: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "pipe")
				syscall.Mkfifo(p, 0o644)
				got := make(chan []byte, 1)
				go func() { b, _ := os.ReadFile(p); got <- b }()
				t.Cleanup(func() {
					select {
					case b := <-got:
						if !isObject(b) {
							t.Errorf("the fifo's reader got %d bytes, not an object", len(b))
						}
					case <-time.After(time.Minute):
						t.Errorf("nothing was written into the fifo")
					}
				})
			},
			args: []string{"in.o", "pipe"}, unchanged: []string{"pipe"}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := workDir(t)
			writeFile(t, filepath.Join(dir, "in.o"), good)
			writeFile(t, filepath.Join(dir, "bad.o"), garbage)
			tc.setup(t, dir)
			before := map[string]fileState{}
			for _, p := range tc.unchanged {
				before[p] = stateOf(t, filepath.Join(dir, p))
			}
			listBefore := listDir(t, dir)
			args := append([]string{"-rules", pad}, tc.args...)
			r := mustRun(t, spec{Dir: dir, Timeout: time.Minute}, cfg.hijack, args...)
			what := cmdline("hijack", args...)
			lines := strings.Split(strings.TrimSuffix(string(r.Stderr), "\n"), "\n")
			switch {
			case tc.fail && r.Exit != 1:
				t.Errorf("%s: %s, want exit 1\n%s", what, r.status(), tail(r.Stderr, 2000))
			case tc.fail && (len(lines) != 1 || !strings.HasPrefix(lines[0], "hijack: ") || !strings.Contains(lines[0], tc.want)):
				t.Errorf("%s: want one line \"hijack: ...%s...\", got:\n%s", what, tc.want, r.Stderr)
			case tc.fail && strings.Contains(string(r.Stderr), ".hijack-"):
				t.Errorf("%s: the message names a temporary file: %s", what, r.Stderr)
			case !tc.fail && r.Exit != 0:
				t.Errorf("%s: %s\n%s", what, r.status(), tail(r.Stderr, 2000))
			}
			for p, was := range before {
				if now := stateOf(t, filepath.Join(dir, p)); now != was {
					t.Errorf("%s: %s changed: was %v, now %v", what, p, was, now)
				}
			}
			if tc.fail {
				if after := listDir(t, dir); after != listBefore {
					t.Errorf("%s: failed but changed the directory: before [%s], after [%s]", what, listBefore, after)
				}
			} else if strings.Contains(listDir(t, dir), ".hijack-") {
				t.Errorf("%s: a temporary file was left: %s", what, listDir(t, dir))
			}
			if tc.check != nil {
				tc.check(t, dir, r.Stdout)
			}
		})
	}
}

// hijack cc: the compiler-probe idiom (-o /dev/null) works and keeps the
// node; a failed rewrite deletes only the regular file the compiler wrote.
func TestCCOutputFiles(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in has no cc mode")
	}
	dir := workDir(t)
	src := filepath.Join(dir, "probe.c")
	writeFile(t, src, []byte("int probe(int x) { return x * 3; }\nint main(void) { return probe(0); }\n"))
	null := filepath.Join(dir, "null")
	mknod(t, null, syscall.S_IFCHR|0o666, 1, 3)
	was := stateOf(t, null)
	for _, args := range [][]string{
		{"-c", "probe.c", "-o", "null"},
		{"-c", "probe.c", "-onull"},
		{"-c", "-x", "c", "probe.c", "-o", "null"},
		{"probe.c", "-o", "null"},
		{"-flto", "-c", "probe.c", "-o", "null"},
	} {
		cmd := append([]string{"cc", "-p", "pad", "--", "gcc"}, args...)
		r := mustRun(t, spec{Dir: dir, Timeout: time.Minute}, cfg.hijack, cmd...)
		if r.Exit != 0 {
			t.Errorf("%s: %s\n%s", cmdline("hijack", cmd...), r.status(), tail(r.Stderr, 2000))
		}
		if now := stateOf(t, null); now != was {
			t.Errorf("%s: the device node changed: was %v, now %v", cmdline("hijack", cmd...), was, now)
		}
	}
	// stdin source, as configure-style probes pipe it
	cmd := []string{"cc", "-p", "pad", "--", "gcc", "-x", "c", "-", "-o", "null"}
	r := mustRun(t, spec{Dir: dir, Stdin: []byte("int main(void){return 0;}\n"), Timeout: time.Minute}, cfg.hijack, cmd...)
	if r.Exit != 0 || stateOf(t, null) != was {
		t.Errorf("%s: %s, node %v\n%s", cmdline("hijack", cmd...), r.status(), stateOf(t, null), tail(r.Stderr, 2000))
	}
	// -o - writes the rewritten object to stdout
	cmd = []string{"cc", "-p", "pad", "--", "gcc", "-c", "probe.c", "-o", "-"}
	r = mustRun(t, spec{Dir: dir, Timeout: time.Minute}, cfg.hijack, cmd...)
	if f, err := elf.NewFile(bytes.NewReader(r.Stdout)); r.Exit != 0 || err != nil || f.Section(".text") == nil {
		t.Errorf("%s: %s, stdout not an object (%v)\n%s", cmdline("hijack", cmd...), r.status(), err, tail(r.Stderr, 2000))
	}
	// -flto is dropped, said once, and the object is rewritten machine code
	cmd = []string{"cc", "-p", "pad", "--", "gcc", "-O2", "-flto", "-ffat-lto-objects", "-c", "probe.c", "-o", "lto.o"}
	r = mustRun(t, spec{Dir: dir, Timeout: time.Minute}, cfg.hijack, cmd...)
	if r.Exit != 0 || strings.Count(string(r.Stderr), "dropped") != 1 {
		t.Errorf("%s: %s, want exit 0 and one warning\n%s", cmdline("hijack", cmd...), r.status(), tail(r.Stderr, 2000))
	}
	if f, err := elf.Open(filepath.Join(dir, "lto.o")); err != nil {
		t.Error(err)
	} else {
		for _, s := range f.Sections {
			if strings.HasPrefix(s.Name, ".gnu.lto_") {
				t.Errorf("lto.o has LTO IR (%s): -flto was not dropped", s.Name)
			}
		}
		f.Close()
	}
}

// An interrupted hijack cc removes its temporary directory and ends by the
// signal that interrupted it.
func TestCCInterrupted(t *testing.T) {
	t.Parallel()
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in has no cc mode")
	}
	dir := workDir(t)
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	writeFile(t, filepath.Join(dir, "a.c"), []byte("int main(void) { return 0; }\n"))
	// A "compiler" that interrupts hijack cc (its parent) while compiling.
	fake := filepath.Join(dir, "fakecc")
	writeFile(t, fake, []byte("#!/bin/sh\nkill -INT $PPID\nexec sleep 3 >/dev/null 2>&1\n"))
	os.Chmod(fake, 0o755)
	r := mustRun(t, spec{Dir: dir, Env: []string{"TMPDIR=" + tmp}, Timeout: time.Minute}, cfg.hijack, "cc", "-p", "pad", "--", fake, "a.c", "-o", "app")
	if r.Signal != "interrupt" {
		t.Errorf("hijack cc: %s, want killed by interrupt", r.status())
	}
	if left := listDir(t, tmp); left != "" {
		t.Errorf("temporary files left: %s", left)
	}
}
