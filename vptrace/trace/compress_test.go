package trace

import (
	"bytes"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
)

// randomAggs makes aggregates like the runtime's: sites from a small set
// with fixed kinds, times from a coarse clock, runs of adjacent pages. With
// consistent, each page's counts follow from its sites' kinds; else some
// do not (the aggregator saw a site's kind change).
func randomAggs(rng *rand.Rand, consistent bool) ([]*Agg, map[uint64]Kind) {
	kinds := map[uint64]Kind{}
	var sites []uint64
	for i := range 40 {
		s := 0x55550000 + uint64(i)*32
		sites = append(sites, s)
		kinds[s] = []Kind{KindRead, KindWrite, KindRMW, 0}[rng.IntN(4)]
	}
	var aggs []*Agg
	t := uint64(0)
	for k := range 30 {
		a := &Agg{Serial: uint64(k%3 + 1), TID: uint32(100 + k%3), From: t, To: t + 1e8, Drops: uint64(k)}
		page := uint64(0x7f0000000 + rng.IntN(1<<20))
		for range rng.IntN(2000) {
			if rng.IntN(8) == 0 {
				page += uint64(rng.IntN(5000))
			}
			page++
			p := PageAgg{Page: page, First: t + uint64(rng.IntN(100))*1e6}
			p.Last = p.First + uint64(rng.IntN(3))*1e6
			for range 1 + rng.IntN(3) {
				s := sites[rng.IntN(len(sites))]
				n := uint64(1 + rng.IntN(300))
				p.Sites = addSite(p.Sites, s, n)
				p.Events += n
				if kinds[s]&KindRead != 0 {
					p.Reads += n
				}
				if kinds[s]&KindWrite != 0 {
					p.Writes += n
				}
			}
			if !consistent && rng.IntN(50) == 0 {
				p.Reads++
			}
			a.Pages = append(a.Pages, p)
		}
		SortAgg(a)
		aggs = append(aggs, a)
		t += 1e8
	}
	return aggs, kinds
}

func writeAggs(t *testing.T, aggs []*Agg, o WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriterOptions(&buf, o)
	if err != nil {
		t.Fatal(err)
	}
	w.Begin(&Header{PID: 7, Program: "x"})
	obj := &Object{Desc: 1, SitesAddr: 0x55550000, Strs: bytes.Repeat([]byte("name\x00"), 100)}
	for range 40 {
		obj.Sites = append(obj.Sites, SiteRec{Kind: KindRead, Sym: NoSym})
	}
	w.Object(obj)
	for _, a := range aggs {
		w.Agg(a)
	}
	w.Note(&Note{Kind: NoteText, Text: "short"})
	w.End(&End{Time: 1, Flags: EndClean})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// chunks reads every chunk's decoded value, and counts the packed ones.
func chunks(t *testing.T, data []byte) (vals []any, packed int) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Packed {
			packed++
		}
		v, err := c.Decode()
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	if r.Damaged != 0 || r.Truncated {
		t.Fatalf("damaged %d, truncated %v", r.Damaged, r.Truncated)
	}
	return vals, packed
}

// TestCompress: chunks written compressed (DEFLATE, aggregates as AGGC) read
// back equal to the same chunks written plain, with and without the site
// kinds, and with counts the kinds do not explain.
func TestCompress(t *testing.T) {
	for _, c := range []struct {
		name       string
		consistent bool
		kinds      bool
	}{{"kinds", true, true}, {"no-kinds", true, false}, {"inconsistent", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			aggs, kinds := randomAggs(rng, c.consistent)
			plain := writeAggs(t, aggs, WriterOptions{})
			o := WriterOptions{Compress: true}
			if c.kinds {
				o.Kinds = func(s uint64) Kind { return kinds[s] }
			}
			packed := writeAggs(t, aggs, o)
			want, n0 := chunks(t, plain)
			got, n1 := chunks(t, packed)
			// the object and the aggregates of packMin bytes or more;
			// not the short ones, note and end
			wantPacked, pk := 1, &packer{}
			for _, a := range aggs {
				SortAgg(a)
				if len(pk.appendAggCols(nil, a, o.Kinds)) >= packMin {
					wantPacked++
				}
			}
			if n0 != 0 || n1 != wantPacked || wantPacked < len(aggs)/2 {
				t.Errorf("packed chunks: plain %d, compressed %d (want %d of %d aggregates)", n0, n1, wantPacked-1, len(aggs))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("compressed trace reads differently")
			}
			ratio := float64(len(plain)) / float64(len(packed))
			t.Logf("%d -> %d bytes (%.1fx)", len(plain), len(packed), ratio)
			if ratio < 2 { // random counts; real traces: 8-11x (FORMAT.md)
				t.Errorf("compressed only %.1fx", ratio)
			}
			// and Load-style aggregation agrees
			if a, b := readAll(t, plain), readAll(t, packed); !reflect.DeepEqual(a.Threads, b.Threads) {
				t.Errorf("threads differ")
			}
		})
	}
}

