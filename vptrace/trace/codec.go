package trace

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"hijack/vptrace/abi"
)

var le = binary.LittleEndian

// Fixed payload sizes (FORMAT.md).
const (
	headerFixed     = 56
	objectFixed     = 64
	threadFixed     = 40
	threadExitFixed = 56
	aggFixed        = 48
	rawFixed        = 48
	noteFixed       = 28
	endFixed        = 40
	statusFixed     = 16
)

// dec reads a payload with bounds checks; the first error sticks.
type dec struct {
	b   []byte
	off int
	err error
}

func (d *dec) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || d.off+n > len(d.b) || d.off+n < d.off {
		d.err = ErrShort
		return false
	}
	return true
}
func (d *dec) u16() uint16 {
	if !d.need(2) {
		return 0
	}
	v := le.Uint16(d.b[d.off:])
	d.off += 2
	return v
}
func (d *dec) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := le.Uint32(d.b[d.off:])
	d.off += 4
	return v
}
func (d *dec) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := le.Uint64(d.b[d.off:])
	d.off += 8
	return v
}
func (d *dec) bytes(n int) []byte {
	if !d.need(n) {
		return nil
	}
	v := d.b[d.off : d.off+n]
	d.off += n
	return v
}
func (d *dec) str() string {
	n := d.u32()
	if n > uint32(len(d.b)) {
		d.err = ErrShort
		return ""
	}
	return string(d.bytes(int(n)))
}
func (d *dec) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.err = fmt.Errorf("bad varint at payload offset %d", d.off)
		return 0
	}
	d.off += n
	return v
}

// enc builds payloads.
type enc struct{ b []byte }

func (e *enc) u16(v uint16)     { e.b = le.AppendUint16(e.b, v) }
func (e *enc) u32(v uint32)     { e.b = le.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64)     { e.b = le.AppendUint64(e.b, v) }
func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) str(s string)     { e.u32(uint32(len(s))); e.b = append(e.b, s...) }

// ---- Header ----

// AppendPayload appends the chunk payload of h.
func (h *Header) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u16(h.Major)
	e.u16(h.Minor)
	e.u32(h.PageSize)
	e.u32(h.PID)
	e.u32(h.PPID)
	e.u32(h.Flags)
	e.u32(h.ClockRes)
	e.u64(h.StartUnix)
	e.u64(h.StartMono)
	e.u64(h.OpenTime)
	e.u32(h.BufEvents)
	e.u32(h.IntervalMS)
	e.str(h.Program)
	e.str(h.Exe)
	e.str(strings.Join(h.Cmdline, "\x00"))
	e.str(h.Runtime)
	return e.b
}

// DecodeHeader decodes a ChunkHeader payload.
func DecodeHeader(p []byte) (*Header, error) {
	d := dec{b: p}
	h := &Header{}
	h.Major = d.u16()
	h.Minor = d.u16()
	h.PageSize = d.u32()
	h.PID = d.u32()
	h.PPID = d.u32()
	h.Flags = d.u32()
	h.ClockRes = d.u32()
	h.StartUnix = d.u64()
	h.StartMono = d.u64()
	h.OpenTime = d.u64()
	h.BufEvents = d.u32()
	h.IntervalMS = d.u32()
	h.Program = d.str()
	h.Exe = d.str()
	if c := d.str(); c != "" {
		h.Cmdline = strings.Split(strings.TrimRight(c, "\x00"), "\x00")
	}
	h.Runtime = d.str()
	if d.err != nil {
		return nil, d.err
	}
	if h.Major != Major {
		return nil, fmt.Errorf("%w %d.%d (this reader: %d.%d)", ErrVersion, h.Major, h.Minor, Major, Minor)
	}
	return h, nil
}

// ---- Object ----

// AppendPayload appends the chunk payload of o.
func (o *Object) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(o.Desc)
	e.u64(o.SitesAddr)
	e.u64(o.StrsAddr)
	e.u32(uint32(len(o.Sites)))
	e.u32(uint32(len(o.Strs)))
	e.u32(o.Flags)
	e.u32(o.Version)
	e.u64(o.ID)
	e.u64(o.Reserved)
	e.u32(o.NameOff)
	e.u32(0)
	for i := range o.Sites {
		e.b = o.Sites[i].Append(e.b)
	}
	e.b = append(e.b, o.Strs...)
	return e.b
}

// DecodeObject decodes a ChunkObject payload.
func DecodeObject(p []byte) (*Object, error) {
	d := dec{b: p}
	o := &Object{}
	o.Desc = d.u64()
	o.SitesAddr = d.u64()
	o.StrsAddr = d.u64()
	nsites := d.u32()
	nstrs := d.u32()
	o.Flags = d.u32()
	o.Version = d.u32()
	o.ID = d.u64()
	o.Reserved = d.u64()
	o.NameOff = d.u32()
	d.u32()
	if d.err != nil {
		return nil, d.err
	}
	if uint64(nsites)*SiteRecSize+uint64(nstrs) > uint64(len(p)-d.off) {
		return nil, ErrShort
	}
	o.Sites = make([]SiteRec, nsites)
	for i := range o.Sites {
		o.Sites[i], _ = abi.UnmarshalSite(d.bytes(SiteRecSize)) // (the length was checked above)
	}
	o.Strs = slices.Clone(d.bytes(int(nstrs)))
	return o, d.err
}

