// Package trace reads and writes vptrace trace files, the output of the
// vptrace runtime (bin/libvptrace.a) that hijack's vptrace preset links into
// a program. The format is described in vptrace/FORMAT.md: an 8-byte file
// magic followed by self-delimiting chunks, each with a CRC-32C, all
// little-endian. A file may be read while the program still writes it: an
// incomplete last chunk is ignored.
//
// Readers use Open (chunk by chunk) or Load (everything aggregated into a
// Trace: per-thread page maps, with sites resolved to function, instruction,
// variable and segment). The runtime uses Writer.
package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"hijack/vptrace/abi"
)

// File and chunk framing.
const (
	FileMagic  = "VPTRACE\n"
	ChunkMagic = 0x43545056 // "VPTC" little-endian
	Major      = 1
	Minor      = 6
	PageShift  = abi.PageShift
	PageSize   = abi.PageSize

	chunkHeaderSize = 16
	// MaxChunk bounds a chunk's payload; longer lengths are corruption.
	MaxChunk = 1 << 30
)

// ChunkType says what a chunk holds.
type ChunkType uint16

// Chunk types.
const (
	ChunkHeader     ChunkType = 1  // Header; the first chunk of every file
	ChunkObject     ChunkType = 2  // Object: an instrumented object's site table
	ChunkThread     ChunkType = 3  // ThreadStart
	ChunkThreadExit ChunkType = 4  // ThreadExit
	ChunkAgg        ChunkType = 5  // Agg: per-thread page aggregates for an interval
	ChunkRaw        ChunkType = 6  // Raw: one thread's events, not aggregated
	ChunkNote       ChunkType = 7  // Note
	ChunkEnd        ChunkType = 8  // End: the process finished writing (more chunks may follow)
	ChunkStatus     ChunkType = 9  // Status: the file's write status (1.1), rewritten in place
	ChunkBlocks     ChunkType = 10 // BlockObject: a blockcount object's block table (1.2)
	ChunkCounts     ChunkType = 11 // BlockCounts: one thread's block counts of an object (1.2)
	ChunkAllocs     ChunkType = 12 // Allocs: one thread's allocation events (1.3)
	ChunkMaps       ChunkType = 13 // Maps: the process's mappings at a time (1.3)
	// ChunkDeflate holds another chunk's payload compressed (1.4);
	// Reader.Next unwraps it.
	ChunkDeflate ChunkType = 14
	// ChunkAggCols is an Agg in columns, with dictionaries of its times
	// and sites (1.4); the runtime writes it inside ChunkDeflate.
	ChunkAggCols ChunkType = 15
)

func (t ChunkType) String() string {
	switch t {
	case ChunkHeader:
		return "header"
	case ChunkObject:
		return "object"
	case ChunkThread:
		return "thread"
	case ChunkThreadExit:
		return "thread-exit"
	case ChunkAgg:
		return "agg"
	case ChunkRaw:
		return "raw"
	case ChunkNote:
		return "note"
	case ChunkEnd:
		return "end"
	case ChunkStatus:
		return "status"
	case ChunkBlocks:
		return "blocks"
	case ChunkCounts:
		return "counts"
	case ChunkAllocs:
		return "allocs"
	case ChunkMaps:
		return "maps"
	case ChunkDeflate:
		return "deflate"
	case ChunkAggCols:
		return "aggc"
	}
	return fmt.Sprintf("chunk-%d", uint16(t))
}

// Header flags.
const (
	HeaderForked  = 1 // the process is a fork child of PPID
	HeaderRaw     = 2 // VPTRACE_RAW: events are written raw
	HeaderStopped = 4 // the process started with tracing stopped
)

// Note kinds.
const (
	NoteText    = 1 // vptrace_note()
	NoteStart   = 2 // vptrace_start()
	NoteStop    = 3 // vptrace_stop()
	NoteWarning = 4 // the runtime had to degrade (limits, bad objects)
	NoteFork    = 5 // this file's process is a fork child; Value = parent pid
	// NoteExec: the process image is about to be replaced by exec (1.1);
	// Text: the program. An End flagged EndExec follows.
	NoteExec = 6
	// NoteExecFailed: the exec failed (Value: errno) and tracing goes on
	// in this file (1.1): the EndExec before it is void.
	NoteExecFailed = 7
)

