package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestShlibCC: TestShlib's mixes built through `hijack cc`, which links
// the runtime itself (cmd/hijack/cc.go, runtimeLink): libvptrace.so, as
// needed, into every program and shared library with instrumented code.
func TestShlibCC(t *testing.T) {
	t.Parallel()
	reportWall(t)
	plain := shlibPlain(t, "gcc")
	all := []string{"exe", "a", "b"}
	for _, c := range []shlibCase{
		{name: "lazy", inst: all, env: []string{"LD_BIND_NOW="}},
		{name: "program-only", inst: []string{"exe"}},
		{name: "libraries-only", inst: []string{"a", "b"}},
		{name: "plugin-into-plain", inst: []string{"b"}, plugin: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newShlibBuild(t, "gcc")
			b.viaCC = true
			b.build(c)
			b.runTraced("hijack cc "+c.name, c.env, plain, "shlib", b.args(c)...)
		})
	}
}

// TestShlibCCStatic: `hijack cc -static` links the runtime archive: the
// mt workload (threads), its kernel compiled through hijack cc, scored.
func TestShlibCCStatic(t *testing.T) {
	t.Parallel()
	ws, err := loadVptWorkloads()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.name != "mt" {
			continue
		}
		b := newShlibBuild(t, "gcc")
		b.viaCC = true
		kflags := append([]string{"-O2"}, vptKernelFlags...)
		b.compile(false, "drv.o", w.drv, vptDriverFlags...)
		b.compile(false, "plain.o", w.kern, kflags...)
		b.link(false, "-static", "-o", "plain", "drv.o", "plain.o", "-lpthread")
		cd := filepath.Join(b.dir, vptT0.name)
		if err := os.MkdirAll(cd, 0o755); err != nil {
			t.Fatal(err)
		}
		b.compile(true, "kern.o", w.kern, kflags...)
		b.link(true, "-static", "-o", filepath.Join(cd, "app"), "drv.o", "kern.o", "-lpthread")
		args := w.fields("test-args")
		plain := mustRun(t, spec{Dir: b.dir, CPU: 60 * time.Second, Timeout: 3 * time.Minute}, filepath.Join(b.dir, "plain"), args...)
		if plain.Exit != 0 {
			t.Fatalf("the plain build fails: %s\n%s", plain.status(), tail(plain.Stderr, 2000))
		}
		res := vptResult{workload: w.name, level: "O2-static-cc", config: vptT0.name, plain: plain.Dur}
		vptCheckRun(t, w.name+" static through hijack cc", cd, vptT0, filepath.Join(cd, "app"), args, plain, res)
	}
}
