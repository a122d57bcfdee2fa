// Package atomicfile writes an output file the way a careful compiler or
// objcopy does: a regular file is replaced atomically (the content goes to
// a temporary file in the same directory, which is renamed over the
// destination only once it is complete, with the destination's
// permissions), so that the path is either the old file or the complete new
// one; special files (character devices such as /dev/null, fifos) are
// written into, never replaced; nothing else at the path is ever removed.
//
// The rules, which hijack's documentation repeats:
//   - a new path is created with mode 0666 minus the umask, as cc -o does;
//   - an existing regular file is replaced, keeping its permission bits and,
//     where the caller may set them, its owner and group;
//   - a symbolic link is followed (as many links as the kernel would) and the
//     file it names is replaced or created; the link itself stays;
//   - a character device or a fifo is opened for writing and written into;
//   - a directory, a block device or a socket is an error;
//   - on any error the path is left exactly as it was (for special files,
//     what was written before the error stays written, as with cc).
//
// A new file is written, where the file system allows it (Linux O_TMPFILE:
// ext4, xfs, btrfs, tmpfs, ...), as an unnamed file that is linked in at
// its path once complete: no temporary name exists at any time, so no
// signal, not even SIGKILL, leaves one behind, and the caller need not
// watch for signals (os/signal starts three threads, a quarter of the CPU
// time of a small hijack run). Replacing a file goes through a named
// temporary file, which WriteWith announces first.
//
// Errors are *fs.PathError values that name the caller's path, never the
// temporary file.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// inFlight holds the temporary files being written, so that a command
// interrupted by a signal can remove them (RemoveTemporaries). It is the
// package's only state: signals are the process's.
var inFlight sync.Map // name -> struct{}

// RemoveTemporaries removes the temporary files of the writes in progress.
// A command calls it when a signal ends it, so that an interrupted write
// leaves nothing behind either.
func RemoveTemporaries() {
	inFlight.Range(func(k, _ any) bool {
		os.Remove(k.(string))
		return true
	})
}

// maxLinks bounds the symbolic links followed, as the kernel's ELOOP does.
const maxLinks = 40

// Errors for destinations that are never written.
var (
	ErrIsDir       = errors.New("is a directory")
	ErrBlockDevice = errors.New("is a block device; refusing to write into it")
	ErrSocket      = errors.New("is a socket")
)

// Write writes what write produces to path following the package's rules.
// pattern names the temporary file as os.CreateTemp takes it ("*" is
// replaced by a random string); it is created in the destination's
// directory and removed on any error.
func Write(path, pattern string, write func(io.Writer) error) error {
	return WriteWith(path, pattern, nil, write)
}

// WriteWith is Write that calls named, if not nil, before it creates a
// temporary file with a name (to replace an existing file, or where the
// directory has no unnamed files): the moment from which a signal that
// ends the process should be followed by RemoveTemporaries. Writes that
// never name a temporary file never call it.
func WriteWith(path, pattern string, named func(), write func(io.Writer) error) error {
	if named == nil {
		named = func() {}
	}
	target, err := Resolve(path)
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	fi, err := os.Stat(target)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return &fs.PathError{Op: "write", Path: path, Err: unwrapPath(err)}
	case err != nil:
		if done, err := writeUnnamed(path, target, pattern, named, write); done {
			return err
		}
		named()
		return replace(path, target, nil, pattern, write)
	case fi.IsDir():
		return &fs.PathError{Op: "write", Path: path, Err: ErrIsDir}
	case fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0:
		return &fs.PathError{Op: "write", Path: path, Err: ErrBlockDevice}
	case fi.Mode()&fs.ModeSocket != 0:
		return &fs.PathError{Op: "write", Path: path, Err: ErrSocket}
	case !fi.Mode().IsRegular():
		return writeInto(path, target, write)
	}
	named()
	return replace(path, target, fi, pattern, write)
}

