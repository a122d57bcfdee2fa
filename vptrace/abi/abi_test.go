package abi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// records are the package's record types with their sizes.
var records = []struct {
	t    reflect.Type
	size int
}{
	{reflect.TypeFor[Object](), ObjectSize},
	{reflect.TypeFor[Site](), SiteSize},
	{reflect.TypeFor[Event](), EventSize},
	{reflect.TypeFor[Blocks](), BlocksSize},
	{reflect.TypeFor[Block](), BlockSize},
}

// TestLayout: every record's Go layout is its byte layout: no padding
// (encoding/binary's packed size equals the struct's), the size constant.
func TestLayout(t *testing.T) {
	for _, r := range records {
		v := reflect.New(r.t).Elem().Interface()
		if got := binary.Size(v); got != r.size || int(r.t.Size()) != r.size {
			t.Errorf("%s: %d bytes packed, %d in memory, want %d", r.t.Name(), got, r.t.Size(), r.size)
		}
	}
	if off := reflect.TypeFor[Object]().Field(4).Offset; off != ObjectSitesRelOff {
		t.Errorf("SitesRel at %d, want %d", off, ObjectSitesRelOff)
	}
	if f, _ := reflect.TypeFor[Object]().FieldByName("StrsRel"); f.Offset != ObjectStrsRelOff {
		t.Errorf("StrsRel at %d, want %d", f.Offset, ObjectStrsRelOff)
	}
	if f, _ := reflect.TypeFor[Site]().FieldByName("Kind"); f.Offset != SiteKindOff {
		t.Errorf("Kind at %d, want %d", f.Offset, SiteKindOff)
	}
	for name, off := range map[string]uintptr{"TPOff": BlocksTPOffOff, "BlocksRel": BlocksBlocksRelOff, "StrsRel": BlocksStrsRelOff} {
		if f, _ := reflect.TypeFor[Blocks]().FieldByName(name); f.Offset != off {
			t.Errorf("Blocks.%s at %d, want %d", name, f.Offset, off)
		}
	}
}

// fill sets every field of the struct v points to from rng.
func fill(v reflect.Value, rng *rand.Rand) {
	v = v.Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(rng.Uint64())
		case reflect.Int32:
			f.SetInt(int64(int32(rng.Uint32())))
		case reflect.Int64:
			f.SetInt(int64(rng.Uint64()))
		default:
			panic("field kind " + f.Kind().String())
		}
	}
}

// TestMarshal: Marshal writes what encoding/binary writes (little-endian,
// packed, in field order), and Unmarshal reads it back, for random records.
func TestMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var o Object
		var s Site
		var e Event
		var bs Blocks
		var bl Block
		fill(reflect.ValueOf(&o), rng)
		fill(reflect.ValueOf(&s), rng)
		fill(reflect.ValueOf(&e), rng)
		fill(reflect.ValueOf(&bs), rng)
		fill(reflect.ValueOf(&bl), rng)
		for _, c := range []struct {
			v         any
			marshal   []byte
			unmarshal func([]byte) (any, error)
		}{
			{o, o.Marshal(), func(b []byte) (any, error) { return UnmarshalObject(b) }},
			{s, s.Marshal(), func(b []byte) (any, error) { return UnmarshalSite(b) }},
			{e, e.Marshal(), func(b []byte) (any, error) { return UnmarshalEvent(b) }},
			{bs, bs.Marshal(), func(b []byte) (any, error) { return UnmarshalBlocks(b) }},
			{bl, bl.Marshal(), func(b []byte) (any, error) { return UnmarshalBlock(b) }},
		} {
			var want bytes.Buffer
			if err := binary.Write(&want, binary.LittleEndian, c.v); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(c.marshal, want.Bytes()) {
				t.Fatalf("%T %+v: Marshal\n% x\nencoding/binary\n% x", c.v, c.v, c.marshal, want.Bytes())
			}
			back, err := c.unmarshal(append(c.marshal, 0xee)) // a longer buffer reads the record
			if err != nil || back != c.v {
				t.Fatalf("%T: %+v back as %+v, %v", c.v, c.v, back, err)
			}
			if _, err := c.unmarshal(c.marshal[:len(c.marshal)-1]); !errors.Is(err, ErrShort) {
				t.Fatalf("%T: one byte short: %v, want ErrShort", c.v, err)
			}
		}
	}
}

