package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Chunk is one framed chunk as read.
type Chunk struct {
	Type    ChunkType
	Offset  int64  // of the chunk header in the file
	Payload []byte // valid until the next call of Next
	// Stored is the chunk's size in the file (header and payload);
	// Packed says it was stored compressed (a DEFLATE chunk, which Next
	// unwraps: Type and Payload are the chunk it holds).
	Stored int
	Packed bool
}

// Decode decodes the payload (see the package function Decode).
func (c *Chunk) Decode() (any, error) {
	v, err := Decode(c.Type, c.Payload)
	if err != nil {
		return nil, fmt.Errorf("%s chunk at offset %d: %w", c.Type, c.Offset, err)
	}
	return v, nil
}

// Reader reads the chunks of a trace file in order. A chunk whose frame or
// checksum is wrong is skipped: the reader looks for the next valid chunk.
// An incomplete chunk at the end of the file (the program is still writing,
// or died while writing) ends the file: Truncated says so.
type Reader struct {
	r      io.Reader
	closer io.Closer
	buf    []byte // unread bytes
	off    int64  // file offset of buf[0]
	eof    bool
	err    error

	// Header is the file's header chunk, read by Open and NewReader.
	Header *Header
	// Truncated: the file ends inside a chunk (the writer is still
	// running, or died); everything before it was returned.
	Truncated bool
	// Damaged counts damaged regions skipped before a valid chunk;
	// Skipped is the number of bytes skipped (damaged regions and a
	// truncated tail).
	Damaged int
	Skipped int64

	inflate inflater // for DEFLATE chunks
}

// Open opens a trace file and reads its header.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	return r, nil
}

// NewReader reads the file magic and the header chunk from r.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: r}
	if err := rd.fill(len(FileMagic)); err != nil {
		return nil, err
	}
	if len(rd.buf) < len(FileMagic) || string(rd.buf[:len(FileMagic)]) != FileMagic {
		if len(rd.buf) == 0 {
			return nil, fmt.Errorf("%w: empty file", ErrNotTrace)
		}
		return nil, ErrNotTrace
	}
	rd.consume(len(FileMagic))
	c, err := rd.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: no header chunk (file truncated)", ErrNotTrace)
	}
	if err != nil {
		return nil, err
	}
	if c.Type != ChunkHeader || c.Offset != int64(len(FileMagic)) {
		return nil, fmt.Errorf("%w: first chunk is %s at offset %d, not the header", ErrNotTrace, c.Type, c.Offset)
	}
	h, err := DecodeHeader(c.Payload)
	if err != nil {
		return nil, err
	}
	rd.Header = h
	return rd, nil
}

// Close closes the file Open opened.
func (r *Reader) Close() error {
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}

// fill makes buf hold at least n bytes unless the input ends first.
func (r *Reader) fill(n int) error {
	for len(r.buf) < n && !r.eof {
		if cap(r.buf)-len(r.buf) < 64<<10 {
			// grow geometrically, not to n: a damaged length field must
			// not allocate more than the input holds
			nb := make([]byte, len(r.buf), max(2*cap(r.buf), 256<<10))
			copy(nb, r.buf)
			r.buf = nb
		}
		m, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+m]
		if err == io.EOF {
			r.eof = true
		} else if err != nil {
			r.err = err
			return err
		}
	}
	return nil
}

func (r *Reader) consume(n int) {
	r.buf = r.buf[n:]
	r.off += int64(n)
}

// parse checks for a chunk at b[0]: 1 valid, 0 invalid, -1 incomplete
// (size: the bytes needed to decide).
func parse(b []byte) (st int, typ ChunkType, size int) {
	if len(b) < chunkHeaderSize {
		return -1, 0, chunkHeaderSize
	}
	if le.Uint32(b) != ChunkMagic || le.Uint16(b[6:]) != 0 {
		return 0, 0, 0
	}
	n := le.Uint32(b[8:])
	if n > MaxChunk {
		return 0, 0, 0
	}
	size = chunkHeaderSize + int(n)
	if len(b) < size {
		return -1, 0, size
	}
	if crc32c(crc32c(0, b[4:12]), b[chunkHeaderSize:size]) != le.Uint32(b[12:]) {
		return 0, 0, 0
	}
	return 1, ChunkType(le.Uint16(b[4:])), size
}

var magicBytes = []byte{'V', 'P', 'T', 'C'}

