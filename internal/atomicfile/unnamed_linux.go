package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"
)

// oTmpfile is O_TMPFILE (with O_DIRECTORY, as the kernel wants it), the
// same on every architecture Go supports on Linux but sparc and alpha;
// package syscall predates it.
const oTmpfile = 0x410000

// atSymlinkFollow is AT_SYMLINK_FOLLOW, for linkat of /proc/self/fd/N.
const atSymlinkFollow = 0x400

// writeUnnamed writes a new file at target as an unnamed file in its
// directory, linked in at target once complete. done is false when the
// directory has no unnamed files: nothing was written, and the caller goes
// the named way. A file that cannot be linked in (target appeared
// meanwhile, /proc is not mounted) is copied the named way, after named.
func writeUnnamed(path, target, pattern string, named func(), write func(io.Writer) error) (done bool, err error) {
	dir := filepath.Dir(target)
	fd, err := syscall.Open(dir, oTmpfile|syscall.O_RDWR|syscall.O_CLOEXEC, 0o666) // minus the umask
	if err != nil {
		return false, nil
	}
	f := os.NewFile(uintptr(fd), target)
	defer f.Close()
	if err := write(f); err != nil {
		return true, &fs.PathError{Op: "write", Path: path, Err: unwrapPath(err)}
	}
	switch err := linkat("/proc/self/fd/"+strconv.Itoa(fd), target); {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrExist), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EXDEV):
		named()
		return true, replaceFrom(path, target, pattern, f)
	default:
		return true, &fs.PathError{Op: "create", Path: path, Err: fmt.Errorf("in directory %s: %w", dir, err)}
	}
}

// openUnnamed opens an unnamed file in dir for reading and writing, or
// returns nil where dir has no unnamed files (or cannot be used: the
// caller goes the named way, which reports why).
func openUnnamed(dir string) *os.File {
	fd, err := syscall.Open(dir, oTmpfile|syscall.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, "(unnamed)"))
}

// replaceFrom writes the content of the unnamed file f to target the named
// way (replace), for when f cannot be linked in.
func replaceFrom(path, target, pattern string, f *os.File) error {
	fi, err := os.Stat(target)
	if err != nil {
		fi = nil
	}
	return replace(path, target, fi, pattern, func(w io.Writer) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		_, err := io.Copy(w, f)
		return err
	})
}

// linkat links the file that oldpath names (a /proc/self/fd link,
// followed) at newpath.
func linkat(oldpath, newpath string) error {
	o, err := syscall.BytePtrFromString(oldpath)
	if err != nil {
		return err
	}
	n, err := syscall.BytePtrFromString(newpath)
	if err != nil {
		return err
	}
	cwd := atFDCWD
	_, _, errno := syscall.Syscall6(syscall.SYS_LINKAT, uintptr(cwd), uintptr(unsafe.Pointer(o)),
		uintptr(cwd), uintptr(unsafe.Pointer(n)), atSymlinkFollow, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// atFDCWD is AT_FDCWD.
const atFDCWD = -100