// ---- ThreadStart, ThreadExit ----

// AppendPayload appends the chunk payload of t.
func (t *ThreadStart) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(t.Serial)
	e.u32(t.TID)
	e.u32(t.Flags)
	e.u64(t.Time)
	e.b = appendName(e.b, t.Name)
	if t.Stack != (Range{}) || len(t.TLS) > 0 {
		e.u64(t.Stack.Lo)
		e.u64(t.Stack.Hi)
		e.u32(uint32(len(t.TLS)))
		e.u32(0)
		for _, r := range t.TLS {
			e.u64(r.Lo)
			e.u64(r.Hi)
		}
	}
	return e.b
}

func appendName(b []byte, name string) []byte {
	var n [16]byte
	copy(n[:15], name)
	return append(b, n[:]...)
}

func (d *dec) name() string {
	b := d.bytes(16)
	if i := slices.Index(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// DecodeThreadStart decodes a ChunkThread payload.
func DecodeThreadStart(p []byte) (*ThreadStart, error) {
	d := dec{b: p}
	t := &ThreadStart{Serial: d.u64(), TID: d.u32(), Flags: d.u32(), Time: d.u64()}
	if d.err == nil && d.off < len(p) {
		t.Name = d.name()
	}
	if d.err == nil && d.off+24 <= len(p) { // 1.3: stack and TLS blocks
		t.Stack = Range{d.u64(), d.u64()}
		n := d.u32()
		d.u32()
		if uint64(n)*16 > uint64(len(p)-d.off) {
			return nil, fmt.Errorf("thread: %d TLS blocks in %d bytes", n, len(p)-d.off)
		}
		for range n {
			t.TLS = append(t.TLS, Range{d.u64(), d.u64()})
		}
	}
	return t, d.err
}

// AppendPayload appends the chunk payload of t.
func (t *ThreadExit) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(t.Serial)
	e.u32(t.TID)
	e.u32(t.Flags)
	e.u64(t.Time)
	e.u64(t.Events)
	e.u64(t.Drops)
	e.b = appendName(e.b, t.Name)
	return e.b
}

// DecodeThreadExit decodes a ChunkThreadExit payload.
func DecodeThreadExit(p []byte) (*ThreadExit, error) {
	d := dec{b: p}
	t := &ThreadExit{Serial: d.u64(), TID: d.u32(), Flags: d.u32(), Time: d.u64(), Events: d.u64(), Drops: d.u64()}
	t.Name = d.name()
	if d.err != nil {
		return nil, d.err
	}
	return t, nil
}

// ---- Agg ----

// AppendPayload appends the chunk payload of a. Pages must be in
// ascending order of Page and each page's Sites in ascending order of Site
// (SortAgg does that).
func (a *Agg) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(a.Serial)
	e.u32(a.TID)
	e.u32(a.Flags)
	e.u64(a.From)
	e.u64(a.To)
	e.u64(a.Drops)
	e.u32(uint32(len(a.Pages)))
	e.u32(0)
	var prev uint64
	for i := range a.Pages {
		p := &a.Pages[i]
		e.uvarint(p.Page - prev)
		prev = p.Page
		e.uvarint(p.Events)
		e.uvarint(p.Reads)
		e.uvarint(p.Writes)
		e.uvarint(p.First)
		e.uvarint(p.Last - p.First)
		e.uvarint(uint64(len(p.Sites)))
		var ps uint64
		for _, s := range p.Sites {
			e.uvarint(s.Site - ps)
			ps = s.Site
			e.uvarint(s.Count)
		}
	}
	return e.b
}

// SortAgg puts a's pages and sites in the order AppendPayload needs.
func SortAgg(a *Agg) {
	slices.SortFunc(a.Pages, func(x, y PageAgg) int {
		return cmp.Compare(x.Page, y.Page)
	})
	for i := range a.Pages {
		s := a.Pages[i].Sites
		if len(s) > 1 {
			slices.SortFunc(s, func(x, y SiteCount) int {
				return cmp.Compare(x.Site, y.Site)
			})
		}
	}
}

// DecodeAgg decodes a ChunkAgg payload.
func DecodeAgg(p []byte) (*Agg, error) {
	d := dec{b: p}
	a := &Agg{Serial: d.u64(), TID: d.u32(), Flags: d.u32(), From: d.u64(), To: d.u64(), Drops: d.u64()}
	n := d.u32()
	d.u32()
	if d.err != nil {
		return nil, d.err
	}
	// every page record takes at least 7 bytes
	if uint64(n)*7 > uint64(len(p)-d.off) {
		return nil, ErrShort
	}
	a.Pages = make([]PageAgg, n)
	var prev uint64
	for i := range a.Pages {
		pg := &a.Pages[i]
		pg.Page = prev + d.uvarint()
		prev = pg.Page
		pg.Events = d.uvarint()
		pg.Reads = d.uvarint()
		pg.Writes = d.uvarint()
		pg.First = d.uvarint()
		pg.Last = pg.First + d.uvarint()
		ns := d.uvarint()
		if d.err != nil {
			return nil, d.err
		}
		if ns*2 > uint64(len(p)-d.off) {
			return nil, ErrShort
		}
		pg.Sites = make([]SiteCount, ns)
		var ps uint64
		for j := range pg.Sites {
			ps += d.uvarint()
			pg.Sites[j] = SiteCount{Site: ps, Count: d.uvarint()}
		}
	}
	return a, d.err
}

