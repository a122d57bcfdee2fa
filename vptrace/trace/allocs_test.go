package trace

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// allocsSample: events that exercise every part of the compact encoding:
// seq gaps, backwards and unchanged; time steps, backwards; addresses up
// and down, 0 and the top; every kind; the old address of the moving
// kinds; more sites than the table has slots, and sites that share one;
// flags, prot and paths.
func allocsSample() *Allocs {
	a := &Allocs{Serial: 3, TID: 9, Flags: FlagExit, Time: 77, Lost: 2}
	add := func(v AllocEvent) { a.Events = append(a.Events, v) }
	add(AllocEvent{Seq: 1, Time: 0, Addr: 0x5555_0000_1000, Size: 32, Site: 0x401234, Kind: AllocMalloc})
	add(AllocEvent{Seq: 2, Time: 0, Addr: 0x5555_0000_1000, Site: 0x401250, Kind: AllocFree})
	add(AllocEvent{Seq: 9, Time: 1_000_000, Addr: 0x5555_0000_0fe0, Size: 1 << 40, Site: 0x401234, Kind: AllocCalloc})
	add(AllocEvent{Seq: 7, Time: 500, Addr: 0, Old: 0x5555_0000_0fe0, Site: 0x401234, Kind: AllocRealloc})
	add(AllocEvent{Seq: 8, Time: 500, Addr: ^uint64(0) &^ 0xfff, Size: ^uint64(0), Old: 0x1000, Site: ^uint64(0), Kind: AllocMremap, Flags: AllocFixed})
	add(AllocEvent{Seq: 8, Time: ^uint64(0), Addr: 0x7f00_0000_0000, Size: 8192, Site: 0, Kind: AllocMmap,
		Flags: AllocFile | AllocShared, Prot: 0xffff_ffff, Path: "/usr/lib/x86_64-linux-gnu/libc.so.6"})
	add(AllocEvent{Seq: 0, Time: 0, Addr: 0x7f00_0000_0000, Size: 8192, Site: 7, Kind: AllocMunmap})
	for k := AllocMalloc; k <= AllocStrndup; k++ {
		add(AllocEvent{Seq: 100 + uint64(k), Time: 3_000_000, Addr: 0x4000 + uint64(k)*16, Size: uint64(k),
			Old: map[bool]uint64{true: 0x4000}[k.Moves()], Site: 0x402000 + uint64(k)*5, Kind: k})
	}
	// 300 sites: slots shared, sites evicted and back
	for i := 0; i < 600; i++ {
		add(AllocEvent{Seq: 200 + uint64(i), Time: 4_000_000, Addr: 0x9000 + uint64(i%7)*48, Size: 24,
			Site: 0x7f12_3456_0000 + uint64(i%300)*13, Kind: AllocNew})
	}
	add(AllocEvent{Seq: 1000, Time: 5_000_000, Addr: 0x10, Site: 1, Kind: 31, Path: strings.Repeat("p", compactPath)})
	return a
}

// TestAllocsCompact: compact records decode to what was encoded, as the
// fixed ones do; the chunk's count hides from readers before 1.5.
func TestAllocsCompact(t *testing.T) {
	a := allocsSample()
	p := a.AppendCompactPayload(nil)
	if le.Uint32(p[12:]) != FlagExit|AllocsCompact || le.Uint32(p[32:]) != ^uint32(0) || le.Uint32(p[36:]) != uint32(len(a.Events)) {
		t.Fatalf("compact header %x", p[:40])
	}
	b, err := DecodeAllocs(p)
	if err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("compact: %v\n got %+v\nwant %+v", err, b, a)
	}
	f := a.AppendPayload(nil)
	if b, err := DecodeAllocs(f); err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("fixed: %v", err)
	}
	// a fixed payload never carries the flag, whatever Flags holds
	c := *a
	c.Flags |= AllocsCompact
	if b, err := DecodeAllocs(c.AppendPayload(nil)); err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("fixed with the flag in Flags: %v", err)
	}
	short := *a
	short.Events = a.Events[:len(a.Events)-1] // (without the long path)
	if c, f := len(short.AppendCompactPayload(nil)), len(short.AppendPayload(nil)); c >= f/5 {
		t.Errorf("compact %d bytes, fixed %d", c, f)
	}
	// every truncation is an error (the last record's path is long: a cut
	// inside it is one too)
	for n := 0; n < len(p); n++ {
		if _, err := DecodeAllocs(p[:n]); err == nil {
			t.Fatalf("compact payload cut at %d of %d decoded", n, len(p))
		}
	}
	// an empty chunk (a thread's FINAL with only its lost count)
	e := &Allocs{TID: 4, Flags: FlagExit, Lost: 5}
	if b, err := DecodeAllocs(e.AppendCompactPayload(nil)); err != nil || b.Lost != 5 || len(b.Events) != 0 || b.Flags != FlagExit {
		t.Errorf("empty compact: %+v %v", b, err)
	}
}

