//go:build !noplot

package main

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// needTools skips the test when a tool it runs is missing (fails under
// CI=true, like the e2e suite).
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found", tool)
			}
			t.Skipf("%s not found (install it to run this test)", tool)
		}
	}
}

// buildRuntime builds libvptrace.a into a temporary directory.
func buildRuntime(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("sh", "../../vptrace/runtime/build.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("building the runtime: %v\n%s", err, out)
	}
	return filepath.Join(dir, "libvptrace.a")
}

// twObjects compiles the tune tests' workload (vptrace/tune/testdata)
// into dir: tw_kern.o (to instrument) and tw_main.o.
func twObjects(t *testing.T, dir string) (kern, main string) {
	return workloadObjects(t, dir, "tw")
}

// workloadObjects compiles a workload of the tune tests
// (vptrace/tune/testdata/W_kern.c and W_main.c) into dir.
func workloadObjects(t *testing.T, dir, w string) (kern, main string) {
	t.Helper()
	src := "../../vptrace/tune/testdata"
	kern, main = filepath.Join(dir, w+"_kern.o"), filepath.Join(dir, w+"_main.o")
	for _, c := range [][2]string{{w + "_kern.c", kern}, {w + "_main.c", main}} {
		if out, err := exec.Command("gcc", "-O2", "-c", filepath.Join(src, c[0]), "-o", c[1]).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", c[0], err, out)
		}
	}
	return kern, main
}

func runTune(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var so, se bytes.Buffer
	code := run(append([]string{"tune"}, args...), &so, &se)
	return code, so.String(), se.String()
}

// TestTune runs a small experiment on the bundled workload: two
// thresholds, one page size, three repetitions.
func TestTune(t *testing.T) {
	if testing.Short() {
		t.Skip("runs programs for about 20 s")
	}
	needTools(t, "gcc")
	dir := t.TempDir()
	rt := buildRuntime(t)
	kern, main := twObjects(t, dir)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runTune(t, "--runtime", rt, "--link", "gcc "+main+" {objs} {rt} -lpthread -o {out}",
		"--run", "{out} 4", "--threshold", "0,1", "--pagesize", "4K", "--reps", "3", "--out", out, "--title", "tw", kern)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("stdout:\n%s", stdout)
	// progress: one line per run, with an ETA
	runs := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "hijack tune: [") {
			runs++
		}
	}
	if want := 1 + 2*3*3; runs != want || !strings.Contains(stderr, "ETA") {
		t.Errorf("%d progress lines, want %d (and an ETA):\n%s", runs, want, stderr)
	}

	// results.csv: the schema, one row per configuration, the reference first
	header, rows := readResults(t, filepath.Join(out, "results.csv"))
	for i, c := range []string{"threshold", "pagesize", "slowdown", "recall", "precision", "count_error", "blocks", "sites",
		"plain_median_s", "inst_median_s", "reps", "mode"} {
		if i >= len(header) || header[i] != c {
			t.Fatalf("header %v: column %d is not %s", header, i, c)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3:\n%v", len(rows), rows)
	}
	num := func(row, col string) float64 {
		t.Helper()
		x, err := strconv.ParseFloat(rows[row][col], 64)
		if err != nil {
			t.Fatalf("%s %s: %q: %v", row, col, rows[row][col], err)
		}
		return x
	}
	ref, t0, t1 := "exact", "T0.0000", "T1.0000"
	for _, r := range []string{ref, t0, t1} {
		if rows[r] == nil {
			t.Fatalf("no row %s: %v", r, rows)
		}
		if rows[r]["reps"] != "3" {
			t.Errorf("%s: reps %s", r, rows[r]["reps"])
		}
		for _, c := range []string{"slowdown", "plain_median_s", "inst_median_s", "inst_cpu_s"} {
			if x := num(r, c); x <= 0 {
				t.Errorf("%s: %s = %v", r, c, x)
			}
		}
	}
	if rows[t0]["pagesize"] != "4096" {
		t.Errorf("pagesize %s", rows[t0]["pagesize"])
	}
	// at least as much is instrumented at T=0 as at T=1
	if num(t0, "sites") < num(t1, "sites") || num(t0, "blocks") < num(t1, "blocks") || num(t0, "sites") == 0 {
		t.Errorf("sites/blocks: T=0 %s/%s, T=1 %s/%s", rows[t0]["sites"], rows[t0]["blocks"], rows[t1]["sites"], rows[t1]["blocks"])
	}
	// T=1 is never slower than T=0 beyond noise: medians of the
	// instrumented runs, wall clock or CPU time (the machine may be busy
	// with other work; one of the two is enough)
	wallOK := num(t1, "inst_median_s") <= 1.3*num(t0, "inst_median_s")+0.05
	cpuOK := num(t1, "inst_cpu_s") <= 1.2*num(t0, "inst_cpu_s")+0.03
	if !wallOK && !cpuOK {
		t.Errorf("T=1 slower than T=0: wall %s vs %s s, cpu %s vs %s s", rows[t1]["inst_median_s"], rows[t0]["inst_median_s"],
			rows[t1]["inst_cpu_s"], rows[t0]["inst_cpu_s"])
	}
	// accuracy: T=0 sees at least what T=1 sees (the medians, with the
	// comparison's run-to-run noise); the T=0 build misses next to
	// nothing of the reference
	r0, r1 := num(t0, "recall"), num(t1, "recall")
	if r0 < r1-0.01 || r0 < 0.9 {
		t.Errorf("recall T=0 %v, T=1 %v", r0, r1)
	}
	if p := num(t0, "precision"); p < 0.9 {
		t.Errorf("precision T=0 %v", p)
	}
	if r := num(ref, "recall"); r < 0.9 {
		t.Errorf("the reference's run-to-run recall %v", r)
	}

	// plots: SVG and PNG, decodable, not blank
	for _, name := range []string{"overhead", "accuracy", "tune"} {
		svg, err := os.ReadFile(filepath.Join(out, name+".svg"))
		if err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("%s.svg: %v", name, err)
		}
		f, err := os.Open(filepath.Join(out, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s.png: %v", name, err)
		}
		if n := colours(img); n < 8 {
			t.Errorf("%s.png: %d colours", name, n)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "runs.csv")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(out, "work")); !os.IsNotExist(err) {
		t.Errorf("the work directory is still there (%v)", err)
	}
}