// TestKnownBytes pins a descriptor and a site record to the bytes of
// ABI.md's layout, written out by hand.
func TestKnownBytes(t *testing.T) {
	o := Object{Magic: Magic, Version: Version, NSites: 2, Flags: FlagIE | FlagIndirect | FlagPacked | FlagSlots, SitesRel: 32, StrsRel: 92,
		Name: 1, NStrs: 9, ID: 0x0102030405060708, Reserved: 0, PackedRel: 0x70, PackedLen: 0x33, NSlots: 3}
	want := []byte("VPT1" + "\x01\x00\x00\x00" + "\x02\x00\x00\x00" + "\x1d\x00\x00\x00" + "\x20\x00\x00\x00" + "\x5c\x00\x00\x00" +
		"\x01\x00\x00\x00" + "\x09\x00\x00\x00" + "\x08\x07\x06\x05\x04\x03\x02\x01" + "\x00\x00\x00\x00\x00\x00\x00\x00" +
		"\x70\x00\x00\x00" + "\x33\x00\x00\x00" + "\x03\x00\x00\x00" + "\x00\x00\x00\x00")
	if got := o.Marshal(); !bytes.Equal(got, want) {
		t.Errorf("descriptor\n% x\nwant\n% x", got, want)
	}
	s := Site{Func: 3, InsnOff: 0x10, Sym: NoSym, SymOff: -8, Kind: KindRMW | KindRange, Seg: SegGlobal, Size: 8,
		Covers: 2, Block: DynStep(5, -24), Score: 1500000}
	want = []byte("\x03\x00\x00\x00" + "\x10\x00\x00\x00" + "\xff\xff\xff\xff" + "\xf8\xff\xff\xff" + "\x43\x01\x08\x00" +
		"\x02\x00\x00\x00" + "\xe8\xff\xff\x05" + "\x60\xe3\x16\x00")
	if got := s.Marshal(); !bytes.Equal(got, want) {
		t.Errorf("site\n% x\nwant\n% x", got, want)
	}
}

// TestKnownBytesBlocks pins a blockcount descriptor and a block record to
// the bytes of ABI.md's layout, written out by hand.
func TestKnownBytesBlocks(t *testing.T) {
	d := Blocks{Magic: BlocksMagic, Version: BlocksVersion, NBlocks: 3, NStrs: 17, TPOff: -0x40,
		BlocksRel: 24, StrsRel: 68, Name: 1, ID: 0x0102030405060708}
	want := []byte("HJBC" + "\x01\x00" + "\x00\x00" + "\x03\x00\x00\x00" + "\x11\x00\x00\x00" +
		"\xc0\xff\xff\xff\xff\xff\xff\xff" + "\x18\x00\x00\x00" + "\x44\x00\x00\x00" +
		"\x01\x00\x00\x00" + "\x00\x00\x00\x00" + "\x08\x07\x06\x05\x04\x03\x02\x01")
	if got := d.Marshal(); !bytes.Equal(got, want) {
		t.Errorf("descriptor\n% x\nwant\n% x", got, want)
	}
	b := Block{Func: 7, Off: 0x1c, Score: 2500000, LoopDepth: 2, Insns: 5}
	want = []byte("\x07\x00\x00\x00" + "\x1c\x00\x00\x00" + "\xa0\x25\x26\x00" + "\x02\x00" + "\x05\x00")
	if got := b.Marshal(); !bytes.Equal(got, want) {
		t.Errorf("block\n% x\nwant\n% x", got, want)
	}
}

func TestDynStep(t *testing.T) {
	for _, c := range []struct {
		reg  uint8
		mult int64
	}{{0, 0}, {5, 8}, {15, -8}, {3, 1<<23 - 1}, {12, -1 << 23}, {1, -1}} {
		b := DynStep(c.reg, c.mult)
		if r, m := DecodeDynStep(b); r != c.reg || m != c.mult {
			t.Errorf("DynStep(%d, %d) = %#x: back as %d, %d", c.reg, c.mult, b, r, m)
		}
	}
}

