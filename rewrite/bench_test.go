package rewrite_test

import (
	"os"
	"testing"

	"hijack/archive"
	"hijack/internal/testutil"
	"hijack/rewrite"
)

// BenchmarkPadSqlite rewrites every member of Debian's libsqlite3.a with the
// pad preset (one iteration = the whole archive). scripts/bench-rewrite.sh
// compares it with objdump -dr on the same members.
func BenchmarkPadSqlite(b *testing.B) {
	const lib = "/usr/lib/x86_64-linux-gnu/libsqlite3.a"
	testutil.NeedFile(b, lib)
	data, _ := os.ReadFile(lib)
	ms, err := archive.Read(data)
	if err != nil {
		b.Fatal(err)
	}
	rf := padRules(b)
	total := 0
	for _, m := range ms {
		total += len(m.Data)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range ms {
			if _, _, err := rewrite.Rewrite(m.Name, m.Data, rf, presets, nil); err != nil {
				b.Fatalf("%s: %v", m.Name, err)
			}
		}
	}
}
