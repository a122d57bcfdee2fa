//go:build !noplot

package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// colours counts the distinct colours of an image.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

// tinted is the fraction of the pixels of img that are coloured, not
// grey (the cells of a heatmap; axes and labels are grey).
func tinted(img image.Image) float64 {
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if max(r, g, bl)-min(r, g, bl) > 0x2000 {
				n++
			}
		}
	}
	return float64(n) / float64(b.Dx()*b.Dy())
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// TestHeatmapSmall draws the hand-made trace of the report tests.
func TestHeatmapSmall(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir, true)
	out := filepath.Join(dir, "h.png")
	code, stdout, stderr := runReport(t, "--heatmap", out, "--size", "640x480", path)
	if code != 0 || stderr != "" || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	img := decodePNG(t, out)
	if b := img.Bounds(); b.Dx() != 640 || b.Dy() != 480 {
		t.Fatalf("size %v, want 640x480", b)
	}
	if n := colours(img); n < 10 {
		t.Errorf("%d colours", n)
	}
	// one thread, writes only
	code, _, stderr = runReport(t, "--heatmap="+out, "--thread", "4250", "--kind", "writes", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// SVG, reads of the other thread
	code, _, stderr = runReport(t, "-heatmap", filepath.Join(dir, "h.svg"), "--thread", "4242", "--kind", "reads", path)
	if code != 0 {
		t.Fatalf("svg: exit %d: %s", code, stderr)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "h.svg"))
	if !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("no SVG: %.100q", svg)
	}
}

// TestHeatmapErrors: every error is one line and the exit status non-zero.
func TestHeatmapErrors(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir, true)
	bad := filepath.Join(dir, "bad.vpt")
	os.WriteFile(bad, []byte("garbage"), 0o644)
	png := filepath.Join(dir, "h.png")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--heatmap", filepath.Join(dir, "h.jpg"), path}, "unknown image format"},
		{[]string{"--heatmap", png, "--thread", "99", path}, "no thread 99"},
		{[]string{"--heatmap", png, "--kind", "both", path}, "--kind"},
		{[]string{"--heatmap", png, "--size", "10x10", path}, "--size"},
		{[]string{"--heatmap", png, bad}, "bad.vpt"},
		{[]string{"--heatmap", png, filepath.Join(dir, "missing.vpt")}, "missing.vpt"},
		{[]string{"--heatmap", png, path, path}, "one trace file"},
		{[]string{"--heatmap", png, "--csv", path}, "excludes"},
		{[]string{"--heatmap", png, "--thread", "4250", "--kind", "reads", "--bins", "-1", path}, "--bins"},
		{[]string{"--heatmap", filepath.Join(dir, "no", "such", "dir.png"), path}, "dir.png"},
	} {
		code, stdout, stderr := runReport(t, tc.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code == 0 || len(lines) != 1 || !strings.HasPrefix(stderr, "hijack") || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q (want one line with %q), stdout %q", tc.args, code, stderr, tc.want, stdout)
		}
	}
	// a trace without events has nothing to draw
	empty := filepath.Join(dir, "empty.vpt")
	data, _ := os.ReadFile(path)
	os.WriteFile(empty, data[:200], 0o644) // the header and the object only
	code, _, stderr := runReport(t, "--heatmap", png, empty)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if code == 0 || !strings.Contains(last, "nothing to draw") || strings.Count(stderr, ": warning: ") != len(lines)-1 {
		t.Errorf("empty trace: exit %d, %q", code, stderr)
	}
	if code, stdout, _ := runReport(t, "--heatmap", png, "--help"); code != 0 || !strings.Contains(stdout, "--kind") {
		t.Errorf("--help: %d %q", code, stdout)
	}
}

// TestHeatmapProgram traces the tune tests' workload (two threads, each
// with its arrays and records; a shared table) and draws it.
func TestHeatmapProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs a program")
	}
	needTools(t, "gcc")
	dir := t.TempDir()
	rt := buildRuntime(t)
	kern, main := twObjects(t, dir)
	inst := filepath.Join(dir, "tw_kern.inst.o")
	var so, se bytes.Buffer
	if code := run([]string{"--preset", "vptrace", kern, inst}, &so, &se); code != 0 {
		t.Fatalf("rewrite: %d %s", code, se.String())
	}
	exe := filepath.Join(dir, "tw")
	if out, err := exec.Command("gcc", main, inst, rt, "-lpthread", "-o", exe).CombinedOutput(); err != nil {
		t.Fatalf("link: %v\n%s", err, out)
	}
	tr := filepath.Join(dir, "tw.vpt")
	cmd := exec.Command(exe, "4")
	cmd.Env = append(os.Environ(), "VPTRACE_OUT="+tr)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "heat.png")
	code, _, stderr := runReport(t, "--heatmap", out, tr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	img := decodePNG(t, out)
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 800 {
		t.Fatalf("size %v, want the default 1200x800", b)
	}
	// Cells are coloured, axes and labels grey (about 1.3% of the
	// pixels); the runtime's filters make this trace sparse in time (a page
	// is recorded again only after a while), cells cover 4-7%.
	if n, f := colours(img), tinted(img); n < 30 || f < 0.01 {
		t.Errorf("%d colours, %.3f of the pixels coloured: no cells drawn?", n, f)
	}
	// one thread, writes, SVG
	code, csvOut, _ := runReport(t, "--csv", tr)
	if code != 0 {
		t.Fatal("report --csv failed")
	}
	tid := strings.Split(strings.Split(csvOut, "\n")[1], ",")[0]
	if _, err := strconv.Atoi(tid); err != nil {
		t.Fatalf("tid %q", tid)
	}
	svg := filepath.Join(dir, "heat.svg")
	if code, _, stderr := runReport(t, "--heatmap", svg, "--thread", tid, "--kind", "writes", "--size", "800x600", tr); code != 0 {
		t.Fatalf("svg: exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(svg)
	// rows are labelled by owner: the worker's malloc'd and calloc'd arrays
	// by their allocation sites
	if !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("alloc@worker+0x")) {
		t.Errorf("SVG without the owners' labels (malloc@worker+0x...)")
	}
}