// TempFile returns a temporary file in dir, open for reading and writing,
// that has no name: closing it (or the process's end, whatever ends it)
// frees its space, and nothing is ever left behind to remove. Where dir's
// file system has unnamed files (Linux O_TMPFILE) it never has a name;
// elsewhere it is created with a name from pattern (as Write's) and
// removed at once, after named is called (see WriteWith) and while
// RemoveTemporaries would remove it. The error is an *fs.PathError that
// names dir.
func TempFile(dir, pattern string, named func()) (*os.File, error) {
	if f := openUnnamed(dir); f != nil {
		return f, nil
	}
	if named != nil {
		named()
	}
	f, err := createTemp(dir, pattern, 0o600)
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: dir, Err: unwrapPath(err)}
	}
	inFlight.Store(f.Name(), struct{}{})
	err = os.Remove(f.Name())
	inFlight.Delete(f.Name())
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, &fs.PathError{Op: "create", Path: dir, Err: unwrapPath(err)}
	}
	return f, nil
}

// Resolve follows the symbolic links that path names, one after the other,
// and returns the path of the file at the end of the chain, which may not
// exist yet (a dangling link names the file to create). Links in the
// directories above are left to the kernel.
func Resolve(path string) (string, error) {
	p := path
	for i := 0; i < maxLinks; i++ {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", unwrapPath(err)
			}
			return p, nil
		}
		to, err := os.Readlink(p)
		if err != nil {
			return "", unwrapPath(err)
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(p), to)
		}
		p = to
	}
	return "", syscall.ELOOP
}

// replace writes a temporary file beside target and renames it over target.
// old describes the file it replaces (nil: a new file).
func replace(path, target string, old fs.FileInfo, pattern string, write func(io.Writer) error) (err error) {
	perm := fs.FileMode(0o666) // minus the umask, as open(2) applies it
	if old != nil {
		perm = 0o600 // until the content is complete; then the old mode
	}
	tmp, err := createTemp(filepath.Dir(target), pattern, perm)
	if err != nil {
		return &fs.PathError{Op: "create", Path: path, Err: fmt.Errorf("in directory %s: %w", filepath.Dir(target), unwrapPath(err))}
	}
	inFlight.Store(tmp.Name(), struct{}{})
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
		inFlight.Delete(tmp.Name())
	}()
	werr := write(tmp)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return &fs.PathError{Op: "write", Path: path, Err: unwrapPath(werr)}
	}
	if old != nil {
		keepOwnerAndMode(tmp.Name(), old)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return &fs.PathError{Op: "replace", Path: path, Err: unwrapPath(err)}
	}
	return nil
}

// keepOwnerAndMode gives the new file the replaced file's owner, group and
// mode. The owner is best effort (only root may give files away; the mode
// is still set); chown comes first because it clears set-id bits.
func keepOwnerAndMode(name string, old fs.FileInfo) {
	if st, ok := old.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		os.Lchown(name, int(st.Uid), int(st.Gid))
	}
	os.Chmod(name, old.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
}

// createTemp is os.CreateTemp with a chosen mode (CreateTemp always uses
// 0600, which would leave new outputs unreadable to the group).
func createTemp(dir, pattern string, perm fs.FileMode) (*os.File, error) {
	prefix, suffix := pattern, ""
	for i := len(pattern) - 1; i >= 0; i-- {
		if pattern[i] == '*' {
			prefix, suffix = pattern[:i], pattern[i+1:]
			break
		}
	}
	var err error
	for range 100 {
		name := filepath.Join(dir, fmt.Sprintf("%s%d%s", prefix, rand.Uint32(), suffix))
		var f *os.File
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, err
}

// writeInto writes into a special file (a character device, a fifo) the
// way cc -o does: opened for writing, not created, not truncated, never
// replaced or removed.
func writeInto(path, target string, write func(io.Writer) error) error {
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: unwrapPath(err)}
	}
	werr := write(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return &fs.PathError{Op: "write", Path: path, Err: unwrapPath(werr)}
	}
	return nil
}

// unwrapPath drops the path an *fs.PathError or *os.LinkError names (a
// temporary file, or the resolved target) so that the caller's path can
// be named instead.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
