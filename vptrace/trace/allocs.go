package trace

import "fmt"

// Allocation events, mappings and thread memory ranges (format 1.3): what
// lets a reader name a page's owner by its address — the heap block an
// allocation site returned, a mapped file, a thread's stack or TLS — rather
// than by the instruction that touched it.

// AllocKind is the allocator function an allocation event comes from.
type AllocKind uint16

// Allocation kinds (ALLOCS records).
const (
	AllocMalloc AllocKind = 1 + iota
	AllocCalloc
	AllocRealloc
	AllocReallocarray
	AllocFree
	AllocAlignedAlloc
	AllocPosixMemalign
	AllocMemalign
	AllocValloc
	AllocPvalloc
	AllocNew
	AllocNewArray
	AllocDelete
	AllocDeleteArray
	AllocMmap
	AllocMunmap
	AllocMremap
	AllocStrdup
	AllocStrndup
)

var allocNames = [...]string{
	AllocMalloc: "malloc", AllocCalloc: "calloc", AllocRealloc: "realloc",
	AllocReallocarray: "reallocarray", AllocFree: "free", AllocAlignedAlloc: "aligned_alloc",
	AllocPosixMemalign: "posix_memalign", AllocMemalign: "memalign", AllocValloc: "valloc",
	AllocPvalloc: "pvalloc", AllocNew: "new", AllocNewArray: "new[]", AllocDelete: "delete",
	AllocDeleteArray: "delete[]", AllocMmap: "mmap", AllocMunmap: "munmap", AllocMremap: "mremap",
	AllocStrdup: "strdup", AllocStrndup: "strndup",
}

// String is the allocator's name as users write it ("malloc", "new[]").
func (k AllocKind) String() string {
	if int(k) < len(allocNames) && allocNames[k] != "" {
		return allocNames[k]
	}
	return fmt.Sprintf("alloc-%d", uint16(k))
}

// Releases reports whether the kind only releases memory (free, delete,
// munmap).
func (k AllocKind) Releases() bool {
	return k == AllocFree || k == AllocDelete || k == AllocDeleteArray || k == AllocMunmap
}

// Moves reports whether the kind may release an old block and return a new
// one (realloc, reallocarray, mremap).
func (k AllocKind) Moves() bool {
	return k == AllocRealloc || k == AllocReallocarray || k == AllocMremap
}

// AllocEvent flags.
const (
	AllocFile   = 1 // mmap of a file (Path)
	AllocShared = 2 // MAP_SHARED
	AllocFixed  = 4 // MAP_FIXED: replaced what was mapped there
)

// AllocEvent is one call of an allocator.
type AllocEvent struct {
	Seq  uint64 // process-wide order of allocation events, from 1
	Time uint64 // ns since trace start (0: before the trace started)
	// Addr is the block or mapping returned; for the releasing kinds the
	// address released; for mremap the new address.
	Addr uint64
	// Size is the bytes asked for (calloc: n*size; munmap: the length;
	// free, delete: 0).
	Size uint64
	// Old is realloc's, reallocarray's and mremap's old address (0 for
	// realloc(NULL, n)).
	Old   uint64
	Site  uint64 // return address of the call into the allocator
	Kind  AllocKind
	Flags uint16 // AllocFile, AllocShared, AllocFixed
	Prot  uint32 // mmap, mremap: PROT_* bits
	Path  string // mmap of a file: its path
}

// Allocs is one thread's allocation events (chunk ALLOCS, 1.3).
type Allocs struct {
	Serial uint64 // the thread (0: not yet known to the runtime)
	TID    uint32
	Flags  uint32 // FlagExit: the thread's last ones
	Time   uint64 // when written
	Lost   uint64 // cumulative: events the runtime could not record
	Events []AllocEvent
}

// AppendPayload appends the chunk payload of a.
func (a *Allocs) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(a.Serial)
	e.u32(a.TID)
	e.u32(a.Flags)
	e.u64(a.Time)
	e.u64(a.Lost)
	e.u32(uint32(len(a.Events)))
	e.u32(0)
	for _, v := range a.Events {
		e.u64(v.Seq)
		e.u64(v.Time)
		e.u64(v.Addr)
		e.u64(v.Size)
		e.u64(v.Old)
		e.u64(v.Site)
		e.u16(uint16(v.Kind))
		e.u16(v.Flags)
		e.u32(v.Prot)
		e.str(v.Path)
	}
	return e.b
}

