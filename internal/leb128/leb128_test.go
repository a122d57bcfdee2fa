package leb128

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The examples of the DWARF 5 specification, section 7.6, figures 22
// (unsigned) and 23 (signed).
var specUnsigned = []struct {
	v   uint64
	enc []byte
}{
	{2, []byte{0x02}},
	{127, []byte{0x7f}},
	{128, []byte{0x80, 0x01}},
	{129, []byte{0x81, 0x01}},
	{130, []byte{0x82, 0x01}},
	{12857, []byte{0xb9, 0x64}},
}

var specSigned = []struct {
	v   int64
	enc []byte
}{
	{2, []byte{0x02}},
	{-2, []byte{0x7e}},
	{127, []byte{0xff, 0x00}},
	{-127, []byte{0x81, 0x7f}},
	{128, []byte{0x80, 0x01}},
	{-128, []byte{0x80, 0x7f}},
	{129, []byte{0x81, 0x01}},
	{-129, []byte{0xff, 0x7e}},
}

func TestSpecExamples(t *testing.T) {
	for _, c := range specUnsigned {
		if got := AppendUleb(nil, c.v, 0); !bytes.Equal(got, c.enc) {
			t.Errorf("AppendUleb(%d) = % x, want % x", c.v, got, c.enc)
		}
		if UlebLen(c.v) != len(c.enc) {
			t.Errorf("UlebLen(%d) = %d, want %d", c.v, UlebLen(c.v), len(c.enc))
		}
		v, n, err := ReadUleb(append(c.enc, 0xaa))
		if err != nil || v != c.v || n != len(c.enc) {
			t.Errorf("ReadUleb(% x) = %d, %d, %v; want %d, %d", c.enc, v, n, err, c.v, len(c.enc))
		}
	}
	for _, c := range specSigned {
		if got := AppendSleb(nil, c.v, 0); !bytes.Equal(got, c.enc) {
			t.Errorf("AppendSleb(%d) = % x, want % x", c.v, got, c.enc)
		}
		if SlebLen(c.v) != len(c.enc) {
			t.Errorf("SlebLen(%d) = %d, want %d", c.v, SlebLen(c.v), len(c.enc))
		}
		v, n, err := ReadSleb(append(c.enc, 0xaa))
		if err != nil || v != c.v || n != len(c.enc) {
			t.Errorf("ReadSleb(% x) = %d, %d, %v; want %d, %d", c.enc, v, n, err, c.v, len(c.enc))
		}
	}
}

func TestPaddedAndLimits(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []byte
		want []byte
	}{
		{"uleb 2 in 3", AppendUleb(nil, 2, 3), []byte{0x82, 0x80, 0x00}},
		{"uleb 12857 in 1 (too narrow: shortest)", AppendUleb(nil, 12857, 1), []byte{0xb9, 0x64}},
		{"sleb -2 in 3", AppendSleb(nil, -2, 3), []byte{0xfe, 0xff, 0x7f}},
		{"sleb 127 in 3", AppendSleb(nil, 127, 3), []byte{0xff, 0x80, 0x00}},
		{"uleb max", AppendUleb(nil, math.MaxUint64, 0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"uleb 0 in 10", AppendUleb(nil, 0, 10), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}},
		{"sleb min", AppendSleb(nil, math.MinInt64, 0), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}},
		{"sleb max", AppendSleb(nil, math.MaxInt64, 0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}},
		{"append keeps prefix", AppendUleb([]byte{0x11}, 1, 0), []byte{0x11, 0x01}},
	} {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s: % x, want % x", c.name, c.got, c.want)
		}
	}
}

func TestReadErrors(t *testing.T) {
	ten := func(last byte) []byte { return append(bytes.Repeat([]byte{0x80}, 9), last) }
	for _, c := range []struct {
		name   string
		in     []byte
		signed bool
		want   error
	}{
		{"empty", nil, false, ErrTruncated},
		{"empty signed", nil, true, ErrTruncated},
		{"ends in continuation", []byte{0x80, 0x80}, false, ErrTruncated},
		{"ends in continuation signed", []byte{0xff}, true, ErrTruncated},
		{"bit 64 set", ten(0x02), false, ErrOverflow},
		{"eleven bytes", append(ten(0x80), 0x00), false, ErrOverflow},
		{"eleven bytes signed", append(ten(0x80), 0x00), true, ErrOverflow},
		{"signed tenth byte not a sign extension", ten(0x01), true, ErrOverflow},
		{"signed tenth byte not a sign extension 2", ten(0x3f), true, ErrOverflow},
	} {
		var err error
		if c.signed {
			_, _, err = ReadSleb(c.in)
		} else {
			_, _, err = ReadUleb(c.in)
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: % x: error %v, want %v", c.name, c.in, err, c.want)
		}
	}
	// Ten-byte numbers that fit.
	if v, n, err := ReadUleb(ten(0x01)); err != nil || v != 1<<63 || n != 10 {
		t.Errorf("ReadUleb(1<<63) = %#x, %d, %v", v, n, err)
	}
	if v, n, err := ReadSleb(ten(0x7f)); err != nil || v != math.MinInt64 || n != 10 {
		t.Errorf("ReadSleb(min) = %d, %d, %v", v, n, err)
	}
}

