package trace

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Compressed chunks (format 1.4): a DEFLATE chunk holds another chunk's
// payload compressed (raw DEFLATE, RFC 1951), one stream per chunk, so
// every chunk is still checked (CRC) and decoded by itself and a crash
// loses at most the chunk being written. The Go aggregator stores its
// aggregates as AGGC chunks (the AGG records in columns, with per-chunk
// dictionaries of times and sites) inside DEFLATE chunks. Reader.Next
// unwraps DEFLATE chunks: readers see the inner chunk.
//
// Why DEFLATE and not zstd: on AGGC payloads, whose dictionaries leave
// little for a matcher to find, the standard library's fastest DEFLATE
// level compresses as well as zstd's default level (zstd's test programs:
// within 4% either way) at the same speed, and costs no dependency, no
// package initialisation in every process (a zstd package built its CRC
// tables at init, 0.16 ms of every hijack run) and no megabyte in the
// runtime linked into traced programs.

// Fixed payload sizes.
const (
	packedFixed  = 8
	aggColsFixed = 48
)

// AggCols flags (the u32 at offset 44 of an AGGC payload).
const (
	// aggColsCounts: the events, reads and writes columns are present;
	// without it each page's events are the sum of its site counts and
	// its reads and writes the sums over the sites whose kind (in the
	// site dictionary) has bit 0 (read) or 1 (write).
	aggColsCounts = 1
)

// ErrCompressed: a DEFLATE chunk could not be decompressed.
var ErrCompressed = errors.New("bad compressed chunk")

// inflater decompresses DEFLATE chunks, reusing its state.
type inflater struct {
	src bytes.Reader
	fr  io.ReadCloser
	out bytes.Buffer
}

// unpack decompresses a DEFLATE chunk's payload: the inner chunk's type
// and payload (valid until the next call).
func (in *inflater) unpack(p []byte) (ChunkType, []byte, error) {
	if len(p) < packedFixed {
		return 0, nil, ErrShort
	}
	typ := ChunkType(le.Uint16(p))
	flags := le.Uint16(p[2:])
	size := le.Uint32(p[4:])
	switch {
	case flags != 0:
		return 0, nil, fmt.Errorf("%w: flags %#x", ErrCompressed, flags)
	case typ == ChunkDeflate || typ == ChunkHeader || typ == ChunkStatus:
		return 0, nil, fmt.Errorf("%w: it holds a %s chunk", ErrCompressed, typ)
	case size > MaxChunk:
		return 0, nil, fmt.Errorf("%w: size %d", ErrCompressed, size)
	}
	in.src.Reset(p[packedFixed:])
	if in.fr == nil {
		in.fr = flate.NewReader(&in.src)
	} else if err := in.fr.(flate.Resetter).Reset(&in.src, nil); err != nil {
		return 0, nil, err
	}
	in.out.Reset()
	// (the buffer grows with what the stream holds, not with the size
	// field: a damaged one cannot make it allocate a gigabyte)
	if _, err := in.out.ReadFrom(io.LimitReader(in.fr, int64(size)+1)); err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrCompressed, err)
	}
	if in.out.Len() != int(size) {
		return 0, nil, fmt.Errorf("%w: %d bytes, not %d", ErrCompressed, in.out.Len(), size)
	}
	return typ, in.out.Bytes(), nil
}

// DecodeDeflate decompresses a ChunkDeflate payload and decodes the chunk
// it holds (see Decode).
func DecodeDeflate(p []byte) (any, error) {
	var in inflater
	typ, inner, err := in.unpack(p)
	if err != nil {
		return nil, err
	}
	return Decode(typ, inner)
}

// packer compresses chunk payloads for a Writer.
type packer struct {
	fw      *flate.Writer // made at the first payload worth packing
	buf     bytes.Buffer
	times   []uint64
	sites   []uint64
	scratch []byte
	fi, li  []uint32 // page's first and last time, as dictionary indexes
	si      []uint32 // sites, as dictionary indexes

	tseen, sseen recent
	tx, sx       dictIndex
}

// packMin is the smallest payload a packer compresses. A DEFLATE writer
// costs 1.2 MB and 0.25 ms to make (its hash tables): a short traced
// process (a test suite's hundreds) writes a few hundred bytes of
// aggregates in all, and compressing those saves a few percent of them.
const packMin = 1024