// TestCompressBad: a DEFLATE chunk that passes its CRC but does not
// decompress is reported as an undecodable chunk, and the rest is read.
func TestCompressBad(t *testing.T) {
	for _, c := range []struct {
		name    string
		payload []byte
	}{
		{"garbage", append([]byte{byte(ChunkNote), 0, 0, 0, 10, 0, 0, 0}, "not deflate at all"...)},
		{"short", []byte{byte(ChunkNote), 0}},
		{"nested", []byte{byte(ChunkDeflate), 0, 0, 0, 0, 0, 0, 0}},
		{"header", []byte{byte(ChunkHeader), 0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := sample(t)
			data = AppendChunk(data, ChunkDeflate, c.payload)
			data = AppendChunk(data, ChunkNote, (&Note{Kind: NoteText, Text: "after"}).AppendPayload(nil))
			tr := readAll(t, data)
			if len(tr.Errors) != 1 || len(tr.Notes) != 2 {
				t.Errorf("errors %q, notes %d", tr.Errors, len(tr.Notes))
			}
		})
	}
	// wrong size field
	pk := &packer{}
	if p := pk.pack(ChunkNote, (&Note{Kind: NoteText, Text: string(bytes.Repeat([]byte("x"), packMin-40))}).AppendPayload(nil)); p != nil || pk.fw != nil {
		t.Errorf("a payload under packMin packed (or the DEFLATE writer made for it)")
	}
	p := pk.pack(ChunkNote, (&Note{Kind: NoteText, Text: string(bytes.Repeat([]byte("x"), 2*packMin))}).AppendPayload(nil))
	p[4]++
	if _, err := DecodeDeflate(p); err == nil {
		t.Errorf("a wrong size decoded")
	}
}

func FuzzAggCols(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	aggs, kinds := randomAggs(rng, false)
	pk := &packer{}
	f.Add(pk.appendAggCols(nil, aggs[1], func(s uint64) Kind { return kinds[s] }))
	f.Add(pk.appendAggCols(nil, &Agg{Pages: []PageAgg{{Page: 1, Events: 1, Sites: []SiteCount{{1, 1}}}}}, nil))
	f.Fuzz(func(t *testing.T, p []byte) {
		a, err := DecodeAggCols(p)
		if err != nil {
			return
		}
		// what decodes encodes again to the same aggregate
		b, err := DecodeAggCols(pk.appendAggCols(nil, a, nil))
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Pages) != len(b.Pages) {
			t.Fatalf("%d pages, then %d", len(a.Pages), len(b.Pages))
		}
	})
}

// TestWriterCRC: a writer given its own CRC-32C function (the runtime's:
// the C part's) writes the bytes the default one does, and calls it for
// every chunk; one that computes something else makes chunks the reader
// rejects.
func TestWriterCRC(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	aggs, _ := randomAggs(rng, true)
	for _, compress := range []bool{false, true} {
		calls := 0
		own := func(crc uint32, p []byte) uint32 {
			calls++
			return crc32.Update(crc, crc32.MakeTable(crc32.Castagnoli), p)
		}
		want := writeAggs(t, aggs, WriterOptions{Compress: compress})
		got := writeAggs(t, aggs, WriterOptions{Compress: compress, CRC: own})
		if !bytes.Equal(got, want) || calls == 0 {
			t.Errorf("compress %v: own CRC: %d calls, same bytes %v", compress, calls, bytes.Equal(got, want))
		}
		bad := writeAggs(t, aggs, WriterOptions{Compress: compress, CRC: func(crc uint32, p []byte) uint32 { return crc + 1 }})
		if r, err := NewReader(bytes.NewReader(bad)); err == nil {
			if tr, err := r.ReadAll(); err == nil {
				t.Errorf("compress %v: chunks with wrong CRCs read: %d damaged regions, %d threads", compress, tr.Damaged, len(tr.Threads))
			}
		}
	}
}