func TestVec(t *testing.T) {
	for _, c := range []struct {
		idx, scale  uint32
		gather, q   bool
		n           int
		mask        uint32
		masked      bool
		wantDescHex uint32
	}{
		// vpgatherdd ymm0, [rdi + ymm1*4], ymm2: 8 dword elements.
		{1, 2, true, false, 8, 2, true, 1 | 1<<5 | 2<<6 | 8<<9 | 2<<15 | 1<<20},
		// vpgatherqq ymm3, [rax + ymm15*8], ymm4: 4 qword indices.
		{15, 3, true, true, 4, 4, true, 15 | 1<<5 | 3<<6 | 1<<8 | 4<<9 | 4<<15 | 1<<20},
		// vmaskmovps [rdi], ymm7, ymm0: 8 elements, no indices.
		{0, 0, false, false, 8, 7, true, 8<<9 | 7<<15 | 1<<20},
	} {
		d := Vec(c.idx, c.gather, c.scale, c.q, c.n, c.mask, c.masked)
		if uint32(d) != c.wantDescHex {
			t.Errorf("%+v: %#x, want %#x", c, uint32(d), c.wantDescHex)
		}
		if d.IndexReg() != c.idx || d.ScaleLog2() != c.scale || d.Count() != c.n || d.MaskReg() != c.mask ||
			(d&VecGather != 0) != c.gather || (d&VecQwordIndex != 0) != c.q || (d&VecMasked != 0) != c.masked {
			t.Errorf("%+v: fields of %#x differ", c, uint32(d))
		}
	}
}

func TestCheck(t *testing.T) {
	good := Object{Magic: Magic, Version: Version, NSites: 1, Name: 1, NStrs: 4}
	if err := good.Check(); err != nil {
		t.Errorf("good descriptor: %v", err)
	}
	// second slots: the count covers them; without the flag, the sites'
	seconds := Object{Magic: Magic, Version: Version, NSites: 2, Flags: FlagSlots, NSlots: 3}
	if err := seconds.Check(); err != nil || seconds.Slots() != 3 || good.Slots() != 1 {
		t.Errorf("slot counts: %v, %d and %d slots", err, seconds.Slots(), good.Slots())
	}
	for _, bad := range []Object{
		{Magic: Magic + 1, Version: Version},
		{Magic: Magic, Version: Version + 1},
		{Magic: Magic, Version: Version, NSites: MaxSites},
		{Magic: Magic, Version: Version, NStrs: MaxStrs},
		{Magic: Magic, Version: Version, Name: 4, NStrs: 4},
		{Magic: Magic, Version: Version, NSites: 2, Flags: FlagSlots, NSlots: 1},
		{Magic: Magic, Version: Version, NSites: 2, Flags: FlagSlots, NSlots: MaxSlots},
	} {
		if bad.Check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestCheckBlocks(t *testing.T) {
	good := Blocks{Magic: BlocksMagic, Version: BlocksVersion, NBlocks: 1, Name: 1, NStrs: 4}
	if err := good.Check(); err != nil {
		t.Errorf("good descriptor: %v", err)
	}
	for _, bad := range []Blocks{
		{Magic: BlocksMagic + 1, Version: BlocksVersion},
		{Magic: Magic, Version: BlocksVersion},
		{Magic: BlocksMagic, Version: BlocksVersion + 1},
		{Magic: BlocksMagic, Version: BlocksVersion, NBlocks: MaxBlocks},
		{Magic: BlocksMagic, Version: BlocksVersion, NStrs: MaxStrs},
		{Magic: BlocksMagic, Version: BlocksVersion, Name: 4, NStrs: 4},
	} {
		if bad.Check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{
		KindRead:                           "read",
		KindRMW | KindExact:                "rmw,exact",
		KindWrite | KindRepDest:            "write,rep-dst",
		KindRead | KindRange | KindDynStep: "read,range,register-step",
		KindRead | KindVec:                 "read,vector",
		0:                                  "unknown",
	} {
		if got := k.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint8(k), got, want)
		}
	}
}