// End flags.
const (
	EndClean    = 1 // written at normal process exit
	EndFallback = 2 // the aggregator did not answer; remaining events written raw
	// EndExec: the image was replaced by exec (1.1); its events up to the
	// exec are in the file.
	EndExec = 4
	// EndWriteError: some chunks could not be written (1.1); End.Errno
	// is the first failed write's errno.
	EndWriteError = 8
	// EndLost: the aggregator stopped answering (at exit or before an
	// exec) holding End.Lost events it had not written (1.6): the file
	// misses them.
	EndLost = 16
)

// Status flags.
const (
	// StatusWriteError: a write to the file failed (Status.Errno): chunks
	// are missing, from that point on at least.
	StatusWriteError = 1
)

// Flags of ThreadExit, Raw.
const (
	FlagExit = 1 // Raw: the thread's last events
)

// Kind is vpt_site.kind (vptrace/abi): bit 0 read, bit 1 write (both:
// read-modify-write), bit 2 exact mode, bit 3 a sweep whose step is a
// register (with bit 6), bit 4 a rep string operation's source range (from
// rsi), bit 5 its destination range (from rdi), bit 6 a sweep recorded as
// one range per loop run, bit 7 vector elements.
type Kind = abi.Kind

// Kinds and kind bits (vptrace/abi).
const (
	KindRead    = abi.KindRead
	KindWrite   = abi.KindWrite
	KindRMW     = abi.KindRMW
	KindExact   = abi.KindExact   // a site of exact mode: the runtime recorded every event
	KindDynStep = abi.KindDynStep // a sweep whose step the runtime read from a register
	KindRepSrc  = abi.KindRepSrc
	KindRepDest = abi.KindRepDest
	KindRange   = abi.KindRange
	KindVec     = abi.KindVec // vector elements (vpt_vec)
)

// Segment is vpt_site.seg (vptrace/abi). The preset knows a segment only
// from the operand's form: a relocation names a global or a TLS variable,
// rsp/rbp addresses the stack. An address computed in a register (a
// pointer: the heap, but as well a global array passed to a function,
// another thread's stack, an mmap'ed file) is SegUnknown until accesses
// are attributed by address.
type Segment = abi.Segment

// Segments.
const (
	SegUnknown = abi.SegUnknown // a pointer in a register: heap, global or stack
	SegGlobal  = abi.SegGlobal
	SegStack   = abi.SegStack
	SegTLS     = abi.SegTLS
)

// NoSym is vpt_site.sym for sites without a variable.
const NoSym = abi.NoSym

// Header is the first chunk: who wrote the file, and when.
type Header struct {
	Major, Minor uint16
	PageSize     uint32
	PID, PPID    uint32
	Flags        uint32 // Header*
	ClockRes     uint32 // resolution of event times, ns (0: times advance at batch hand-offs)
	StartUnix    uint64 // wall clock at trace start, ns since 1970
	StartMono    uint64 // CLOCK_MONOTONIC at trace start; all times are ns since then
	OpenTime     uint64 // ns since start when this file was opened (fork time in a child)
	BufEvents    uint32 // per-thread buffer capacity, events
	IntervalMS   uint32 // aggregate streaming interval
	Program      string // argv[0]
	Exe          string // /proc/self/exe
	Cmdline      []string
	Runtime      string
}

// SiteRec is one struct vpt_site as the object emitted it.
type SiteRec = abi.Site

// SiteRecSize is sizeof(struct vpt_site).
const SiteRecSize = abi.SiteSize

// Object is an instrumented object's descriptor with its sites and strings,
// and where they were in the process.
type Object struct {
	Desc      uint64 // runtime address of the struct vpt_object
	SitesAddr uint64 // runtime address of sites[0]; site k is at SitesAddr+32k
	StrsAddr  uint64
	Flags     uint32
	Version   uint32
	ID        uint64
	Reserved  uint64
	NameOff   uint32
	Sites     []SiteRec
	Strs      []byte
}

// Str returns the NUL-terminated string at off in the object's string table.
func (o *Object) Str(off uint32) string { return cstr(o.Strs, off) }

// Name is the object file name hijack was given.
func (o *Object) Name() string { return o.Str(o.NameOff) }

// ThreadStart: a thread's first events reached the aggregator.
type ThreadStart struct {
	Serial uint64 // unique per thread in the process (TIDs are reused)
	TID    uint32
	Flags  uint32
	Time   uint64 // thread's first event, ns since start
	Name   string // thread name (prctl PR_GET_NAME) at its first event

	// Stack is the thread's stack, TLS its TLS blocks (1.3; zero and nil
	// when the runtime did not say).
	Stack Range
	TLS   []Range
}

