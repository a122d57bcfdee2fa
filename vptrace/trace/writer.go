package trace

import "io"

// MaxAggPages is the most pages Writer puts in one Agg chunk; larger
// aggregates are split.
const MaxAggPages = 1 << 16

// Writer appends chunks to a buffer and writes them with Flush, in one
// Write call: when w is a file opened with O_APPEND that other writers
// (the runtime's C code) append to as well, whole chunks never interleave.
type Writer struct {
	w    io.Writer
	buf  []byte
	tmp  []byte
	opts WriterOptions
	pk   *packer // with opts.Compress
}

// WriterOptions choose how a Writer stores chunks.
type WriterOptions struct {
	// Compress stores chunks compressed (DEFLATE chunks, format 1.4;
	// not the HEADER nor STATUS, and not a chunk compression would not
	// make smaller) and aggregates as AGGC chunks. Readers before 1.4
	// skip them.
	Compress bool
	// Kinds, when not nil, gives the kind bits (KindRead, KindWrite) the
	// writer of the aggregates counted a site's events as: an AGGC chunk
	// whose pages' events, reads and writes all follow from their sites'
	// counts and kinds leaves them out.
	Kinds func(site uint64) Kind
	// CRC, when not nil, computes the chunks' CRC-32C as crc32.Update
	// with the Castagnoli table does (chained: crc is the CRC so far).
	// hash/crc32 builds its tables for the SSE 4.2 instruction on first
	// use, about 0.2 ms: a short-lived writer may do better with its own.
	CRC func(crc uint32, p []byte) uint32
}

// NewWriter returns a Writer on w that writes chunks as they are.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// NewWriterOptions returns a Writer on w with options.
func NewWriterOptions(w io.Writer, o WriterOptions) (*Writer, error) {
	wr := &Writer{w: w, opts: o}
	if o.Compress {
		wr.pk = &packer{}
	}
	return wr, nil
}

func (w *Writer) chunk(typ ChunkType, payload []byte) {
	if w.pk != nil && typ != ChunkHeader && typ != ChunkStatus {
		if z := w.pk.pack(typ, payload); z != nil {
			w.buf = appendChunk(w.buf, ChunkDeflate, z, w.opts.CRC)
			return
		}
	}
	w.buf = appendChunk(w.buf, typ, payload, w.opts.CRC)
}

// put appends a chunk of type typ with the payload p encodes.
func (w *Writer) put(typ ChunkType, p interface{ AppendPayload([]byte) []byte }) {
	w.tmp = p.AppendPayload(w.tmp[:0])
	w.chunk(typ, w.tmp)
}

// Begin appends the file magic and the header chunk: the start of a file.
func (w *Writer) Begin(h *Header) {
	if h.Major == 0 {
		h.Major, h.Minor = Major, Minor
	}
	if h.PageSize == 0 {
		h.PageSize = PageSize
	}
	w.buf = append(w.buf, FileMagic...)
	w.put(ChunkHeader, h)
}

// Object appends an object chunk.
func (w *Writer) Object(o *Object) {
	w.put(ChunkObject, o)
}

// ThreadStart appends a thread chunk.
func (w *Writer) ThreadStart(t *ThreadStart) {
	w.put(ChunkThread, t)
}

// ThreadExit appends a thread-exit chunk.
func (w *Writer) ThreadExit(t *ThreadExit) {
	w.put(ChunkThreadExit, t)
}

// Agg sorts a (SortAgg) and appends it as one or more agg chunks of at most
// MaxAggPages pages each (AGGC chunks, compressed, with Compress).
func (w *Writer) Agg(a *Agg) {
	SortAgg(a)
	pages := a.Pages
	for first := true; first || len(pages) > 0; first = false {
		part := *a
		n := min(len(pages), MaxAggPages)
		part.Pages = pages[:n]
		pages = pages[n:]
		if w.pk != nil {
			w.tmp = w.pk.appendAggCols(w.tmp[:0], &part, w.opts.Kinds)
			w.chunk(ChunkAggCols, w.tmp)
			continue
		}
		w.put(ChunkAgg, &part)
	}
}

// Raw appends a raw chunk.
func (w *Writer) Raw(r *Raw) {
	w.put(ChunkRaw, r)
}

// Note appends a note chunk.
func (w *Writer) Note(n *Note) {
	w.put(ChunkNote, n)
}

// End appends an end chunk.
func (w *Writer) End(e *End) {
	w.put(ChunkEnd, e)
}

// Status appends a status chunk.
func (w *Writer) Status(s *Status) {
	w.put(ChunkStatus, s)
}

// BlockObject appends a blocks chunk.
func (w *Writer) BlockObject(o *BlockObject) {
	w.put(ChunkBlocks, o)
}

// BlockCounts appends a counts chunk.
func (w *Writer) BlockCounts(c *BlockCounts) {
	w.put(ChunkCounts, c)
}

// Allocs appends an allocs chunk (the runtime's C code writes these; tests
// and converters use this).
func (w *Writer) Allocs(a *Allocs) {
	w.put(ChunkAllocs, a)
}

// Maps appends a maps chunk.
func (w *Writer) Maps(m *Maps) {
	w.put(ChunkMaps, m)
}

// Buffered is the number of bytes Flush would write.
func (w *Writer) Buffered() int { return len(w.buf) }

// Flush writes the buffered chunks with one Write call.
func (w *Writer) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	if cap(w.buf) > 64<<20 {
		w.buf = nil
	}
	return err
}
