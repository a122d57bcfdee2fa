package x86len

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// slotSize is the stride of the synthetic corpus: each candidate
// instruction starts a 16-byte slot whose remaining bytes are 0x90. Both
// decoders read at most 15 bytes, and after the first instruction objdump
// only sees one-byte nops, so it is back in step at every slot boundary.
// Using nops rather than random bytes as displacement and immediate
// filler loses nothing: a disagreement on any field size shows up as a
// different length.
const slotSize = 16

// modrmForms are the addressing shapes that matter for length: [reg],
// SIB, SIB without base (disp32), RIP-relative, disp8, SIB+disp32 and a
// register. The reg field is filled in by the caller.
var modrmForms = [][]byte{
	{0x00},
	{0x04, 0x24},
	{0x04, 0x25},
	{0x05},
	{0x40},
	{0x84, 0x00},
	{0xc0},
}

// syntheticCandidates enumerates prefix x opcode x ModRM combinations over
// every map this package describes.
func syntheticCandidates() [][]byte {
	var out [][]byte
	allRegs := true
	emit := func(head []byte, op byte) {
		for _, f := range modrmForms {
			for reg := byte(0); reg < 8; reg++ {
				// ModRM.reg only matters for legacy group opcodes and for
				// the register forms of 0f 01 and friends: sample it fully
				// for register and [reg] forms there, at 0 and 7 otherwise.
				if (!allRegs || f[0] != 0x00 && f[0] != 0xc0) && reg != 0 && reg != 7 {
					continue
				}
				c := append(append(append([]byte{}, head...), op), f...)
				c[len(head)+1] |= reg << 3
				out = append(out, c)
			}
		}
	}
	legacy := [][]byte{{}, {0x66}, {0x67}, {0xf3}, {0xf2}, {0x48}, {0x66, 0x48}}
	for _, p := range legacy {
		for op := 0; op < 256; op++ {
			emit(p, byte(op))
			emit(append(append([]byte{}, p...), 0x0f), byte(op))
			emit(append(append([]byte{}, p...), 0x0f, 0x38), byte(op))
			emit(append(append([]byte{}, p...), 0x0f, 0x3a), byte(op))
		}
	}
	allRegs = false
	for op := 0; op < 256; op++ {
		for pp := byte(0); pp < 4; pp++ {
			emit([]byte{0xc5, 0xf8 | pp}, byte(op))
			emit([]byte{0xc5, 0xfc | pp}, byte(op))
			for _, m := range []byte{1, 2, 3} {
				emit([]byte{0xc4, 0xe0 | m, 0x78 | pp}, byte(op))
				emit([]byte{0xc4, 0xe0 | m, 0xf8 | pp}, byte(op))
			}
			for _, m := range []byte{1, 2, 3, 5, 6} {
				emit([]byte{0x62, 0xf0 | m, 0x7c | pp, 0x08}, byte(op))
				emit([]byte{0x62, 0xf0 | m, 0xfc | pp, 0x48}, byte(op))
			}
		}
		for _, m := range []byte{8, 9, 10} {
			emit([]byte{0x8f, 0xe0 | m, 0x78}, byte(op))
			emit([]byte{0x8f, 0xe0 | m, 0xf8}, byte(op))
		}
	}
	return out
}

// strayREX matches objdump's rendering of a REX prefix that the CPU
// ignores because another prefix follows it.
var strayREX = regexp.MustCompile(`(^|\s)rex(\.[WRXB]+)?$`)

// objdumpConvention explains a disagreement between Decode and objdump that
// is a deliberate difference of convention rather than an error on either
// side, or returns "".
func objdumpConvention(b []byte, l Layout, err error, theirLen int, text string) string {
	switch {
	case strayREX.MatchString(text):
		// A REX followed by another prefix is ignored by the CPU and the
		// whole sequence is one instruction (Intel SDM vol. 2 §2.2.1);
		// objdump prints the dead REX and the prefixes before it as a
		// pseudo-instruction of their own.
		return "stray REX"
	case err == nil && l.RelSize == 4 && theirLen == int(l.Len)-2 && hasLegacyPrefix(b[:l.Prefixes], 0x66):
		// 66 e8/e9/0f 8x: Intel 64 ignores the operand-size prefix on near
		// branches in 64-bit mode (rel32); objdump follows AMD64 (rel16).
		// Compilers never emit this; gas only for explicit callw/jmpw.
		return "66 near branch"
	case err == nil && l.Map == Map1Byte && l.Opcode == 0x9b:
		// objdump folds fwait into a following x87 instruction (fstsw =
		// 9b df e0); the CPU executes two instructions.
		return "fwait"
	case errors.Is(err, ErrInvalid) && len(b) > 0 && isVEXAfterPrefix(b):
		// VEX/EVEX after 66/f2/f3/f0/REX raises #UD; objdump decodes it.
		return "prefixed VEX"
	}
	return ""
}

