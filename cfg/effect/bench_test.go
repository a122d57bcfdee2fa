package effect

import (
	"bytes"
	"debug/elf"
	"os"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"hijack/archive"
	"hijack/ibr"
	"hijack/ibr/x86len"
)

// benchInsts decodes the largest .text section of libsqlite3.a (fts5.o,
// about 126 KB, 30k instructions) by linear sweep over its functions.
func benchInsts(b *testing.B) ([]x86len.Layout, []x86asm.Inst, [][]byte) {
	data, err := os.ReadFile("/usr/lib/x86_64-linux-gnu/libsqlite3.a")
	if err != nil {
		b.Skip(err)
	}
	members, err := archive.Read(data)
	if err != nil {
		b.Fatal(err)
	}
	var best []byte
	var bestFile *elf.File
	for _, m := range members {
		f, err := elf.NewFile(bytes.NewReader(m.Data))
		if err != nil {
			continue
		}
		if s := f.Section(".text"); s != nil && int(s.Size) > len(best) {
			best, _ = s.Data()
			bestFile = f
		}
	}
	if bestFile == nil {
		b.Skip("no .text")
	}
	syms, _ := bestFile.Symbols()
	text := bestFile.Section(".text")
	var lays []x86len.Layout
	var insts []x86asm.Inst
	var codes [][]byte
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section >= elf.SectionIndex(len(bestFile.Sections)) ||
			bestFile.Sections[s.Section] != text || s.Value+s.Size > uint64(len(best)) {
			continue
		}
		for off := int(s.Value); off < int(s.Value+s.Size); {
			lay, inst, err := ibr.Decode(best[off : s.Value+s.Size])
			if err != nil {
				off++
				continue
			}
			lays = append(lays, lay)
			insts = append(insts, inst)
			codes = append(codes, best[off:off+int(lay.Len)])
			off += int(lay.Len)
		}
	}
	return lays, insts, codes
}

// BenchmarkOf measures Of per instruction over a real section; it must
// not allocate.
func BenchmarkOf(b *testing.B) {
	lays, insts, codes := benchInsts(b)
	b.ReportAllocs()
	b.ResetTimer()
	var sink Effect
	for b.Loop() {
		for i := range codes {
			sink = Of(&insts[i], &lays[i], codes[i])
		}
	}
	b.StopTimer()
	_ = sink
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(codes)), "ns/inst")
	b.ReportMetric(float64(len(codes)), "insts")
	if allocs := testing.AllocsPerRun(1, func() {
		for i := range codes {
			sink = Of(&insts[i], &lays[i], codes[i])
		}
	}); allocs != 0 {
		b.Errorf("Of allocated %.0f times over %d instructions", allocs, len(codes))
	}
}
