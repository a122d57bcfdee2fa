package main

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoplot builds hijack as make build does, without plotting (-tags
// noplot, CGO_ENABLED=0), and the full build as hijack-plot: the rewriter
// links no plotting code and no cgo, help works without hijack-plot, and
// the plotting commands run in hijack-plot when it is next to hijack, with
// the same output and exit status as the full build gives.
func TestNoplot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hijack twice")
	}
	dir := t.TempDir()
	lean, full := filepath.Join(dir, "hijack"), filepath.Join(dir, "full", "hijack")
	build := func(out string, env []string, args ...string) {
		cmd := exec.Command("go", append(append([]string{"build"}, args...), "-o", out, ".")...)
		cmd.Env = append(os.Environ(), env...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, msg)
		}
	}
	build(lean, []string{"CGO_ENABLED=0"}, "-tags", "noplot")
	build(full, nil)

	f, err := elf.Open(lean)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		for _, pkg := range []string{"gonum.org/", "hijack/vptrace/plot.", "hijack/vptrace/tune.", "runtime/cgo.", "image/png."} {
			if strings.HasPrefix(s.Name, pkg) {
				t.Fatalf("the build without plotting links %s", s.Name)
			}
		}
	}
	if _, err := f.DynamicSymbols(); err == nil {
		t.Errorf("the build without plotting is dynamically linked")
	}

	type result struct {
		code           int
		stdout, stderr string
	}
	run := func(exe string, args ...string) result {
		var so, se bytes.Buffer
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("%s %v: %v", exe, args, err)
		}
		return result{cmd.ProcessState.ExitCode(), so.String(), se.String()}
	}
	tr := writeTrace(t, dir, true)

	// Without hijack-plot: help works, the plotting commands say what is
	// missing, the report without --heatmap does not need it.
	if r := run(lean, "help", "tune"); r.code != 0 || !strings.Contains(r.stdout, "--link") {
		t.Errorf("help tune: %+v", r)
	}
	if r := run(lean, "help", "heatmap"); r.code != 0 || !strings.Contains(r.stdout, "--bins") {
		t.Errorf("help heatmap: %+v", r)
	}
	for _, args := range [][]string{{"tune", "--help"}, {"report", "--heatmap", "h.png", tr}} {
		r := run(lean, args...)
		if r.code != exitFailure || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
			!strings.HasPrefix(r.stderr, "hijack: "+args[0]+": ") || !strings.Contains(r.stderr, "hijack-plot") {
			t.Errorf("%v without hijack-plot: %+v", args, r)
		}
	}
	if r := run(lean, "report", tr); r.code != 0 || !strings.Contains(r.stdout, "4242") {
		t.Errorf("report: %+v", r)
	}

	// With hijack-plot next to it: the same as the full build.
	if err := os.Rename(full, filepath.Join(dir, "hijack-plot")); err != nil {
		t.Fatal(err)
	}
	full = filepath.Join(dir, "hijack-plot")
	for _, args := range [][]string{
		{"tune", "--help"},
		{"tune", "--reps", "0", "x.o"},
		{"report", "--heatmap", "h.svg", "--thread", "99", tr},
		{"report", "--heatmap", "h.svg", "--size", "640x480", tr},
	} {
		want := run(full, args...)
		var img []byte
		if args[0] == "report" {
			img, _ = os.ReadFile(filepath.Join(dir, "h.svg"))
			os.Remove(filepath.Join(dir, "h.svg"))
		}
		got := run(lean, args...)
		if got != want {
			t.Errorf("%v: got %+v, want %+v", args, got, want)
		}
		if args[0] == "report" {
			if got, _ := os.ReadFile(filepath.Join(dir, "h.svg")); !bytes.Equal(got, img) {
				t.Errorf("%v: the image differs from the full build's (%d bytes, want %d)", args, len(got), len(img))
			}
		}
	}
	// A hijack-plot that is itself built without plotting says so.
	os.Remove(full)
	build(full, []string{"CGO_ENABLED=0"}, "-tags", "noplot")
	if r := run(lean, "tune", "--help"); r.code != exitFailure || !strings.Contains(r.stderr, "itself built without plotting") {
		t.Errorf("hijack-plot without plotting: %+v", r)
	}
}