// pack returns the payload of a DEFLATE chunk holding a chunk of type
// typ, or nil when compression does not make it smaller.
func (pk *packer) pack(typ ChunkType, payload []byte) []byte {
	if len(payload) < packMin {
		return nil
	}
	if pk.fw == nil {
		fw, err := flate.NewWriter(&pk.buf, flate.BestSpeed)
		if err != nil {
			return nil
		}
		pk.fw = fw
	}
	pk.buf.Reset()
	var h [packedFixed]byte
	le.PutUint16(h[0:], uint16(typ))
	le.PutUint32(h[4:], uint32(len(payload)))
	pk.buf.Write(h[:])
	pk.fw.Reset(&pk.buf)
	if _, err := pk.fw.Write(payload); err != nil {
		return nil
	}
	if err := pk.fw.Close(); err != nil {
		return nil
	}
	if pk.buf.Len() >= len(payload) {
		return nil
	}
	return pk.buf.Bytes()
}

// ---- AggCols ----

// appendAggCols appends the AGGC payload of a (its pages and sites sorted,
// SortAgg). kinds, when not nil, gives the kind bits the aggregator
// counted each site's events as: when every page's events, reads and
// writes follow from its sites' counts and kinds, the chunk leaves them
// out.
func (pk *packer) appendAggCols(dst []byte, a *Agg, kinds func(site uint64) Kind) []byte {
	// the dictionaries: few distinct values, often repeated by
	// neighbouring pages (skipped before sorting)
	times, sites := pk.times[:0], pk.sites[:0]
	tseen, sseen := &pk.tseen, &pk.sseen
	clear(tseen.v[:])
	clear(sseen.v[:])
	for i := range a.Pages {
		p := &a.Pages[i]
		if tseen.add(p.First) {
			times = append(times, p.First)
		}
		if tseen.add(p.Last) {
			times = append(times, p.Last)
		}
		for _, s := range p.Sites {
			if sseen.add(s.Site) {
				sites = append(sites, s.Site)
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	slices.Sort(sites)
	sites = slices.Compact(sites)
	pk.times, pk.sites = times, sites
	// the dictionary indexes of every page's times and sites
	tx, sx := &pk.tx, &pk.sx
	tx.reset(times)
	sx.reset(sites)
	fi, li, si := pk.fi[:0], pk.li[:0], pk.si[:0]
	for i := range a.Pages {
		p := &a.Pages[i]
		fi = append(fi, tx.index(p.First))
		li = append(li, tx.index(p.Last))
		for _, s := range p.Sites {
			si = append(si, sx.index(s.Site))
		}
	}
	pk.fi, pk.li, pk.si = fi, li, si
	kb := pk.scratch[:0]
	counts := kinds == nil
	if !counts {
		for _, s := range sites {
			kb = append(kb, byte(kinds(s)&(KindRead|KindWrite)))
		}
		k := 0
		for i := range a.Pages {
			p := &a.Pages[i]
			var ev, rd, wr uint64
			for _, s := range p.Sites {
				ev += s.Count
				if kb[si[k]]&byte(KindRead) != 0 {
					rd += s.Count
				}
				if kb[si[k]]&byte(KindWrite) != 0 {
					wr += s.Count
				}
				k++
			}
			if ev != p.Events || rd != p.Reads || wr != p.Writes {
				counts = true
				break
			}
		}
	}
	if counts {
		kb = kb[:0]
		for range sites {
			kb = append(kb, 0)
		}
	}
	pk.scratch = kb
	e := enc{dst}
	e.u64(a.Serial)
	e.u32(a.TID)
	e.u32(a.Flags)
	e.u64(a.From)
	e.u64(a.To)
	e.u64(a.Drops)
	e.u32(uint32(len(a.Pages)))
	var flags uint32
	if counts {
		flags |= aggColsCounts
	}
	e.u32(flags)
	e.uvarint(uint64(len(times)))
	var prev uint64
	for _, t := range times {
		e.uvarint(t - prev)
		prev = t
	}
	e.uvarint(uint64(len(sites)))
	prev = 0
	for _, s := range sites {
		e.uvarint(s - prev)
		prev = s
	}
	e.b = append(e.b, kb...)
	prev = 0
	for i := range a.Pages {
		e.uvarint(a.Pages[i].Page - prev)
		prev = a.Pages[i].Page
	}
	for i := range a.Pages {
		e.uvarint(uint64(len(a.Pages[i].Sites)))
	}
	for _, k := range fi {
		e.uvarint(uint64(k))
	}
	for i := range li {
		e.uvarint(uint64(li[i] - fi[i]))
	}
	for _, k := range si {
		e.uvarint(uint64(k))
	}
	for i := range a.Pages {
		for _, s := range a.Pages[i].Sites {
			e.uvarint(s.Count)
		}
	}
	if counts {
		for i := range a.Pages {
			e.uvarint(a.Pages[i].Events)
		}
		for i := range a.Pages {
			e.uvarint(a.Pages[i].Reads)
		}
		for i := range a.Pages {
			e.uvarint(a.Pages[i].Writes)
		}
	}
	return e.b
}

// recent is a direct-mapped set of recently seen values: it spares the
// dictionaries most repeats before they are sorted.
type recent struct{ v [recentSize]uint64 }

// recentSize is the size of the caches of recent values (a power of 2):
// a chunk's dictionaries hold some hundreds of values.
const recentSize = 1024

func hashSlot(v uint64) uint64 { return (v * 0x9E3779B97F4A7C15) >> 54 }

// add reports whether v was not among the recent values, and adds it.
func (r *recent) add(v uint64) bool {
	h := hashSlot(v)
	if r.v[h] == v+1 {
		return false
	}
	r.v[h] = v + 1
	return true
}

// dictIndex finds values in a sorted dictionary, remembering recent ones.
type dictIndex struct {
	list []uint64
	key  [recentSize]uint64 // value+1
	k    [recentSize]uint32
}

func (x *dictIndex) reset(list []uint64) {
	x.list = list
	clear(x.key[:])
}

func (x *dictIndex) index(v uint64) uint32 {
	h := hashSlot(v)
	if x.key[h] != v+1 {
		k, _ := slices.BinarySearch(x.list, v)
		x.key[h], x.k[h] = v+1, uint32(k)
	}
	return x.k[h]
}

// DecodeAggCols decodes a ChunkAggCols payload into the Agg it holds.
func DecodeAggCols(p []byte) (*Agg, error) {
	d := dec{b: p}
	a := &Agg{Serial: d.u64(), TID: d.u32(), Flags: d.u32(), From: d.u64(), To: d.u64(), Drops: d.u64()}
	n := d.u32()
	flags := d.u32()
	// list reads a count and that many uvarints, each at least a byte
	count := func() int {
		c := d.uvarint()
		if d.err == nil && c > uint64(len(p)-d.off) {
			d.err = ErrShort
		}
		if d.err != nil {
			return 0
		}
		return int(c)
	}
	times := make([]uint64, count())
	var prev uint64
	for i := range times {
		prev += d.uvarint()
		times[i] = prev
	}
	sites := make([]uint64, count())
	prev = 0
	for i := range sites {
		prev += d.uvarint()
		sites[i] = prev
	}
	kinds := d.bytes(len(sites))
	if d.err != nil {
		return nil, d.err
	}
	// every page takes at least 4 bytes (page, nsites, first, span)
	if uint64(n)*4 > uint64(len(p)-d.off) {
		return nil, ErrShort
	}
	a.Pages = make([]PageAgg, n)
	prev = 0
	for i := range a.Pages {
		prev += d.uvarint()
		a.Pages[i].Page = prev
	}
	nsites := make([]int, n)
	npairs := uint64(0)
	for i := range nsites {
		c := d.uvarint()
		npairs += c
		if d.err == nil && npairs > uint64(len(p)) {
			d.err = ErrShort
		}
		nsites[i] = int(c)
	}
	idx := func(list []uint64, k uint64) uint64 {
		if k >= uint64(len(list)) {
			if d.err == nil {
				d.err = fmt.Errorf("index %d out of a dictionary of %d", k, len(list))
			}
			return 0
		}
		return list[k]
	}
	first := make([]uint64, n)
	for i := range a.Pages {
		first[i] = d.uvarint()
		a.Pages[i].First = idx(times, first[i])
	}
	for i := range a.Pages {
		a.Pages[i].Last = idx(times, first[i]+d.uvarint())
	}
	if d.err != nil {
		return nil, d.err
	}
	pairs := make([]SiteCount, npairs)
	sk := make([]byte, npairs)
	k := 0
	for i := range a.Pages {
		a.Pages[i].Sites = pairs[k : k+nsites[i] : k+nsites[i]]
		for j := range nsites[i] {
			x := d.uvarint()
			pairs[k+j].Site = idx(sites, x)
			if x < uint64(len(kinds)) {
				sk[k+j] = kinds[x]
			}
		}
		k += nsites[i]
	}
	for i := range pairs {
		pairs[i].Count = d.uvarint()
	}
	if flags&aggColsCounts != 0 {
		for i := range a.Pages {
			a.Pages[i].Events = d.uvarint()
		}
		for i := range a.Pages {
			a.Pages[i].Reads = d.uvarint()
		}
		for i := range a.Pages {
			a.Pages[i].Writes = d.uvarint()
		}
	} else {
		k = 0
		for i := range a.Pages {
			pg := &a.Pages[i]
			for j := range pg.Sites {
				c := pg.Sites[j].Count
				pg.Events += c
				if sk[k+j]&byte(KindRead) != 0 {
					pg.Reads += c
				}
				if sk[k+j]&byte(KindWrite) != 0 {
					pg.Writes += c
				}
			}
			k += len(pg.Sites)
		}
	}
	return a, d.err
}