// Next returns the next valid chunk, or io.EOF at the end of the file.
func (r *Reader) Next() (*Chunk, error) {
	if r.err != nil {
		return nil, r.err
	}
	skipped := int64(0)
	for {
		st, typ, size := parse(r.buf)
		for st == -1 && !r.eof {
			if err := r.fill(size); err != nil {
				return nil, err
			}
			st, typ, size = parse(r.buf)
		}
		switch st {
		case 1:
			if skipped > 0 {
				r.Damaged++
				r.Skipped += skipped
			}
			c := &Chunk{Type: typ, Offset: r.off, Payload: r.buf[chunkHeaderSize:size], Stored: size}
			r.consume(size)
			if typ == ChunkDeflate {
				r.unpack(c)
			}
			return c, nil
		case -1:
			if len(r.buf) == 0 && skipped == 0 {
				return nil, io.EOF
			}
			// The input ends inside a chunk: the writer is still at it,
			// or died; or a damaged length field: then a valid chunk
			// follows somewhere.
			if j := findValid(r.buf); j > 0 {
				skipped += int64(j)
				r.consume(j)
				continue
			}
			r.Truncated = true
			r.Skipped += skipped + int64(len(r.buf))
			r.consume(len(r.buf))
			return nil, io.EOF
		}
		// damaged: look for the next chunk magic
		if i := bytes.Index(r.buf[1:], magicBytes); i >= 0 {
			skipped += int64(i + 1)
			r.consume(i + 1)
			continue
		}
		drop := max(len(r.buf)-(len(magicBytes)-1), 1)
		skipped += int64(drop)
		r.consume(drop)
		if r.eof {
			if len(r.buf) < chunkHeaderSize {
				r.Truncated = true
				r.Skipped += skipped + int64(len(r.buf))
				r.consume(len(r.buf))
				return nil, io.EOF
			}
			continue
		}
		if err := r.fill(len(r.buf) + 64<<10); err != nil {
			return nil, err
		}
	}
}

// unpack replaces a DEFLATE chunk by the chunk it holds. One that cannot
// be decompressed stays as it is: decoding it gives the error (a chunk
// that passed its CRC is no damage to skip, but a writer's fault to
// report).
func (r *Reader) unpack(c *Chunk) {
	typ, p, err := r.inflate.unpack(c.Payload)
	if err != nil {
		return
	}
	c.Type, c.Payload, c.Packed = typ, p, true
}

// findValid returns the offset of the first valid chunk in b[1:], or -1.
func findValid(b []byte) int {
	for k := 1; k < len(b); {
		i := bytes.Index(b[k:], magicBytes)
		if i < 0 {
			return -1
		}
		k += i
		if st, _, _ := parse(b[k:]); st == 1 {
			return k
		}
		k++
	}
	return -1
}

// ReadAll reads the rest of the file into a Trace. A page's owner
// (Page.Region) is the region that held it at the page's first event: a
// stream is read once, and allocation events may follow the page
// aggregates they explain. Load reads a file twice and splits each page
// by owner over time (Page.Parts).
func (r *Reader) ReadAll() (*Trace, error) { return r.readAll(nil) }

func (r *Reader) readAll(idx *regionIndex) (*Trace, error) {
	b := newBuilder(r.Header)
	b.idx = idx
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		bad, fatal := b.add(c)
		if fatal != nil {
			return nil, fatal
		}
		if bad != nil {
			b.t.Errors = append(b.t.Errors, bad.Error())
		}
	}
	b.t.Truncated = r.Truncated
	b.t.Damaged = r.Damaged
	b.t.Skipped = r.Skipped
	return b.finish(), nil
}

// Load reads a trace file into a Trace. It reads the file twice: first
// the allocation events and thread ranges, so that the pages' events are
// split by the region (heap block, mapping, stack, TLS) that owned them at
// each time (Page.Parts).
func Load(path string) (*Trace, error) { return LoadChild(path, nil) }

// LoadChild is Load for the trace of a fork child whose parent's trace is
// parent (nil: none): the child's pages of heap blocks and mappings its
// parent made before the fork are named by those (the child's file has
// no record of them). Give a parent loaded with LoadChild in turn for a
// grandchild.
func LoadChild(path string, parent *Trace) (*Trace, error) {
	idx, err := scanRegions(path, parent)
	if err != nil {
		return nil, err
	}
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	t, err := r.readAll(idx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Path = path
	return t, nil
}

// IsNotTrace reports whether err says the input is not a trace file.
func IsNotTrace(err error) bool { return errors.Is(err, ErrNotTrace) }

// scanRegions reads the chunks that describe regions (ALLOCS, THREAD,
// THREAD_EXIT) and returns their index, nil when the file has none.
// Damage and decoding errors are left to the full read to report.
func scanRegions(path string, parent *Trace) (*regionIndex, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var rb regionBuilder
	if parent != nil && r.Header != nil && r.Header.Flags&HeaderForked != 0 {
		rb.inherit(parent.Regions, r.Header.OpenTime)
	}
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if c.Type != ChunkAllocs && c.Type != ChunkThread && c.Type != ChunkThreadExit {
			continue
		}
		switch x, _ := c.Decode(); x := x.(type) {
		case *Allocs:
			rb.allocs(x)
		case *ThreadStart:
			rb.thread(x)
		case *ThreadExit:
			rb.exit(x)
		}
	}
	if rb.empty() {
		return nil, nil
	}
	rs, lost := rb.build()
	idx := newRegionIndex(rs)
	idx.lost = lost
	return idx, nil
}