// allocRecMin is the size of an ALLOCS record without its path.
const allocRecMin = 6*8 + 2 + 2 + 4 + 4

// DecodeAllocs decodes a ChunkAllocs payload.
func DecodeAllocs(p []byte) (*Allocs, error) {
	d := dec{b: p}
	a := &Allocs{Serial: d.u64(), TID: d.u32(), Flags: d.u32(), Time: d.u64(), Lost: d.u64()}
	n := d.u32()
	d.u32()
	if d.err != nil {
		return nil, d.err
	}
	if uint64(n)*allocRecMin > uint64(len(p)-d.off) {
		return nil, fmt.Errorf("allocs: %d records in %d bytes", n, len(p)-d.off)
	}
	a.Events = make([]AllocEvent, n)
	for i := range a.Events {
		v := &a.Events[i]
		v.Seq, v.Time, v.Addr, v.Size, v.Old, v.Site = d.u64(), d.u64(), d.u64(), d.u64(), d.u64(), d.u64()
		v.Kind, v.Flags, v.Prot = AllocKind(d.u16()), d.u16(), d.u32()
		v.Path = d.str()
		if d.err != nil {
			return nil, fmt.Errorf("allocs: record %d: %w", i, d.err)
		}
	}
	return a, nil
}

// Maps reasons.
const (
	MapsStart   = 1 // the file was opened
	MapsDlopen  = 2 // after a dlopen
	MapsDlclose = 3 // after a dlclose
	MapsExit    = 4 // at exit
)

// Mapping protections (Mapping.Prot).
const (
	ProtRead   = 1
	ProtWrite  = 2
	ProtExec   = 4
	ProtShared = 8
)

// Mapping is one line of /proc/self/maps.
type Mapping struct {
	Start, End uint64 // [Start, End)
	Offset     uint64 // file offset of Start
	Prot       uint32 // ProtRead | ProtWrite | ProtExec | ProtShared
	// Path as the kernel shows it: "" anonymous, "[heap]", "[stack]",
	// "[vdso]", or the mapped file.
	Path string
}

// Maps is the process's mappings at a time (chunk MAPS, 1.3).
type Maps struct {
	Time uint64
	Why  uint32 // MapsStart, MapsDlopen, MapsDlclose, MapsExit
	Maps []Mapping
}

// AppendPayload appends the chunk payload of m.
func (m *Maps) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(m.Time)
	e.u32(m.Why)
	e.u32(uint32(len(m.Maps)))
	for _, v := range m.Maps {
		e.u64(v.Start)
		e.u64(v.End)
		e.u64(v.Offset)
		e.u32(v.Prot)
		e.u32(0)
		e.str(v.Path)
	}
	return e.b
}

// DecodeMaps decodes a ChunkMaps payload.
func DecodeMaps(p []byte) (*Maps, error) {
	d := dec{b: p}
	m := &Maps{Time: d.u64(), Why: d.u32()}
	n := d.u32()
	if d.err != nil {
		return nil, d.err
	}
	const min = 3*8 + 4 + 4 + 4
	if uint64(n)*min > uint64(len(p)-d.off) {
		return nil, fmt.Errorf("maps: %d mappings in %d bytes", n, len(p)-d.off)
	}
	m.Maps = make([]Mapping, n)
	for i := range m.Maps {
		v := &m.Maps[i]
		v.Start, v.End, v.Offset = d.u64(), d.u64(), d.u64()
		v.Prot = d.u32()
		d.u32()
		v.Path = d.str()
		if d.err != nil {
			return nil, fmt.Errorf("maps: mapping %d: %w", i, d.err)
		}
	}
	return m, nil
}

// Range is an address range [Lo, Hi).
type Range struct{ Lo, Hi uint64 }

// Contains reports whether a lies in r.
func (r Range) Contains(a uint64) bool { return a >= r.Lo && a < r.Hi }
