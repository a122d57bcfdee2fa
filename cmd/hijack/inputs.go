package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"hijack/archive"
)

// objectInput is one relocatable object to read: a file given on the
// command line, or a member of an archive.
type objectInput struct {
	name string // for messages: "foo.o", or "libfoo.a(bar.o)"
	data []byte
}

// readObjects reads the file at p: an object, or the members of an archive
// (a thin one too) whose names match the glob member. inArchive says
// which it was. Errors name p.
func readObjects(p, member string) (objs []objectInput, inArchive bool, err error) {
	data, err := readInput(p)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", p, err)
	}
	if !archive.IsArchive(data) {
		return []objectInput{{p, data}}, false, nil
	}
	var ms []archive.Member
	if archive.IsThin(data) {
		ms, err = archive.ReadFile(p)
	} else {
		ms, err = archive.Read(data)
	}
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", p, err)
	}
	for _, m := range ms {
		if ok, _ := path.Match(member, m.Name); ok {
			objs = append(objs, objectInput{fmt.Sprintf("%s(%s)", p, m.Name), m.Data})
		}
	}
	if len(objs) == 0 {
		return nil, true, fmt.Errorf("%s: no member matches %q (%d members)", p, member, len(ms))
	}
	return objs, true, nil
}

// maxInput bounds the files hijack reads into memory: no real object or
// static library comes near it, while a corrupt or sparse file (gas writes
// a terabyte, mostly holes, for .p2align 40) would exhaust memory before
// any check of its content ran.
const maxInput = 4 << 30

// readInput reads an input file whole, refusing one larger than maxInput.
// Errors do not name the path (the caller does).
func readInput(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	return readOpened(f, fi, err)
}

// readOpened is readInput for the file f, open already, and what its Stat
// returned.
func readOpened(f *os.File, fi os.FileInfo, err error) ([]byte, error) {
	if err == nil && fi.Mode().IsRegular() && fi.Size() > maxInput {
		return nil, fmt.Errorf("%d bytes: larger than any object or archive hijack reads (%d GiB)", fi.Size(), maxInput>>30)
	} else if err == nil && fi.IsDir() {
		return nil, errors.New("is a directory")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxInput+1))
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("more than %d GiB: larger than any object or archive hijack reads", maxInput>>30)
	}
	return data, nil
}