// readResults reads results.csv: its header, and its rows keyed by
// "exact" or "T<threshold>".
func readResults(t *testing.T, path string) ([]string, map[string]map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]string{}
	for _, r := range recs[1:] {
		if len(r) != len(recs[0]) {
			t.Fatalf("row %v has %d fields, the header %d", r, len(r), len(recs[0]))
		}
		m := map[string]string{}
		for i, c := range recs[0] {
			m[c] = r[i]
		}
		key := m["mode"]
		if key == "approx" {
			key = "T" + m["threshold"]
		}
		rows[key] = m
	}
	return recs[0], rows
}

// TestTuneHeap: tune on a multi-threaded program with heap data (th:
// every thread a malloc arena of list nodes and a 2 MiB block), whose
// heap layout differs from run to run although the traces are complete.
// With an arena per thread, the comparison lines the layouts up: recall
// at T=0 meets the project's bar. With threads sharing two arenas, the
// pages each thread touches change from run to run: the output must
// either still meet the bar or say that the comparison is not valid (no
// recall in results.csv, n/c in the table, a warning with the figures);
// a recall below the bar presented as recall fails. Before tune checked
// this and Align placed heap pieces per thread, T=0 got a recall of
// 0.73-0.95 in most experiments with 8 threads and an arena each.
func TestTuneHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs programs for about 20 s")
	}
	needTools(t, "gcc")
	dir := t.TempDir()
	rt := buildRuntime(t)
	kern, main := workloadObjects(t, dir, "th")
	for _, tc := range []struct {
		name, run string
		shared    bool // threads share arenas: not comparable is a right answer
	}{
		{"an arena per thread", "{out} 8", false},
		{"two arenas for 8 threads", "GLIBC_TUNABLES=glibc.malloc.arena_max=2 {out} 8", true},
	} {
		out := filepath.Join(dir, "out")
		code, stdout, stderr := runTune(t, "--runtime", rt, "--link", "gcc "+main+" {objs} {rt} -lpthread -o {out}",
			"--run", tc.run, "--threshold", "0", "--pagesize", "4K", "--reps", "3", "--out", out, kern)
		if code != 0 {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", tc.name, code, stdout, stderr)
		}
		t.Logf("%s:\n%s", tc.name, stdout)
		_, rows := readResults(t, filepath.Join(out, "results.csv"))
		for _, key := range []string{"exact", "T0.0000"} {
			r := rows[key]
			if r == nil {
				t.Fatalf("%s: no row %s", tc.name, key)
			}
			recall, err := strconv.ParseFloat(r["recall"], 64)
			switch {
			case r["layout_stable"] == "0" && r["compared"] == "0":
				// not comparable: said everywhere, and no figure
				if !tc.shared {
					t.Errorf("%s: %s: not comparable with an arena per thread:\n%s", tc.name, key, stderr)
				}
				if r["recall"] != "" || r["precision"] != "" || !strings.Contains(stdout, "n/c: not comparable") ||
					!strings.Contains(stderr, "warning: the comparison is not valid") {
					t.Errorf("%s: %s: recall %q precision %q, stdout and stderr should say it is not comparable:\n%s\n%s",
						tc.name, key, r["recall"], r["precision"], stdout, stderr)
				}
			case err != nil:
				t.Errorf("%s: %s: recall %q: %v", tc.name, key, r["recall"], err)
			case recall < 0.995:
				t.Errorf("%s: %s: recall %v presented as recall (layout_stable %s); the traces are complete", tc.name, key, recall, r["layout_stable"])
			case !tc.shared && (r["layout_stable"] != "1" || r["compared"] != map[string]string{"exact": "2", "T0.0000": "3"}[key]):
				t.Errorf("%s: %s: layout_stable %s, compared %s: some runs did not compare:\n%s", tc.name, key, r["layout_stable"], r["compared"], stderr)
			}
		}
	}
}

