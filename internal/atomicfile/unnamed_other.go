//go:build !linux

package atomicfile

import "io"

// writeUnnamed reports that unnamed files are not used here: every file is
// written the named way.
func writeUnnamed(path, target, pattern string, named func(), write func(io.Writer) error) (done bool, err error) {
	return false, nil
}
