//go:build !linux

package atomicfile

import (
	"io"
	"os"
)

// writeUnnamed reports that unnamed files are not used here: every file is
// written the named way.
func writeUnnamed(path, target, pattern string, named func(), write func(io.Writer) error) (done bool, err error) {
	return false, nil
}

// openUnnamed reports that unnamed files are not used here.
func openUnnamed(dir string) *os.File { return nil }
