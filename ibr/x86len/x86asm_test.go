package x86len

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// TestX86asmRandom is a deterministic complement to FuzzDecode for plain
// `go test`: it decodes pseudo-random instructions shaped like real ones
// (prefixes, then an escape, then random bytes) and checks the layout
// invariants and length agreement with x86asm where x86asm succeeds and
// is not known to be wrong (x86asmKnownBug).
func TestX86asmRandom(t *testing.T) {
	n := 1000000
	if testing.Short() {
		n = 50000
	}
	r := rand.New(rand.NewSource(1))
	pfx := []byte{0x66, 0x67, 0xf2, 0xf3, 0x2e, 0x3e, 0x64, 0xf0, 0x48, 0x41, 0x4c}
	heads := [][]byte{{}, {0x0f}, {0x0f, 0x38}, {0x0f, 0x3a}, {0xc5}, {0xc4}, {0x62}, {0x8f}, {0xd5}}
	groups := map[string][]string{}
	decoded, compared := 0, 0
	b := make([]byte, 0, 20)
	for i := 0; i < n; i++ {
		b = b[:0]
		for k := r.Intn(3); k > 0; k-- {
			b = append(b, pfx[r.Intn(len(pfx))])
		}
		b = append(b, heads[r.Intn(len(heads))]...)
		for len(b) < 20 {
			b = append(b, byte(r.Intn(256)))
		}
		l, err := Decode(b)
		if err != nil {
			continue
		}
		decoded++
		if msg := checkLayout(b, l); msg != "" {
			t.Fatalf("[% x]: %v: %s", b, l, msg)
		}
		if l2, err := Decode(b[:l.Len]); err != nil || l2 != l {
			t.Fatalf("[% x]: %v, but b[:Len] gives %v, %v", b, l, l2, err)
		}
		inst, xerr := x86asm.Decode(b, 64)
		if xerr != nil || inst.Op == 0 || x86asmKnownBug(l) != "" {
			continue
		}
		compared++
		if inst.Len != int(l.Len) {
			k := fmt.Sprintf("%v/%v/%02x", l.Escape, l.Map, l.Opcode)
			groups[k] = append(groups[k], fmt.Sprintf("[% x] Decode=%d x86asm=%d %v",
				b[:max(int(l.Len), inst.Len)], l.Len, inst.Len, inst))
		}
	}
	t.Logf("%d inputs, %d decoded, %d compared with x86asm", n, decoded, compared)
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := groups[k]
		t.Errorf("%s: %d disagreements, e.g. %s", k, len(g), g[0])
	}
}