// ---- Raw ----

// AppendPayload appends the chunk payload of r.
func (r *Raw) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(r.Serial)
	e.u32(r.TID)
	e.u32(r.Flags)
	e.u64(r.Drops)
	e.u64(r.Time)
	e.u32(uint32(len(r.Events)))
	e.u32(0)
	e.u64(0)
	for i := range r.Events {
		e.b = r.Events[i].Append(e.b)
	}
	return e.b
}

// DecodeRaw decodes a ChunkRaw payload.
func DecodeRaw(p []byte) (*Raw, error) {
	d := dec{b: p}
	r := &Raw{Serial: d.u64(), TID: d.u32(), Flags: d.u32(), Drops: d.u64(), Time: d.u64()}
	n := d.u32()
	d.u32()
	d.u64()
	if d.err != nil {
		return nil, d.err
	}
	if uint64(n)*EventSize > uint64(len(p)-d.off) {
		return nil, ErrShort
	}
	r.Events = make([]Event, n)
	for i := range r.Events {
		r.Events[i], _ = abi.UnmarshalEvent(d.bytes(EventSize)) // (the length was checked above)
	}
	return r, nil
}

// ---- Note, End ----

// AppendPayload appends the chunk payload of n.
func (n *Note) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u32(n.Kind)
	e.u32(n.TID)
	e.u64(n.Time)
	e.u64(n.Value)
	e.str(n.Text)
	return e.b
}

// DecodeNote decodes a ChunkNote payload.
func DecodeNote(p []byte) (*Note, error) {
	d := dec{b: p}
	n := &Note{Kind: d.u32(), TID: d.u32(), Time: d.u64(), Value: d.u64()}
	n.Text = d.str()
	return n, d.err
}

// AppendPayload appends the chunk payload of x.
func (x *End) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(x.Time)
	e.u64(x.Threads)
	e.u64(x.Events)
	e.u64(x.Drops)
	e.u32(x.Flags)
	e.u32(x.Errno)
	e.u64(x.Lost)
	return e.b
}

// DecodeEnd decodes a ChunkEnd payload.
func DecodeEnd(p []byte) (*End, error) {
	d := dec{b: p}
	x := &End{Time: d.u64(), Threads: d.u64(), Events: d.u64(), Drops: d.u64(), Flags: d.u32()}
	if d.err == nil && d.off < len(p) {
		x.Errno = d.u32() // (1.1)
	}
	if d.err == nil && d.off < len(p) {
		x.Lost = d.u64() // (1.6)
	}
	return x, d.err
}

// AppendPayload appends the chunk payload of s.
func (s *Status) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u32(s.Flags)
	e.u32(s.Errno)
	e.u64(s.Time)
	return e.b
}

// DecodeStatus decodes a ChunkStatus payload.
func DecodeStatus(p []byte) (*Status, error) {
	d := dec{b: p}
	s := &Status{Flags: d.u32(), Errno: d.u32(), Time: d.u64()}
	return s, d.err
}

// Decode decodes a chunk's payload into *Header, *Object, *ThreadStart,
// *ThreadExit, *Agg, *Raw, *Note, *End, *Status, *BlockObject,
// *BlockCounts, *Allocs or *Maps (an AGGC chunk decodes as *Agg, a
// DEFLATE chunk as the chunk it holds). Unknown types return (nil, nil):
// newer minor versions may add chunk types, which readers skip.
func Decode(typ ChunkType, p []byte) (any, error) {
	switch typ {
	case ChunkHeader:
		return DecodeHeader(p)
	case ChunkObject:
		return DecodeObject(p)
	case ChunkThread:
		return DecodeThreadStart(p)
	case ChunkThreadExit:
		return DecodeThreadExit(p)
	case ChunkAgg:
		return DecodeAgg(p)
	case ChunkRaw:
		return DecodeRaw(p)
	case ChunkNote:
		return DecodeNote(p)
	case ChunkEnd:
		return DecodeEnd(p)
	case ChunkStatus:
		return DecodeStatus(p)
	case ChunkBlocks:
		return DecodeBlockObject(p)
	case ChunkCounts:
		return DecodeBlockCounts(p)
	case ChunkAllocs:
		return DecodeAllocs(p)
	case ChunkMaps:
		return DecodeMaps(p)
	case ChunkDeflate:
		return DecodeDeflate(p)
	case ChunkAggCols:
		return DecodeAggCols(p)
	}
	return nil, nil
}
