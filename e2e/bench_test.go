package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Benchmarks (make bench): how long hijack takes to rewrite whole Debian
// archives, and how much slower the rewritten programs run than the
// originals (compare the orig and rewritten ns/op of BenchmarkRun).

func BenchmarkRewrite(b *testing.B) {
	needHijack(b)
	for _, name := range []string{"zlib", "lua", "sqlite"} {
		lib := debLibs[name]
		b.Run(lib.archive, func(b *testing.B) {
			archive := needArchive(b, lib)
			ms, err := readArchive(archive)
			if err != nil {
				b.Fatal(err)
			}
			var size int64
			for _, m := range ms {
				size += int64(len(m.Data))
			}
			dir := filepath.Join(cfg.cache, "e2e", "work", "_bench", lib.archive)
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := buildRewrittenArchive(cfg.rules, archive, dir); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(len(ms)), "members")
			os.RemoveAll(dir)
		})
	}
}

func BenchmarkRun(b *testing.B) {
	needHijack(b)
	type prog struct {
		name  string
		build func(b *testing.B, dir string) (orig, rewritten string, args []string)
	}
	withArchive := func(libName, src string, cflags []string, args ...string) func(b *testing.B, dir string) (string, string, []string) {
		return func(b *testing.B, dir string) (string, string, []string) {
			lib := debLibs[libName]
			archive := needArchive(b, lib)
			obj := compile(b, "gcc", append([]string{"-O2"}, append(cflags, lib.cflags...)...), src)
			newArchive := rewrittenArchive(b, cfg.rules, archive)
			o, r := filepath.Join(dir, "orig"), filepath.Join(dir, "rewritten")
			link(b, "gcc", o, []string{obj, archive}, lib.ldlibs...)
			link(b, "gcc", r, []string{obj, newArchive}, linkRewritten(lib.ldlibs...)...)
			return o, r, args
		}
	}
	luaScripts, _ := filepath.Glob(testdata("lua", "scripts", "*.lua"))
	progs := []prog{
		{"demo", func(b *testing.B, dir string) (string, string, []string) {
			var objs []string
			srcs, _ := filepath.Glob(testdata("demo", "*.c"))
			for _, s := range srcs {
				objs = append(objs, compile(b, "gcc", []string{"-O2"}, s))
			}
			orig, outs := rewriteAll(b, cfg.rules, objs, dir)
			o, r := filepath.Join(dir, "orig.bin"), filepath.Join(dir, "rewritten.bin")
			link(b, "gcc", o, orig)
			link(b, "gcc", r, outs, linkRewritten()...)
			in, _ := filepath.Glob(testdata("*", "*.[ch]"))
			return o, r, in
		}},
		{"zlib", withArchive("zlib", testdata("zlib", "driver.c"), nil)},
		{"lua", withArchive("lua", testdata("lua", "driver.c"), nil, luaScripts...)},
		{"sqlite", withArchive("sqlite", testdata("sqlite", "driver.c"), nil, "bench.db")},
	}
	for _, p := range progs {
		p := p
		b.Run(p.name, func(b *testing.B) {
			dir := workDir(b)
			orig, rewritten, args := p.build(b, dir)
			for _, v := range []struct{ name, bin string }{{"orig", orig}, {"rewritten", rewritten}} {
				b.Run(v.name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						r, err := runNow(spec{Dir: dir, Timeout: 10 * time.Minute}, v.bin, args...)
						if err != nil || r.Exit != 0 {
							b.Fatalf("%s: %v %s %s", v.bin, err, r.status(), tail(r.Stderr, 500))
						}
					}
				})
			}
		})
	}
}
