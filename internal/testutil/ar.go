package testutil

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Member is one member of an ar archive.
type Member struct {
	Name string
	Data []byte
}

// ReadArchive parses a System V / GNU ar archive (with the "//" long-name
// table), skipping the symbol index.
func ReadArchive(data []byte) ([]Member, error) {
	const magic = "!<arch>\n"
	if !bytes.HasPrefix(data, []byte(magic)) {
		return nil, fmt.Errorf("not an ar archive")
	}
	var out []Member
	var names []byte
	p := len(magic)
	for p+60 <= len(data) {
		h := data[p : p+60]
		size, err := strconv.Atoi(strings.TrimSpace(string(h[48:58])))
		if err != nil || size < 0 || p+60+size > len(data) {
			return nil, fmt.Errorf("member at %d: bad size", p)
		}
		body := data[p+60 : p+60+size]
		name := strings.TrimRight(string(h[:16]), " ")
		switch {
		case name == "/" || name == "/SYM64/":
		case name == "//":
			names = body
		case strings.HasPrefix(name, "/"):
			off, err := strconv.Atoi(name[1:])
			if err != nil || off >= len(names) {
				return nil, fmt.Errorf("member at %d: bad long name", p)
			}
			end := bytes.Index(names[off:], []byte("/\n"))
			if end < 0 {
				return nil, fmt.Errorf("member at %d: bad long name", p)
			}
			out = append(out, Member{string(names[off : off+end]), body})
		default:
			out = append(out, Member{strings.TrimSuffix(name, "/"), body})
		}
		p += 60 + size
		p += p & 1
	}
	return out, nil
}
