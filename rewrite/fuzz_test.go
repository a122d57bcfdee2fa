package rewrite_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"hijack/internal/objmut"
)

// The corpus is compiled once per test binary: TestMutants, TestGrowth and
// the three fuzz targets share it.
var (
	corpusOnce sync.Once
	corpusDir  string
	corpusObjs []objmut.Object
	corpusErr  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if corpusDir != "" {
		os.RemoveAll(corpusDir)
	}
	os.Exit(code)
}

// corpus returns the compiled corpus objects (see objmut.Corpus).
func corpus(t testing.TB) []objmut.Object {
	t.Helper()
	corpusOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hijack-corpus-")
		if err != nil {
			corpusErr = err.Error()
			return
		}
		corpusDir = dir
		// A failure to compile is reported to the test that asked first;
		// the others see corpusErr.
		corpusObjs = objmut.Corpus(t, "../testdata/src", dir)
	})
	if corpusErr != "" {
		t.Fatal(corpusErr)
	}
	if corpusObjs == nil {
		t.Skip("corpus could not be compiled (see the first test that asked)")
	}
	return corpusObjs
}

// fuzzRewrite is a fuzz target over the whole pipeline (read, build,
// preset, emit, write, read back) with one preset. Its seeds are the corpus
// objects and structured mutants of each (make them again with
// objmut.Mutate); the fuzzer mutates from there.
func fuzzRewrite(f *testing.F, preset, settings string) {
	objs := corpus(f)
	for i, obj := range objs {
		f.Add(obj.Data)
		for _, m := range objmut.Mutate(obj.Data, uint64(1000+i), 12) {
			f.Add(m.Data)
		}
	}
	rf := configRules(f, preset, settings)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Go's fuzzer does not time out a single input; a hang would
		// stall the run. Crash instead, so that the input is reported.
		tm := time.AfterFunc(time.Minute, func() { panic(fmt.Sprintf("%s: rewriting a %d-byte input takes over a minute", preset, len(data))) })
		defer tm.Stop()
		checkRewrite(t, preset, data, rf, 256*uint64(len(data))+512<<20)
	})
}

func FuzzRewritePad(f *testing.F)     { fuzzRewrite(f, "pad", "after=true,cold=true") }
func FuzzRewriteClobber(f *testing.F) { fuzzRewrite(f, "clobber", "") }
func FuzzRewriteVptrace(f *testing.F) { fuzzRewrite(f, "vptrace", "usestack=true") }