// ThreadExit: a thread exited (its key destructor ran).
type ThreadExit struct {
	Serial uint64
	TID    uint32
	Flags  uint32
	Time   uint64
	Events uint64 // events the thread recorded, in total
	Drops  uint64 // events it dropped, in total
	Name   string // thread name (prctl PR_GET_NAME) at exit
}

// SiteCount is a number of events at one site.
type SiteCount struct {
	Site  uint64 // runtime address of the struct vpt_site
	Count uint64
}

// PageAgg is what one thread did to one page during an interval.
type PageAgg struct {
	Page   uint64 // page number (address >> 12)
	Events uint64 // all events
	Reads  uint64 // events at read and read-modify-write sites
	Writes uint64 // events at write and read-modify-write sites
	First  uint64 // ns since start
	Last   uint64
	Sites  []SiteCount // ascending Site; counts add up to Events
}

// Agg holds one thread's page aggregates for the interval [From, To]. A
// thread's totals are the sums over its Agg (and Raw) chunks.
type Agg struct {
	Serial   uint64
	TID      uint32
	Flags    uint32
	From, To uint64
	Drops    uint64 // cumulative for the thread
	Pages    []PageAgg
}

// Event is one recorded page change (struct vpt_event): page+1 (0 never
// occurs), the site address (0: an empty slot, to be ignored) and the time.
type Event = abi.Event

// EventSize is the size of an Event in a Raw chunk.
const EventSize = abi.EventSize

// Raw holds one thread's events as recorded.
type Raw struct {
	Serial uint64
	TID    uint32
	Flags  uint32 // FlagExit
	Drops  uint64 // cumulative for the thread
	Time   uint64 // when written
	Events []Event
}

// Note is a marker or a message.
type Note struct {
	Kind  uint32
	TID   uint32
	Time  uint64
	Value uint64
	Text  string
}

// End says the process finished its trace (at exit, or before an exec).
// Chunks may follow (events recorded during the rest of exit).
type End struct {
	Time    uint64
	Threads uint64
	Events  uint64
	Drops   uint64
	Flags   uint32 // End*
	Errno   uint32 // with EndWriteError: the first failed write's errno
	Lost    uint64 // with EndLost: events missing from the file (1.6)
}

// Status is the file's write status: the runtime writes it right after the
// header and rewrites it in place (the same bytes, so a full file system
// has room for it) when a write fails.
type Status struct {
	Flags uint32 // Status*
	Errno uint32 // with StatusWriteError: the first failed write's errno
	Time  uint64 // when it was written
}

// crcTable is built on first use: a package-level table would cost every
// hijack process (rewriting too) its construction at start-up.
var crcTable = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// AppendChunk appends a framed chunk (magic, type, length, CRC-32C,
// payload) to dst.
func AppendChunk(dst []byte, typ ChunkType, payload []byte) []byte {
	return appendChunk(dst, typ, payload, nil)
}

// crc32c is crc32.Update with the Castagnoli table.
func crc32c(crc uint32, p []byte) uint32 { return crc32.Update(crc, crcTable(), p) }

// appendChunk is AppendChunk with the CRC-32C computed by crc (nil:
// crc32c).
func appendChunk(dst []byte, typ ChunkType, payload []byte, crc func(uint32, []byte) uint32) []byte {
	if crc == nil {
		crc = crc32c
	}
	var h [chunkHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], ChunkMagic)
	binary.LittleEndian.PutUint16(h[4:], uint16(typ))
	binary.LittleEndian.PutUint16(h[6:], 0)
	binary.LittleEndian.PutUint32(h[8:], uint32(len(payload)))
	c := crc(crc(0, h[4:12]), payload)
	binary.LittleEndian.PutUint32(h[12:], c)
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// Errors.
var (
	ErrNotTrace = errors.New("not a vptrace file (bad magic)")
	ErrVersion  = errors.New("unsupported trace format version")
	ErrShort    = errors.New("chunk payload too short")
	// ErrMultiProcess: the file holds the chunks of more than one process
	// (files concatenated, or a file a process truncated while another
	// appended to it: runtimes before 1.1 with a shared VPTRACE_OUT). Its
	// threads cannot be told apart, so it is refused.
	ErrMultiProcess = errors.New("the file holds the trace of more than one process")
)