func hasLegacyPrefix(pfx []byte, p byte) bool {
	for _, c := range pfx {
		if c == p {
			return true
		}
	}
	return false
}

// isVEXAfterPrefix reports a c4/c5/62 after 66/f2/f3/f0 or REX.
func isVEXAfterPrefix(b []byte) bool {
	prefixed := false
	for _, c := range b {
		switch {
		case c == 0x66 || c == 0xf2 || c == 0xf3 || c == 0xf0 || c&0xf0 == 0x40:
			prefixed = true
		case c == 0x67 || c == 0x2e || c == 0x3e || c == 0x26 || c == 0x36 || c == 0x64 || c == 0x65:
		default:
			return prefixed && (c == 0xc4 || c == 0xc5 || c == 0x62)
		}
	}
	return false
}

// TestObjdumpSynthetic compares Decode with GNU objdump on a systematic
// enumeration of ~330k encodings: every opcode of every map under the
// common prefixes and every ModRM shape. It validates the tables far beyond
// what compilers emit. Where objdump prints (bad) its length is not
// meaningful (it stops at the first byte it cannot place), so those are
// only counted; where Decode rejects what objdump accepts, or the lengths
// differ, the test fails unless objdumpConvention explains it.
func TestObjdumpSynthetic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs objdump over ~330k synthetic instructions")
	}
	requireTool(t, "objdump")
	cands := syntheticCandidates()
	const parts = 4 // objdump is single-threaded: run several
	results := make([][]insnLine, parts)
	per := (len(cands) + parts - 1) / parts
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := p*per, min((p+1)*per, len(cands))
		blob := make([]byte, (hi-lo)*slotSize)
		for i := range blob {
			blob[i] = 0x90
		}
		for k, c := range cands[lo:hi] {
			copy(blob[k*slotSize:], c[:min(len(c), slotSize-1)])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[p] = objdumpBlob(t, blob)
		}()
	}
	wg.Wait()

	counts := map[string]int{}
	var failures []string
	okKeys := map[string]bool{}
	acceptedKeys := map[string]bool{}
	for p := 0; p < parts; p++ {
		lines := results[p]
		idx := make(map[int64]int, len(lines))
		for i, l := range lines {
			idx[l.off] = i
		}
		lo, hi := p*per, min((p+1)*per, len(cands))
		for k := 0; k < hi-lo; k++ {
			start := int64(k * slotSize)
			i, ok := idx[start]
			if !ok {
				t.Fatalf("objdump out of step at slot %d (% x)", lo+k, cands[lo+k])
			}
			theirLen := int64(slotSize*(hi-lo)) - start
			if i+1 < len(lines) {
				theirLen = lines[i+1].off - start
			}
			slot := make([]byte, slotSize)
			for j := range slot {
				slot[j] = 0x90
			}
			copy(slot, cands[lo+k])
			l, err := Decode(slot)
			text := lines[i].text
			bad := lines[i].isBad()
			if err == nil {
				acceptedKeys[opKey(l)] = true
			}
			switch {
			case err == nil && !bad && int64(l.Len) == theirLen:
				counts["agree"]++
				okKeys[opKey(l)] = true
				continue
			case err != nil && bad:
				counts["both reject"]++
				continue
			case err == nil && bad:
				counts["objdump (bad), Decode accepts"]++
				continue
			}
			if c := objdumpConvention(slot, l, err, int(theirLen), text); c != "" {
				counts["convention: "+c]++
				continue
			}
			ours := fmt.Sprint(l.Len)
			if err != nil {
				ours = err.Error()
			}
			failures = append(failures, fmt.Sprintf("% x: Decode=%s objdump=%d %q",
				slot[:max(int(theirLen), int(l.Len))], ours, theirLen, text))
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-40s %d", k, counts[k])
	}
	// Opcodes Decode accepts that objdump never decodes in any form: in the
	// legacy maps this must be empty (the tables mark undefined opcodes);
	// VEX/EVEX/XOP opcodes are not checked one by one (see vex).
	var never []string
	for k := range acceptedKeys {
		if !okKeys[k] && strings.HasPrefix(k, "none/") {
			never = append(never, k)
		}
	}
	sort.Strings(never)
	if len(never) > 0 {
		t.Errorf("legacy opcodes accepted by Decode but never decoded by objdump: %v", never)
	}
	for i, f := range failures {
		if i == 50 {
			t.Errorf("... and %d more", len(failures)-50)
			break
		}
		t.Errorf("%s", f)
	}
}

func opKey(l Layout) string {
	return fmt.Sprintf("%v/%v/%02x", l.Escape, l.Map, l.Opcode)
}