// TestTuneErrors: usage errors and failing builds are one line.
func TestTuneErrors(t *testing.T) {
	dir := t.TempDir()
	obj := filepath.Join(dir, "x.o")
	os.WriteFile(obj, []byte("not an object"), 0o644)
	rt := filepath.Join(dir, "libvptrace.a")
	os.WriteFile(rt, nil, 0o644)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		// options: usage errors
		{[]string{"--link", "cc {objs} -o {out}", "--run", "{out}", "--runtime", rt, "--out", out, obj}, 2, "want {rt}"},
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "true", "--runtime", rt, "--out", out, obj}, 2, "want {out}"},
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "{out}", "--runtime", rt, "--pagesize", "3K", "--out", out, obj}, 2, "power of two"},
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "{out}", "--runtime", rt, "--threshold", "0,x", obj}, 2, "bad number"},
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "{out}", "--runtime", rt, "--reps", "0", "--out", out, obj}, 2, "--reps"},
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "{out}", "--runtime", rt, "--out", out}, 2, "no objects"},
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "{out}", "--runtime", rt, "--param", "bogus=1", "--out", out, obj}, 2, "--param"},
		{[]string{"--bogus"}, 2, "unknown flag"},
		// inputs: the user's file named
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "{out}", "--runtime", filepath.Join(dir, "none.a"), "--out", out, obj}, 1,
			filepath.Join(dir, "none.a") + ": vptrace runtime not found"},
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "{out}", "--runtime", rt, "--out", out, filepath.Join(dir, "gone.o")}, 1,
			filepath.Join(dir, "gone.o") + ": no such file"},
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "{out}", "--runtime", rt, "--rules", filepath.Join(dir, "r.yaml"), "--out", out, obj}, 1,
			filepath.Join(dir, "r.yaml") + ": no such file"},
		// the uninstrumented build is linked first: the linker names x.o
		{[]string{"--link", "cc {objs} {rt} -o {out}", "--run", "{out}", "--runtime", rt, "--out", out, "--aslr", obj}, 1, "x.o: file format not recognized"},
	} {
		code, stdout, stderr := runTune(t, append([]string{"-q"}, tc.args...)...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != tc.code || len(lines) != 1 || !strings.HasPrefix(stderr, "hijack: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want one line with %q), stdout %q", tc.args, code, tc.code, stderr, tc.want, stdout)
		}
	}
	if code, stdout, _ := runTune(t, "--help"); code != 0 || !strings.Contains(stdout, "--threshold") {
		t.Errorf("--help: %d %q", code, stdout)
	}
}
