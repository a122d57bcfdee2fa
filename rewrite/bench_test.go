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
func BenchmarkPadSqlite(b *testing.B) { benchArchive(b, "libsqlite3.a", padRules(b), presets) }

// BenchmarkPadLua and BenchmarkPadZlib are BenchmarkPadSqlite on the other
// archives of scripts/bench-rewrite.sh, whose members are smaller: more of
// their cost is per object, not per instruction.
func BenchmarkPadLua(b *testing.B) { benchArchive(b, "liblua5.4.a", padRules(b), presets) }

func BenchmarkPadZlib(b *testing.B) { benchArchive(b, "libz.a", padRules(b), presets) }

// BenchmarkVptraceSqlite is BenchmarkPadSqlite with the vptrace preset (its
// analyses and snippets: what a user's build runs).
func BenchmarkVptraceSqlite(b *testing.B) {
	benchArchive(b, "libsqlite3.a", presetRules(b, "vptrace"), all.Presets())
}

// benchArchive rewrites every member of Debian's archive name with rf.
func benchArchive(b *testing.B, name string, rf *rules.File, presets preset.Set) {
	lib := "/usr/lib/x86_64-linux-gnu/" + name
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
