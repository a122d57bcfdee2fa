// Package archive reads and writes ar archives (static libraries) in the
// System V / GNU format that binutils and the GNU and LLVM linkers use,
// including the "//" long-name table and the "/" symbol index linkers need
// to pull members in.
package archive

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Magic starts every ar archive; ThinMagic a thin one (GNU ar rcT), whose
// members are files named by the archive rather than stored in it.
const (
	Magic     = "!<arch>\n"
	ThinMagic = "!<thin>\n"
)

// Member is one member of an archive.
type Member struct {
	Name string
	Data []byte
	// Path is, for a member of a thin archive, the file that holds it as
	// the archive names it (relative to the archive's directory unless
	// absolute); Data is nil until ReadFile loads it. Empty otherwise.
	Path string
}

// IsArchive reports whether data is an ar archive, a regular or a thin one.
func IsArchive(data []byte) bool {
	return bytes.HasPrefix(data, []byte(Magic)) || IsThin(data)
}

// IsThin reports whether data is a thin archive.
func IsThin(data []byte) bool { return bytes.HasPrefix(data, []byte(ThinMagic)) }

// ReadFile reads the archive at path. The members of a thin archive are
// read from the files it names, relative to the archive's directory.
func ReadFile(path string) ([]Member, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ms, err := Read(data)
	if err != nil || !IsThin(data) {
		return ms, err
	}
	for i := range ms {
		p := ms[i].Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		d, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("thin archive member %s: %w", ms[i].Path, err)
		}
		if IsArchive(d) {
			return nil, fmt.Errorf("thin archive member %s: is itself an archive (nested thin archives are not supported)", ms[i].Path)
		}
		ms[i].Data = d
	}
	return ms, nil
}

// Read parses an archive, skipping its symbol index. Members keep their
// order; names may repeat. The members of a thin archive come back with
// their Path and no Data (see ReadFile).
func Read(data []byte) ([]Member, error) {
	if !IsArchive(data) {
		return nil, fmt.Errorf("not an ar archive")
	}
	thin := IsThin(data)
	var out []Member
	var names []byte
	p := len(Magic)
	for p < len(data) {
		if len(data)-p < 60 {
			return nil, fmt.Errorf("member header at %d: truncated", p)
		}
		h := data[p : p+60]
		if h[58] != '`' || h[59] != '\n' {
			return nil, fmt.Errorf("member header at %d: bad terminator", p)
		}
		size, err := strconv.Atoi(strings.TrimSpace(string(h[48:58])))
		if err != nil || size < 0 {
			return nil, fmt.Errorf("member header at %d: bad size %q", p, strings.TrimSpace(string(h[48:58])))
		}
		name := strings.TrimRight(string(h[:16]), " ")
		// In a thin archive only the symbol index and the long-name
		// table are stored; a member's size is that of its file.
		stored := !thin || name == "/" || name == "/SYM64/" || name == "//"
		if stored && size > len(data)-p-60 {
			return nil, fmt.Errorf("member header at %d: bad size %q", p, strings.TrimSpace(string(h[48:58])))
		}
		var body []byte
		if stored {
			body = data[p+60 : p+60+size]
		}
		m := Member{}
		switch {
		case name == "/" || name == "/SYM64/":
		case name == "//":
			names = body
		case strings.HasPrefix(name, "/"):
			off, err := strconv.Atoi(name[1:])
			if err != nil || off < 0 || off >= len(names) {
				return nil, fmt.Errorf("member header at %d: bad long name %q", p, name)
			}
			end := bytes.Index(names[off:], []byte("/\n"))
			if end < 0 {
				return nil, fmt.Errorf("member header at %d: unterminated long name", p)
			}
			m.Name = string(names[off : off+end])
		default:
			m.Name = strings.TrimSuffix(name, "/")
		}
		if m.Name != "" {
			if thin {
				m.Path, m.Name = m.Name, filepath.Base(m.Name)
			} else {
				m.Data = body
			}
			out = append(out, m)
		}
		p += 60
		if stored {
			p += size
		}
		p += p & 1
	}
	return out, nil
}

