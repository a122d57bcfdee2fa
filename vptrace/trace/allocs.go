package trace

import (
	"encoding/binary"
	"fmt"
)

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

// AllocsCompact is the ALLOCS chunk flag of compact records (format 1.5,
// FORMAT.md); DecodeAllocs reads both encodings and leaves it out of
// Allocs.Flags.
const AllocsCompact = 2

// Allocs is one thread's allocation events (chunk ALLOCS, 1.3).
type Allocs struct {
	Serial uint64 // the thread (0: not yet known to the runtime)
	TID    uint32
	Flags  uint32 // FlagExit: the thread's last ones
	Time   uint64 // when written
	Lost   uint64 // cumulative: events the runtime could not record
	Events []AllocEvent
}

// AppendPayload appends the chunk payload of a, with fixed-size records
// (what runtimes before format 1.5 wrote; AppendCompactPayload for the
// runtime's encoding).
func (a *Allocs) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(a.Serial)
	e.u32(a.TID)
	e.u32(a.Flags &^ AllocsCompact)
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

// Compact records (FORMAT.md, ALLOCS): the head byte's bits, the site
// byte's, the table of recent sites, the smallest record.
const (
	compactKind   = 0x1f
	compactSeq    = 0x20 // a seq delta follows (else the previous seq + 1)
	compactTime   = 0x40 // a time delta follows (else the previous time)
	compactExt    = 0x80 // flags, prot and path follow
	compactNew    = 0x80 // site byte: the site follows, for slot byte&0x7f
	compactSites  = 128
	compactRecMin = 4 // head, address, size, site
	compactPath   = 4096
)

// allocState is the compact encoding's state: the previous record's seq,
// time and address, and the recent sites; zero at a chunk's start.
type allocState struct {
	seq, time, addr uint64
	sites           [compactSites]uint64
}

// AppendCompactPayload appends the chunk payload of a with compact records,
// as the runtime writes them (format 1.5). Kinds must be 1 to 31, paths at
// most 4096 bytes.
func (a *Allocs) AppendCompactPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(a.Serial)
	e.u32(a.TID)
	e.u32(a.Flags | AllocsCompact)
	e.u64(a.Time)
	e.u64(a.Lost)
	e.u32(^uint32(0))
	e.u32(uint32(len(a.Events)))
	b := e.b
	var s allocState
	for _, v := range a.Events {
		head := byte(v.Kind) & compactKind
		at := len(b)
		b = append(b, 0)
		if v.Seq != s.seq+1 {
			head |= compactSeq
			b = binary.AppendVarint(b, int64(v.Seq-s.seq))
		}
		if v.Time != s.time {
			head |= compactTime
			b = binary.AppendVarint(b, int64(v.Time-s.time))
		}
		b = binary.AppendVarint(b, int64(v.Addr-s.addr))
		b = binary.AppendUvarint(b, v.Size)
		if v.Kind.Moves() {
			b = binary.AppendVarint(b, int64(v.Old-v.Addr))
		}
		slot := byte((v.Site * 0x9E3779B97F4A7C15) >> 57)
		if s.sites[slot] == v.Site {
			b = append(b, slot)
		} else {
			b = append(b, compactNew|slot)
			b = binary.AppendUvarint(b, v.Site)
			s.sites[slot] = v.Site
		}
		if v.Flags != 0 || v.Prot != 0 || v.Path != "" {
			head |= compactExt
			b = binary.AppendUvarint(b, uint64(v.Flags))
			b = binary.AppendUvarint(b, uint64(v.Prot))
			b = binary.AppendUvarint(b, uint64(len(v.Path)))
			b = append(b, v.Path...)
		}
		b[at] = head
		s.seq, s.time, s.addr = v.Seq, v.Time, v.Addr
	}
	return b
}

// DecodeAllocs decodes a ChunkAllocs payload: fixed-size records (formats
// 1.3, 1.4) or compact ones (1.5, the AllocsCompact flag).
func DecodeAllocs(p []byte) (*Allocs, error) {
	d := dec{b: p}
	a := &Allocs{Serial: d.u64(), TID: d.u32(), Flags: d.u32(), Time: d.u64(), Lost: d.u64()}
	n := d.u32()
	n2 := d.u32()
	if d.err != nil {
		return nil, d.err
	}
	if a.Flags&AllocsCompact != 0 {
		a.Flags &^= AllocsCompact
		if err := decodeCompact(a, n2, p[d.off:]); err != nil {
			return nil, err
		}
		return a, nil
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

// decodeCompact decodes n compact records from p into a.Events.
func decodeCompact(a *Allocs, n uint32, p []byte) error {
	if uint64(n)*compactRecMin > uint64(len(p)) {
		return fmt.Errorf("allocs: %d compact records in %d bytes", n, len(p))
	}
	var s allocState
	off := 0
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(p[off:])
		if k <= 0 {
			return 0, false
		}
		off += k
		return v, true
	}
	sv := func() (uint64, bool) {
		v, k := binary.Varint(p[off:])
		if k <= 0 {
			return 0, false
		}
		off += k
		return uint64(v), true
	}
	a.Events = make([]AllocEvent, n)
	for i := range a.Events {
		v := &a.Events[i]
		at := off
		bad := func(what string) error {
			return fmt.Errorf("allocs: compact record %d at byte %d: %s", i, at, what)
		}
		if off >= len(p) {
			return bad("short")
		}
		head := p[off]
		off++
		v.Kind = AllocKind(head & compactKind)
		if v.Kind == 0 {
			return bad("kind 0")
		}
		v.Seq, v.Time = s.seq+1, s.time
		if head&compactSeq != 0 {
			x, ok := sv()
			if !ok {
				return bad("bad seq delta")
			}
			v.Seq = s.seq + x
		}
		if head&compactTime != 0 {
			x, ok := sv()
			if !ok {
				return bad("bad time delta")
			}
			v.Time = s.time + x
		}
		x, ok := sv()
		if !ok {
			return bad("bad address delta")
		}
		v.Addr = s.addr + x
		if v.Size, ok = uv(); !ok {
			return bad("bad size")
		}
		if v.Kind.Moves() {
			if x, ok = sv(); !ok {
				return bad("bad old address")
			}
			v.Old = v.Addr + x
		}
		if off >= len(p) {
			return bad("short")
		}
		slot := p[off]
		off++
		if slot&compactNew != 0 {
			slot &^= compactNew
			if s.sites[slot], ok = uv(); !ok {
				return bad("bad site")
			}
		}
		v.Site = s.sites[slot]
		if head&compactExt != 0 {
			f, ok1 := uv()
			pr, ok2 := uv()
			l, ok3 := uv()
			switch {
			case !ok1 || !ok2 || !ok3:
				return bad("bad flags, prot or path")
			case f > 0xffff || pr > 0xffffffff:
				return bad(fmt.Sprintf("flags %#x, prot %#x too large", f, pr))
			case l > compactPath || l > uint64(len(p)-off):
				return bad(fmt.Sprintf("path of %d bytes", l))
			}
			v.Flags, v.Prot = uint16(f), uint32(pr)
			v.Path = string(p[off : off+int(l)])
			off += int(l)
		}
		s.seq, s.time, s.addr = v.Seq, v.Time, v.Addr
	}
	return nil
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
