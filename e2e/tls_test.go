package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTLSDynamic rewrites objects whose __thread accesses use the general-
// and local-dynamic sequences (-fPIC: "lea x@tlsgd(%rip),%rdi" or
// "lea x@tlsld(%rip),%rdi" directly followed by the call of
// __tls_get_addr) with the rules under test, links them into an
// executable, where ld relaxes each load+call pair as one sequence, and
// runs them against the originals. Code inserted between the two made the
// link fail ("TLS transition from R_X86_64_TLSGD to R_X86_64_GOTTPOFF ...
// failed"; jq's pad and clobber builds).
func TestTLSDynamic(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	builds := []struct {
		cc    string
		flags []string
	}{
		{"gcc", []string{"-O2", "-fPIC"}},
		{"gcc", []string{"-O0", "-fPIC"}},
		{"gcc", []string{"-O2", "-fPIC", "-fno-plt"}},
		{"clang", []string{"-O2", "-fPIC"}},
		{"clang", []string{"-O0", "-fPIC"}},
		{"clang", []string{"-O2", "-fPIC", "-fno-plt"}},
	}
	for _, b := range builds {
		b := b
		t.Run(b.cc+strings.Join(b.flags, ""), func(t *testing.T) {
			t.Parallel()
			needTool(t, b.cc, map[string]string{"gcc": "gcc", "clang": "clang"}[b.cc])
			obj := compile(t, b.cc, b.flags, filepath.Join(cfg.root, "testdata", "src", "tls_dynamic.c"))
			dir := workDir(t)
			orig, outs := rewriteAll(t, cfg.rules, []string{obj}, dir)
			origBin, newBin := filepath.Join(dir, "prog.orig"), filepath.Join(dir, "prog.rewritten")
			link(t, b.cc, origBin, orig, "-pthread")
			link(t, b.cc, newBin, outs, linkRewritten("-pthread")...)
			s := spec{Dir: dir, CPU: 30 * time.Second, Timeout: 2 * time.Minute}
			want := mustRun(t, s, origBin)
			if want.Exit != 0 || !strings.HasPrefix(string(want.Stdout), "tls ") {
				t.Fatalf("the original prints %q (%s), want \"tls ...\"", tail(want.Stdout, 500), want.status())
			}
			compareRuns(t, dir, "tls_dynamic", want, mustRun(t, s, newBin))
		})
	}
}
