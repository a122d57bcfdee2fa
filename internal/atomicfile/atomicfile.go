// Package atomicfile writes files that are either complete or absent: the
// content goes to a temporary file in the same directory, which replaces
// the destination only once it is written and closed.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write creates path (mode 0644) with what write writes. The temporary
// file is named after pattern (as os.CreateTemp takes it) and removed on
// any error, leaving path as it was.
func Write(path, pattern string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	werr := write(tmp)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}
