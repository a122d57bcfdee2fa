// Package archive reads and writes ar archives (static libraries) in the
// System V / GNU format that binutils and the GNU and LLVM linkers use,
// including the "//" long-name table and the "/" symbol index linkers need
// to pull members in.
//
// An archive can be handled whole in memory (Read, Write) or member by
// member (Open or NewFile to read, Spill and PrepareAt to write), so that
// what is held at any time is one member, not the archive.
package archive

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
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
	dir := filepath.Dir(path)
	for i := range ms {
		if ms[i].Data, err = readThinMember(dir, ms[i].Path); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// Read parses an archive, skipping its symbol index. Members keep their
// order; names may repeat. The members of a thin archive come back with
// their Path and no Data (see ReadFile). The members' Data are slices of
// data, not copies.
func Read(data []byte) ([]Member, error) {
	es, thin, err := scan(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	out := make([]Member, len(es))
	for i, e := range es {
		out[i] = Member{Name: e.Name, Path: e.Path}
		if !thin {
			out[i].Data = data[e.Offset : e.Offset+e.Size]
		}
	}
	return out, nil
}

// Entry describes a member of an archive without its bytes.
type Entry struct {
	Name string
	// Path is, for a member of a thin archive, the file that holds it as
	// the archive names it (see Member.Path). Empty otherwise.
	Path string
	// Offset and Size locate the member's bytes in the archive. For a
	// member of a thin archive, Offset is that of its header and Size the
	// size the header gives (that of its file when it was archived).
	Offset, Size int64
}

// File is an archive read member by member: only its member headers and
// long-name table are held in memory (see Open and NewFile).
type File struct {
	// Members are the archive's members in order (names may repeat).
	Members []Entry
	// Thin reports a thin archive, whose members are read from their
	// files.
	Thin bool

	r      io.ReaderAt
	dir    string
	closer io.Closer
}

// Open opens the archive at path to be read member by member; the
// caller closes it. The paths of a thin archive's members are relative to
// the archive's directory.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return FromFile(f, fi.Size())
}

// FromFile is Open for the archive of size bytes in f, which was opened
// by its path (thin members are relative to its directory). The File owns
// f from then on, error or not: its Close closes f.
func FromFile(f *os.File, size int64) (*File, error) {
	a, err := NewFile(f, size, filepath.Dir(f.Name()))
	if err != nil {
		f.Close()
		return nil, err
	}
	a.closer = f
	return a, nil
}

// NewFile reads the member headers of the archive of size bytes that r
// holds; the members' bytes are read from r when asked for (ReadMember).
// dir is the directory the paths of a thin archive's members are relative
// to (the archive's own). The files of a thin archive's members are
// checked now, so that a missing one is found before any work: each must
// exist and not be an archive itself.
func NewFile(r io.ReaderAt, size int64, dir string) (*File, error) {
	es, thin, err := scan(r, size)
	if err != nil {
		return nil, err
	}
	a := &File{Members: es, Thin: thin, r: r, dir: dir}
	if thin {
		for _, e := range es {
			if err := checkThinMember(dir, e.Path); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}

// ReadMember returns the bytes of member i, read from the archive or, for
// a thin archive, from the member's file (whole, whatever size the archive
// recorded). Errors name the member. It is safe for concurrent use if the
// archive's io.ReaderAt is (an *os.File is).
func (a *File) ReadMember(i int) ([]byte, error) {
	if i < 0 || i >= len(a.Members) {
		return nil, fmt.Errorf("member %d: out of range (%d members)", i, len(a.Members))
	}
	e := a.Members[i]
	if a.Thin {
		return readThinMember(a.dir, e.Path)
	}
	data := make([]byte, e.Size)
	if err := readAt(a.r, data, e.Offset); err != nil {
		return nil, fmt.Errorf("member %s at %d: %w", e.Name, e.Offset, err)
	}
	return data, nil
}

// Close closes the file Open opened; for a File of NewFile it does
// nothing (its io.ReaderAt is the caller's).
func (a *File) Close() error {
	if a.closer == nil {
		return nil
	}
	c := a.closer
	a.closer = nil
	return c.Close()
}

// thinPath is where the file of a thin archive's member is.
func thinPath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// readThinMember reads the file of a thin archive's member.
func readThinMember(dir, p string) ([]byte, error) {
	d, err := os.ReadFile(thinPath(dir, p))
	if err != nil {
		return nil, fmt.Errorf("thin archive member %s: %w", p, err)
	}
	if IsArchive(d) {
		return nil, fmt.Errorf("thin archive member %s: is itself an archive (nested thin archives are not supported)", p)
	}
	return d, nil
}

// checkThinMember checks, as readThinMember would find it, that the file
// of a thin archive's member can be read and is no archive, reading only
// its first bytes.
func checkThinMember(dir, p string) error {
	f, err := os.Open(thinPath(dir, p))
	if err != nil {
		return fmt.Errorf("thin archive member %s: %w", p, err)
	}
	defer f.Close()
	var magic [len(Magic)]byte
	n, err := io.ReadFull(f, magic[:])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return fmt.Errorf("thin archive member %s: %w", p, &os.PathError{Op: "read", Path: f.Name(), Err: err})
	}
	if IsArchive(magic[:n]) {
		return fmt.Errorf("thin archive member %s: is itself an archive (nested thin archives are not supported)", p)
	}
	return nil
}

// scan reads the member headers of the archive of size bytes in r,
// skipping its symbol index.
func scan(r io.ReaderAt, size int64) ([]Entry, bool, error) {
	var magic [len(Magic)]byte
	if size < int64(len(magic)) || readAt(r, magic[:], 0) != nil || !IsArchive(magic[:]) {
		return nil, false, fmt.Errorf("not an ar archive")
	}
	thin := IsThin(magic[:])
	var out []Entry
	var names []byte
	var h [60]byte
	p := int64(len(Magic))
	for p < size {
		if size-p < 60 {
			return nil, false, fmt.Errorf("member header at %d: truncated", p)
		}
		if err := readAt(r, h[:], p); err != nil {
			return nil, false, fmt.Errorf("member header at %d: %w", p, err)
		}
		if h[58] != '`' || h[59] != '\n' {
			return nil, false, fmt.Errorf("member header at %d: bad terminator", p)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(h[48:58])))
		if err != nil || n < 0 {
			return nil, false, fmt.Errorf("member header at %d: bad size %q", p, strings.TrimSpace(string(h[48:58])))
		}
		bodySize := int64(n)
		name := strings.TrimRight(string(h[:16]), " ")
		// In a thin archive only the symbol index and the long-name
		// table are stored; a member's size is that of its file.
		stored := !thin || name == "/" || name == "/SYM64/" || name == "//"
		if stored && bodySize > size-p-60 {
			return nil, false, fmt.Errorf("member header at %d: bad size %q", p, strings.TrimSpace(string(h[48:58])))
		}
		e := Entry{Offset: p + 60, Size: bodySize}
		switch {
		case name == "/" || name == "/SYM64/":
		case name == "//":
			names = make([]byte, bodySize)
			if err := readAt(r, names, p+60); err != nil {
				return nil, false, fmt.Errorf("long-name table at %d: %w", p, err)
			}
		case strings.HasPrefix(name, "/"):
			off, err := strconv.Atoi(name[1:])
			if err != nil || off < 0 || off >= len(names) {
				return nil, false, fmt.Errorf("member header at %d: bad long name %q", p, name)
			}
			end := bytes.Index(names[off:], []byte("/\n"))
			if end < 0 {
				return nil, false, fmt.Errorf("member header at %d: unterminated long name", p)
			}
			e.Name = string(names[off : off+end])
		default:
			e.Name = strings.TrimSuffix(name, "/")
		}
		if e.Name != "" {
			if thin {
				e.Path, e.Name, e.Offset = e.Name, filepath.Base(e.Name), p
			}
			out = append(out, e)
		}
		p += 60
		if stored {
			p += bodySize
		}
		p += p & 1
	}
	return out, thin, nil
}

// readAt fills buf from r at off; a read that ends early is an error
// (io.ErrUnexpectedEOF if r gives none), and one that fills buf is not,
// whatever r says.
func readAt(r io.ReaderAt, buf []byte, off int64) error {
	n, err := r.ReadAt(buf, off)
	switch {
	case n == len(buf):
		return nil
	case err == nil || err == io.EOF:
		return io.ErrUnexpectedEOF
	}
	return err
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
	memberNames []string
	hdrNames    []string
	sizes       []int64
	data        [][]byte    // the members' bytes (Prepare), or
	r           io.ReaderAt // where they are read from (PrepareAt),
	offsets     []int64     // at these offsets
	index       []byte      // the symbol index's body, or nil
	names       []byte      // the long-name table, or nil
	size        int64
}

// Prepare lays out the archive that Write produces (symbol index, long
// names, member offsets), so that it can be written member by member, with
// no copy of it in memory: all it can fail on is found before anything
// is written. The layout keeps the members' Data until it is written.
func Prepare(members []Member) (*Layout, error) {
	names := make([]string, len(members))
	sizes := make([]int64, len(members))
	data := make([][]byte, len(members))
	for i, m := range members {
		names[i], sizes[i], data[i] = m.Name, int64(len(m.Data)), m.Data
	}
	l, err := layout(names, sizes, func(i int) []string { return DefinedSymbols(members[i].Data) })
	if err != nil {
		return nil, err
	}
	l.data = data
	return l, nil
}

// Stored describes a member of an archive to be written whose bytes are
// held elsewhere, in an io.ReaderAt (see PrepareAt).
type Stored struct {
	Name string
	// Offset and Size locate the member's bytes in the io.ReaderAt.
	Offset, Size int64
	// Symbols are the global symbols the member defines, as
	// DefinedSymbols lists them, for the symbol index.
	Symbols []string
}

// PrepareAt is Prepare of members whose bytes are read from r when the
// archive is written: the layout, and the archive it writes, are those
// Prepare gives for the same names, bytes and symbols. r must hold the
// members' bytes until then; a short read is an error of WriteTo.
func PrepareAt(r io.ReaderAt, members []Stored) (*Layout, error) {
	names := make([]string, len(members))
	sizes := make([]int64, len(members))
	offsets := make([]int64, len(members))
	for i, m := range members {
		if m.Offset < 0 || m.Size < 0 {
			return nil, fmt.Errorf("member %s: bad offset %d or size %d", m.Name, m.Offset, m.Size)
		}
		names[i], sizes[i], offsets[i] = m.Name, m.Size, m.Offset
	}
	l, err := layout(names, sizes, func(i int) []string { return members[i].Symbols })
	if err != nil {
		return nil, err
	}
	l.r, l.offsets = r, offsets
	return l, nil
}

// layout lays out an archive of members with these names, sizes and
// defined symbols (symbols(i) lists member i's): everything but where the
// members' bytes come from.
func layout(memberNames []string, sizes []int64, symbols func(int) []string) (*Layout, error) {
	var longNames bytes.Buffer
	hdrNames := make([]string, len(memberNames))
	for i, name := range memberNames {
		if len(name)+1 <= 16 && !strings.Contains(name, "/") {
			hdrNames[i] = name + "/"
			continue
		}
		hdrNames[i] = "/" + strconv.Itoa(longNames.Len())
		longNames.WriteString(name + "/\n")
	}
	type entry struct {
		name   string
		member int
	}
	var syms []entry
	for i := range memberNames {
		for _, s := range symbols(i) {
			syms = append(syms, entry{s, i})
		}
	}
	// Layout: magic, index, long names, members.
	var strtab bytes.Buffer
	for _, s := range syms {
		strtab.WriteString(s.name)
		strtab.WriteByte(0)
	}
	indexSize := int64(4 + 4*len(syms) + strtab.Len())
	pos := int64(len(Magic))
	if len(syms) > 0 {
		pos += 60 + indexSize + indexSize&1
	}
	if longNames.Len() > 0 {
		pos += 60 + int64(longNames.Len()) + int64(longNames.Len())&1
	}
	const maxSize = 1<<32 - 1
	offsets := make([]int64, len(memberNames))
	for i, size := range sizes {
		offsets[i] = pos
		pos += 60 + size + size&1
		if pos > maxSize {
			break // and do not overflow
		}
	}
	if pos > maxSize {
		return nil, fmt.Errorf("archive too large for a 32-bit symbol index")
	}
	l := &Layout{memberNames: memberNames, hdrNames: hdrNames, sizes: sizes, names: longNames.Bytes(), size: pos}
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
	var buf []byte
	for i, name := range l.hdrNames {
		if l.data != nil {
			writeMember(cw, name, l.data[i])
			continue
		}
		writeHeader(cw, name, l.sizes[i])
		if buf == nil {
			buf = make([]byte, 32<<10)
		}
		cw.copyAt(l.r, l.offsets[i], l.sizes[i], buf, l.memberNames[i])
		if l.sizes[i]&1 == 1 {
			cw.WriteString("\n")
		}
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

// copyAt writes the size bytes at off in r, member name's, through buf;
// a short read is an error.
func (c *countWriter) copyAt(r io.ReaderAt, off, size int64, buf []byte, name string) {
	for size > 0 && c.err == nil {
		chunk := buf[:min(int64(len(buf)), size)]
		if err := readAt(r, chunk, off); err != nil {
			c.err = fmt.Errorf("member %s: reading its %d bytes at %d: %w", name, len(chunk), off, err)
			return
		}
		c.Write(chunk)
		off += int64(len(chunk))
		size -= int64(len(chunk))
	}
}

func writeMember(out *countWriter, name string, data []byte) {
	writeHeader(out, name, int64(len(data)))
	out.Write(data)
	if len(data)&1 == 1 {
		out.WriteString("\n")
	}
}

func writeHeader(out *countWriter, name string, size int64) {
	mode := "644"
	if name == "/" || name == "//" {
		mode = "0"
	}
	// The name field is 16 bytes; fmt pads by runes, which made a name
	// with multi-byte UTF-8 (café.o) overflow the header.
	out.WriteString(name)
	out.WriteString(strings.Repeat(" ", max(16-len(name), 0)))
	if name == "//" {
		fmt.Fprintf(out, "%-12s%-6s%-6s%-8s%-10d`\n", "", "", "", "", size)
	} else {
		fmt.Fprintf(out, "%-12d%-6d%-6d%-8s%-10d`\n", 0, 0, 0, mode, size)
	}
}

// Spill collects the members of an archive being built in a file (or any
// io.WriterAt that is also an io.ReaderAt), keeping in memory only what
// lays the archive out (Stored): a member's bytes are written out as soon
// as they are added, in whatever order they come, and copied into the
// archive when it is written (Layout).
type Spill struct {
	f interface {
		io.WriterAt
		io.ReaderAt
	}
	mu      sync.Mutex
	end     int64
	members []Stored
	state   []uint8 // of each member: unset, writing or set
}

// The states of a Spill's member.
const (
	unset uint8 = iota
	writing
	set
)

// NewSpill returns a Spill for an archive of n members, written to f from
// its start (f is the caller's to close, after the archive is written).
func NewSpill(f interface {
	io.WriterAt
	io.ReaderAt
}, n int) *Spill {
	return &Spill{f: f, members: make([]Stored, n), state: make([]uint8, n)}
}

// Set writes out data as member i, named name, and records its defined
// symbols. Members may be set in any order, concurrently; data is not
// kept.
func (s *Spill) Set(i int, name string, data []byte) error {
	if i < 0 || i >= len(s.members) {
		return fmt.Errorf("member %d (%s): out of range (%d members)", i, name, len(s.members))
	}
	syms := DefinedSymbols(data)
	s.mu.Lock()
	if s.state[i] != unset {
		s.mu.Unlock()
		return fmt.Errorf("member %d (%s): set twice", i, name)
	}
	off := s.end
	s.end += int64(len(data))
	s.state[i] = writing
	s.mu.Unlock()
	_, err := s.f.WriteAt(data, off)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.state[i] = unset
		return fmt.Errorf("member %s: writing %d bytes to the spill file: %w", name, len(data), err)
	}
	s.members[i] = Stored{Name: name, Offset: off, Size: int64(len(data)), Symbols: syms}
	s.state[i] = set
	return nil
}

// errUnset is Layout's error for a member never set.
var errUnset = errors.New("never set")

// Layout lays out the archive of the members set (see PrepareAt), which
// must be all of them; its bytes are read from the spill file when it is
// written.
func (s *Spill) Layout() (*Layout, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, st := range s.state {
		if st != set {
			return nil, fmt.Errorf("member %d: %w", i, errUnset)
		}
	}
	return PrepareAt(s.f, s.members)
}

// DefinedSymbols lists the global and weak symbols an ELF object defines,
// in symbol-table order (what `ar s` indexes). Non-ELF members, and
// objects whose symbol table cannot be read, have none.
func DefinedSymbols(data []byte) []string {
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