// values are boundary values of the encoding and a spread of others.
func values() (us []uint64, ss []int64) {
	for s := 0; s < 64; s++ {
		for _, d := range []int64{-1, 0, 1} {
			u := uint64(1)<<s + uint64(d)
			us = append(us, u, ^u)
			ss = append(ss, int64(u), -int64(u))
		}
	}
	x := uint64(0x9e3779b97f4a7c15)
	for range 200 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		us = append(us, x, x>>(x%64))
		ss = append(ss, int64(x), int64(x)>>(x%64))
	}
	us = append(us, 0, math.MaxUint64)
	ss = append(ss, 0, math.MinInt64, math.MaxInt64)
	return us, ss
}

// TestAgainstGas compares the encodings with those the GNU assembler
// writes for .uleb128 and .sleb128, read back from the object.
func TestAgainstGas(t *testing.T) {
	as, err := exec.LookPath("as")
	if err != nil {
		t.Skip("no assembler (as): ", err)
	}
	us, ss := values()
	var src strings.Builder
	var want []byte
	src.WriteString(".data\n")
	for _, u := range us {
		fmt.Fprintf(&src, ".uleb128 %d\n", u)
		want = AppendUleb(want, u, 0)
	}
	for _, s := range ss {
		fmt.Fprintf(&src, ".sleb128 %d\n", s)
		want = AppendSleb(want, s, 0)
	}
	dir := t.TempDir()
	in, obj := filepath.Join(dir, "leb.s"), filepath.Join(dir, "leb.o")
	if err := os.WriteFile(in, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "--64", in, "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	f, err := elf.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Section(".data").Data()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		// Find the first value that differs.
		p, q := 0, 0
		for _, u := range us {
			n := UlebLen(u)
			if !bytes.Equal(got[p:min(p+n, len(got))], want[q:q+n]) {
				t.Fatalf(".uleb128 %d: gas % x, AppendUleb % x", u, got[p:min(p+n, len(got))], want[q:q+n])
			}
			p, q = p+n, q+n
		}
		t.Fatalf(".sleb128 encodings differ (%d bytes from gas, %d from AppendSleb)", len(got), len(want))
	}
	// And read gas's bytes back.
	p := 0
	for _, u := range us {
		v, n, err := ReadUleb(got[p:])
		if err != nil || v != u {
			t.Fatalf("ReadUleb of gas's .uleb128 %d: %d, %v", u, v, err)
		}
		p += n
	}
	for _, s := range ss {
		v, n, err := ReadSleb(got[p:])
		if err != nil || v != s {
			t.Fatalf("ReadSleb of gas's .sleb128 %d: %d, %v", s, v, err)
		}
		p += n
	}
	if p != len(got) {
		t.Fatalf("read %d of %d bytes", p, len(got))
	}
}

// bigSleb is an independent signed decoder: arbitrary precision, then a
// range check.
func bigSleb(b []byte) (int64, int, bool) {
	v := new(big.Int)
	for i, c := range b {
		v.Or(v, new(big.Int).Lsh(big.NewInt(int64(c&0x7f)), uint(7*i)))
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(7*(i+1))))
			}
			if !v.IsInt64() || i+1 > MaxLen {
				return 0, 0, false
			}
			return v.Int64(), i + 1, true
		}
	}
	return 0, 0, false
}

func FuzzLEB128(f *testing.F) {
	for _, c := range specUnsigned {
		f.Add(c.enc, c.v, int64(c.v), uint8(0))
	}
	for _, c := range specSigned {
		f.Add(c.enc, uint64(c.v), c.v, uint8(3))
	}
	f.Add(bytes.Repeat([]byte{0xff}, 11), uint64(math.MaxUint64), int64(math.MinInt64), uint8(10))
	f.Fuzz(func(t *testing.T, in []byte, u uint64, s int64, width uint8) {
		w := int(width % (MaxLen + 1))
		// Round trips, padded to w.
		eu := AppendUleb(nil, u, w)
		if len(eu) != max(w, UlebLen(u)) {
			t.Fatalf("AppendUleb(%d, %d): %d bytes", u, w, len(eu))
		}
		if v, n, err := ReadUleb(eu); err != nil || v != u || n != len(eu) {
			t.Fatalf("uleb %d width %d (% x): read %d, %d, %v", u, w, eu, v, n, err)
		}
		es := AppendSleb(nil, s, w)
		if len(es) != max(w, SlebLen(s)) {
			t.Fatalf("AppendSleb(%d, %d): %d bytes", s, w, len(es))
		}
		if v, n, err := ReadSleb(es); err != nil || v != s || n != len(es) {
			t.Fatalf("sleb %d width %d (% x): read %d, %d, %v", s, w, es, v, n, err)
		}
		// Arbitrary bytes: the readers agree with independent decoders.
		v, n, err := ReadUleb(in)
		bv, bn := binary.Uvarint(in)
		if (err == nil) != (bn > 0) || err == nil && (v != bv || n != bn) {
			t.Fatalf("ReadUleb(% x) = %d, %d, %v; binary.Uvarint: %d, %d", in, v, n, err, bv, bn)
		}
		sv, sn, err := ReadSleb(in)
		gv, gn, ok := bigSleb(in)
		if (err == nil) != ok || err == nil && (sv != gv || sn != gn) {
			t.Fatalf("ReadSleb(% x) = %d, %d, %v; big: %d, %d, %v", in, sv, sn, err, gv, gn, ok)
		}
	})
}
