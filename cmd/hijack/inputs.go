package main

import (
	"errors"
	"fmt"
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
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", p, errors.Unwrap(err))
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