// Write produces an archive of the members with a symbol index of the
// global symbols their ELF objects define, as `ar rcs` would.
func Write(members []Member) ([]byte, error) {
	l, err := Prepare(members)
	if err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(make([]byte, 0, l.size))
	if _, err := l.WriteTo(out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Layout is an archive laid out, ready to be written.
type Layout struct {
	members  []Member
	hdrNames []string
	index    []byte // the symbol index's body, or nil
	names    []byte // the long-name table, or nil
	size     int64
}

// Prepare lays out the archive that Write produces (symbol index, long
// names, member offsets), so that it can be written member by member, with
// no copy of it in memory: all it can fail on is found before anything
// is written.
func Prepare(members []Member) (*Layout, error) {
	var longNames bytes.Buffer
	hdrNames := make([]string, len(members))
	for i, m := range members {
		if len(m.Name)+1 <= 16 && !strings.Contains(m.Name, "/") {
			hdrNames[i] = m.Name + "/"
			continue
		}
		hdrNames[i] = "/" + strconv.Itoa(longNames.Len())
		longNames.WriteString(m.Name + "/\n")
	}
	type entry struct {
		name   string
		member int
	}
	var syms []entry
	for i, m := range members {
		for _, s := range definedSymbols(m.Data) {
			syms = append(syms, entry{s, i})
		}
	}
	// Layout: magic, index, long names, members.
	var strtab bytes.Buffer
	for _, s := range syms {
		strtab.WriteString(s.name)
		strtab.WriteByte(0)
	}
	indexSize := 4 + 4*len(syms) + strtab.Len()
	pos := len(Magic)
	if len(syms) > 0 {
		pos += 60 + indexSize + indexSize&1
	}
	if longNames.Len() > 0 {
		pos += 60 + longNames.Len() + longNames.Len()&1
	}
	offsets := make([]int, len(members))
	for i, m := range members {
		offsets[i] = pos
		pos += 60 + len(m.Data) + len(m.Data)&1
	}
	if pos > 1<<32-1 {
		return nil, fmt.Errorf("archive too large for a 32-bit symbol index")
	}
	l := &Layout{members: members, hdrNames: hdrNames, names: longNames.Bytes(), size: int64(pos)}
	if len(syms) > 0 {
		body := make([]byte, 4, indexSize)
		binary.BigEndian.PutUint32(body, uint32(len(syms)))
		for _, s := range syms {
			body = binary.BigEndian.AppendUint32(body, uint32(offsets[s.member]))
		}
		l.index = append(body, strtab.Bytes()...)
	}
	return l, nil
}

// Size is the size of the archive in bytes.
func (l *Layout) Size() int64 { return l.size }

// WriteTo writes the archive to w and returns the bytes written.
func (l *Layout) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := &countWriter{w: bw}
	cw.WriteString(Magic)
	if l.index != nil {
		writeMember(cw, "/", l.index)
	}
	if len(l.names) > 0 {
		writeMember(cw, "//", l.names)
	}
	for i, m := range l.members {
		writeMember(cw, l.hdrNames[i], m.Data)
	}
	if cw.err == nil {
		cw.err = bw.Flush()
	}
	return cw.n, cw.err
}

// countWriter counts what it writes and keeps the first error, after
// which it writes nothing.
type countWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// WriteString is Write of a string, without the error (kept).
func (c *countWriter) WriteString(s string) {
	if c.err == nil {
		n, err := c.w.WriteString(s)
		c.n += int64(n)
		c.err = err
	}
}

func writeMember(out *countWriter, name string, data []byte) {
	mode := "644"
	if name == "/" || name == "//" {
		mode = "0"
	}
	// The name field is 16 bytes; fmt pads by runes, which made a name
	// with multi-byte UTF-8 (café.o) overflow the header.
	out.WriteString(name)
	out.WriteString(strings.Repeat(" ", max(16-len(name), 0)))
	if name == "//" {
		fmt.Fprintf(out, "%-12s%-6s%-6s%-8s%-10d`\n", "", "", "", "", len(data))
	} else {
		fmt.Fprintf(out, "%-12d%-6d%-6d%-8s%-10d`\n", 0, 0, 0, mode, len(data))
	}
	out.Write(data)
	if len(data)&1 == 1 {
		out.WriteString("\n")
	}
}

// definedSymbols lists the global and weak symbols an ELF object defines,
// in symbol-table order (what `ar s` indexes). Non-ELF members have none.
func definedSymbols(data []byte) []string {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range syms {
		b := elf.ST_BIND(s.Info)
		if (b == elf.STB_GLOBAL || b == elf.STB_WEAK || b == stbGNUUnique) && s.Section != elf.SHN_UNDEF && s.Name != "" {
			out = append(out, s.Name)
		}
	}
	return out
}

// SortedNames returns the member names, for messages and tests.
func SortedNames(ms []Member) []string {
	var n []string
	for _, m := range ms {
		n = append(n, m.Name)
	}
	sort.Strings(n)
	return n
}

// stbGNUUnique is STB_GNU_UNIQUE, which debug/elf does not name.
const stbGNUUnique = elf.SymBind(10)
