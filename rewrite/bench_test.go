package rewrite_test

import (
	"os"
	"testing"

	"hijack/archive"
	"hijack/internal/testutil"
	"hijack/preset"
	"hijack/preset/all"
	"hijack/rewrite"
	"hijack/rules"
)

// BenchmarkPadSqlite rewrites every member of Debian's libsqlite3.a with the
// pad preset (one iteration = the whole archive). scripts/bench-rewrite.sh
// compares it with objdump -dr on the same members.
func BenchmarkPadSqlite(b *testing.B) { benchSqlite(b, padRules(b), presets) }

// BenchmarkVptraceSqlite is BenchmarkPadSqlite with the vptrace preset (its
// analyses and snippets: what a user's build runs).
func BenchmarkVptraceSqlite(b *testing.B) { benchSqlite(b, presetRules(b, "vptrace"), all.Presets()) }

func benchSqlite(b *testing.B, rf *rules.File, presets preset.Set) {
	const lib = "/usr/lib/x86_64-linux-gnu/libsqlite3.a"
	testutil.NeedFile(b, lib)
	data, _ := os.ReadFile(lib)
	ms, err := archive.Read(data)
	if err != nil {
		b.Fatal(err)
	}
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