// TestAllocsCompactBytes: the encoding byte by byte, as FORMAT.md shows it
// (and as the runtime's C encoder writes it).
func TestAllocsCompactBytes(t *testing.T) {
	a := &Allocs{Serial: 1, TID: 100, Time: 5, Events: []AllocEvent{
		{Seq: 1, Time: 0, Addr: 0x1000, Size: 32, Site: 0x401234, Kind: AllocMalloc},
		{Seq: 2, Time: 0, Addr: 0x1000, Site: 0x401234, Kind: AllocFree},
		{Seq: 5, Time: 1_000_000, Addr: 0x1030, Size: 200, Old: 0x1000, Site: 0x401234, Kind: AllocRealloc},
	}}
	const want = "" +
		"01 8040 20 bc b4a48002 " + // malloc: seq 1, time 0: no deltas; addr +0x1000, size 32, site new in slot 0x3c
		"05 00 00 3c " + // free: addr +0, size 0, site in slot 0x3c
		"63 06 80897a 60 c801 5f 3c" // realloc: seq +3, time +1000000, addr +0x30, size 200, old -0x30, slot 0x3c
	p := a.AppendCompactPayload(nil)[40:]
	w, _ := hex.DecodeString(strings.ReplaceAll(want, " ", ""))
	if !bytes.Equal(p, w) {
		t.Errorf("records\n got % x\nwant % x", p, w)
	}
	site, mul := uint64(0x401234), uint64(0x9E3779B97F4A7C15)
	if s := byte((site * mul) >> 57); s != 0x3c {
		t.Errorf("slot %#x", s)
	}
}

// TestAllocsCompactBad: malformed compact records are errors naming the
// record.
func TestAllocsCompactBad(t *testing.T) {
	hdr := func(n uint32) []byte {
		p := (&Allocs{TID: 1}).AppendCompactPayload(nil)
		le.PutUint32(p[36:], n)
		return p
	}
	long := binary.AppendUvarint(nil, compactPath+1)
	for _, c := range []struct {
		name string
		recs []byte
		n    uint32
		want string
	}{
		{"kind 0", []byte{0x00, 0, 0, 0}, 1, "kind 0"},
		{"more records than bytes", []byte{0x01, 0, 0, 0}, 2, "2 compact records in 4 bytes"},
		{"varint too long", append([]byte{0x01}, bytes.Repeat([]byte{0xff}, 11)...), 1, "address"},
		{"no site", []byte{0x01, 0, 0, 0x81}, 1, "site"},
		{"flags too large", []byte{0x81, 0, 0, 0, 0x80, 0x80, 0x04, 0, 0}, 1, "too large"},
		{"path too long", append([]byte{0x81, 0, 0, 0, 0, 0}, long...), 1, "path of 4097"},
		{"path beyond the chunk", []byte{0x81, 0, 0, 0, 0, 0, 5, 'a'}, 1, "path of 5"},
	} {
		_, err := DecodeAllocs(append(hdr(c.n), c.recs...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// FuzzAllocs: any payload DecodeAllocs accepts encodes again, both ways,
// to the same events.
func FuzzAllocs(f *testing.F) {
	// (small seeds: the whole sample, 40 KB, stalls the fuzzing engine)
	a := allocsSample()
	a.Events = a.Events[:40] // every kind, a few sites
	f.Add(a.AppendCompactPayload(nil))
	a.Events = a.Events[:8]
	f.Add(a.AppendPayload(nil))
	f.Add(a.AppendCompactPayload(nil))
	f.Add((&Allocs{Flags: FlagExit, Lost: 1}).AppendCompactPayload(nil))
	f.Fuzz(func(t *testing.T, p []byte) {
		a, err := DecodeAllocs(p)
		if err != nil {
			return
		}
		b, err := DecodeAllocs(a.AppendPayload(nil))
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("fixed again: %v", err)
		}
		for _, v := range a.Events {
			if v.Kind == 0 || v.Kind > compactKind || len(v.Path) > compactPath || (!v.Kind.Moves() && v.Old != 0) {
				return // (not what the compact encoding holds)
			}
		}
		b, err = DecodeAllocs(a.AppendCompactPayload(nil))
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("compact again: %v", err)
		}
	})
}
