package effect

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// compilerConfig is one way of compiling the corpus.
type compilerConfig struct {
	cc    string // gcc, g++, clang, clang++
	src   string // file under testdata or ../../testdata/src
	flags []string
}

func (c compilerConfig) String() string {
	return c.cc + " " + strings.Join(c.flags, " ") + " " + filepath.Base(c.src)
}

// compilerConfigs lists the compilations of TestCompilerOutput: gcc and
// clang, C and C++, every -O level, -march=x86-64-v3 (AVX2, FMA, BMI1/2,
// MOVBE) and x86-64-v4 (AVX-512, also with 512-bit vectors preferred),
// with CET (-fcf-protection) and the stack protector.
func compilerConfigs() []compilerConfig {
	common := []string{"-fcf-protection", "-fstack-protector-strong", "-mcx16", "-madx", "-w"}
	var cs []compilerConfig
	add := func(cc, src string, flags ...string) {
		cs = append(cs, compilerConfig{cc, src, append(append([]string{}, common...), flags...)})
	}
	for _, cc := range []string{"gcc", "clang"} {
		add(cc, "testdata/corpus.c", "-O0", "-march=x86-64-v4")
		add(cc, "testdata/corpus.c", "-O1", "-march=x86-64-v3")
		add(cc, "testdata/corpus.c", "-O2", "-march=x86-64-v3")
		add(cc, "testdata/corpus.c", "-O2", "-march=x86-64-v4")
		add(cc, "testdata/corpus.c", "-O3", "-march=x86-64-v3", "-fno-omit-frame-pointer")
		add(cc, "testdata/corpus.c", "-O3", "-march=x86-64-v4", "-mprefer-vector-width=512")
		add(cc, "testdata/corpus.c", "-Os", "-march=x86-64-v4")
		add(cc, "testdata/corpus.c", "-O2", "-march=x86-64", "-fPIC")
		cxx := map[string]string{"gcc": "g++", "clang": "clang++"}[cc]
		add(cxx, "testdata/corpus.cpp", "-O2", "-march=x86-64-v4")
		add(cc, "../../testdata/src/loops.c", "-O3", "-march=x86-64-v4")
	}
	return cs
}

// TestCompilerOutput compiles C and C++ with gcc and clang under many
// options and checks that Of models every instruction they emit (no
// allow-list here: compilers may only emit modelled instructions), that
// the Effect invariants hold, and that objdump's operands agree.
func TestCompilerOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	t.Parallel()
	configs := compilerConfigs()
	for _, cc := range []string{"gcc", "g++", "clang", "clang++", "objdump"} {
		requireTool(t, cc)
	}
	dir := t.TempDir()
	objs := make([]string, len(configs))
	errs := make([]error, len(configs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, c := range configs {
		objs[i] = filepath.Join(dir, fmt.Sprintf("c%d.o", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := append(append([]string{}, c.flags...), "-c", "-o", objs[i], c.src)
			if out, err := exec.Command(c.cc, args...).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("%v: %v\n%s", c, err, out)
			}
		}()
	}
	wg.Wait()
	st := newSweepStats()
	for i, c := range configs {
		if errs[i] != nil {
			t.Error(errs[i])
			continue
		}
		data, err := os.ReadFile(objs[i])
		if err != nil {
			t.Fatal(err)
		}
		dis := objdumpArchive(t, objs[i])
		if len(dis) != 1 {
			t.Errorf("%v: objdump printed %d objects", c, len(dis))
			continue
		}
		st.sweepObject(c.String(), data, &dis[0])
	}
	names, count, example := st.unknownNames(t)
	t.Logf("%d compilations, %d instructions, %d cross-checked with objdump", len(configs), st.insns, st.crossChecked)
	for _, n := range names {
		t.Errorf("unknown %s (%d), e.g. %s", n, count[n], example[n])
	}
	for _, p := range st.problems {
		t.Errorf("invariant: %s", p)
	}
	for _, x := range st.crossEx {
		t.Errorf("objdump disagrees: %s", x)
	}
}
