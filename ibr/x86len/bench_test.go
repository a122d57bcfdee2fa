package x86len

import (
	"bytes"
	"debug/elf"
	"os"
	"testing"

	"hijack/archive"
)

// BenchmarkDecode decodes the hand-checked table, one instruction per op.
func BenchmarkDecode(b *testing.B) {
	var insns [][]byte
	for _, tc := range decodeTests {
		insns = append(insns, unhex(b, tc.hex))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(insns[i%len(insns)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSweepLibcrypto decodes the executable sections of
// libcrypto.a by linear sweep, the rewriter's workload; ns/op is per
// instruction.
func BenchmarkSweepLibcrypto(b *testing.B) {
	data, err := os.ReadFile("/usr/lib/x86_64-linux-gnu/libcrypto.a")
	if err != nil {
		b.Skip(err)
	}
	members, err := archive.Read(data)
	if err != nil {
		b.Fatal(err)
	}
	var code [][]byte
	for _, m := range members {
		f, err := elf.NewFile(bytes.NewReader(m.Data))
		if err != nil {
			continue
		}
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS {
				if d, err := s.Data(); err == nil {
					code = append(code, d)
				}
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for n < b.N {
		for _, c := range code {
			for p := 0; p < len(c) && n < b.N; n++ {
				l, err := Decode(c[p:])
				if err != nil {
					p++ // data in code: step over a byte
					continue
				}
				p += int(l.Len)
			}
		}
	}
}
