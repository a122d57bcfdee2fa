package e2e

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOwners: every page a program touches is named by what it held.
// testdata/src/owners.cc records what it allocated where (a manifest of
// address ranges and their expected owners: globals and statics reached
// through pointers, heap blocks of malloc, calloc, new[] and realloc sites,
// a block freed and its pages reused, an anonymous and a file mapping, the
// stacks and TLS arrays of 4 threads and main); it is rewritten with
// vptrace, linked with the runtime and run, and every row of `hijack
// report --csv` must name an owner the manifest gives its page (a heap
// block's site with the call's offset in the function: checked against
// the binary's own disassembly). At least 99% of the pages must be named
// right and none wrongly; the reused pages must show both owners, the
// earlier one first.
func TestOwners(t *testing.T) {
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in rewriter does not trace")
	}
	rt := vptRuntimeDir(t)
	src := filepath.Join(cfg.root, "testdata", "src", "owners.cc")
	for _, c := range []struct {
		cc    string
		flags []string
		link  []string
	}{
		{"g++", []string{"-O2"}, []string{"-no-pie"}},
		{"g++", []string{"-O0", "-fPIE"}, []string{"-pie"}},
		{"clang++", []string{"-O2", "-fPIE"}, []string{"-pie"}},
	} {
		c := c
		t.Run(c.cc+strings.Join(c.flags, ""), func(t *testing.T) {
			t.Parallel()
			needTool(t, c.cc, c.cc)
			dir := workDir(t)
			flags := append([]string{"-pthread", "-fno-stack-protector"}, c.flags...)
			obj := compile(t, c.cc, flags, src)
			inst := filepath.Join(dir, "inst.o")
			r := okRun(t, spec{Dir: dir, Timeout: 5 * time.Minute}, cfg.hijack, "--preset", "vptrace", obj, inst)
			if len(r.Stderr) > 0 {
				t.Logf("hijack: %s", r.Stderr)
			}
			prog := filepath.Join(dir, "inst")
			link(t, c.cc, prog, []string{inst}, append(c.link, "-pthread", "-L"+rt, "-lvptrace", "-Wl,-rpath,"+rt)...)
			plain := filepath.Join(dir, "plain")
			link(t, c.cc, plain, []string{obj}, append(c.link, "-pthread")...)
			man, scratch := filepath.Join(dir, "manifest"), filepath.Join(dir, "scratch.dat")
			want := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, plain, man+".plain", scratch+".plain")
			tr := filepath.Join(dir, "owners.vpt")
			got := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute, Env: []string{"VPTRACE_OUT=" + tr}}, prog, man, scratch)
			if !bytes.Equal(got.Stdout, want.Stdout) {
				t.Fatalf("instrumented program printed %q, plain %q", got.Stdout, want.Stdout)
			}
			reused := strings.Contains(string(got.Stdout), "reused yes")
			objs := readManifest(t, man)
			sites := callSites(t, dir, prog)

			rep := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, cfg.hijack, "report", "--csv", tr)
			if len(rep.Stderr) > 0 {
				t.Errorf("report warned: %s", rep.Stderr)
			}
			rows := csvRows(t, rep.Stdout)
			var right, wrong, unexplained int
			ownersOf := map[uint64][]ownerRow{} // the reused block's pages
			var reusedLo, reusedHi uint64
			for _, o := range objs {
				if strings.HasPrefix(o.owner, "malloc@alloc_again+") {
					reusedLo, reusedHi = o.lo, o.hi
				}
			}
			for _, row := range rows {
				page, _ := strconv.ParseUint(strings.TrimPrefix(row["page"], "0x"), 16, 64)
				first, _ := strconv.ParseUint(row["first_ns"], 10, 64)
				cands := candidates(objs, page)
				switch {
				case len(cands) == 0:
					unexplained++
					t.Errorf("page %#x (thread %s, %s %s): in no object of the manifest", page, row["thread"], row["segment"], row["owner"])
				case matches(cands, row["owner"], row["segment"], sites):
					right++
				default:
					wrong++
					var ws []string
					for _, c := range cands {
						ws = append(ws, c.owner+" "+c.seg)
					}
					t.Errorf("page %#x (thread %s): owner %q segment %s, want one of %v", page, row["thread"], row["owner"], row["segment"], ws)
				}
				if reused && page >= reusedLo && page+4096 <= reusedHi {
					ownersOf[page] = append(ownersOf[page], ownerRow{row["owner"], first})
				}
			}
			total := right + wrong + unexplained
			t.Logf("%d rows: %d right, %d wrong, %d in no object; %d objects in the manifest", total, right, wrong, unexplained, len(objs))
			if total == 0 || float64(right) < 0.99*float64(total) {
				t.Errorf("%d of %d pages named right, want >= 99%%", right, total)
			}
			// the reused pages: the freed block's owner first, then the new one
			if !reused {
				t.Logf("the allocator did not reuse the freed block's pages: reuse not checked")
			} else {
				both := 0
				for page, os := range ownersOf {
					var firstOld, firstNew uint64
					for _, o := range os {
						switch {
						case strings.HasPrefix(o.owner, "malloc@alloc_first+"):
							firstOld = o.first
						case strings.HasPrefix(o.owner, "malloc@alloc_again+"):
							firstNew = o.first
						}
					}
					if firstOld > 0 && firstNew > 0 {
						both++
						if firstOld >= firstNew {
							t.Errorf("page %#x: the new owner's events (%d ns) before the freed block's (%d ns)", page, firstNew, firstOld)
						}
					}
				}
				if both < len(ownersOf)*9/10 || both == 0 {
					t.Errorf("only %d of the reused block's %d pages show both owners", both, len(ownersOf))
				}
			}

			// the allocation sites in --json: counts and bytes
			js := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, cfg.hijack, "report", "--json", tr)
			var rj struct {
				Traces []struct {
					AllocSites []struct {
						Site, Allocator string
						Count           int
						Bytes           uint64
						Pages           int
					} `json:"allocation_sites"`
				}
			}
			if err := json.Unmarshal(js.Stdout, &rj); err != nil || len(rj.Traces) != 1 {
				t.Fatalf("--json: %v", err)
			}
			found := map[string]bool{}
			for _, s := range rj.Traces[0].AllocSites {
				name := s.Allocator + "@" + s.Site
				for _, o := range objs {
					if o.seg == "heap" && matchOwner(o.owner, name, sites) {
						found[o.owner] = true
						if s.Pages == 0 {
							t.Errorf("allocation site %s: no pages", name)
						}
					}
				}
				if name == "calloc@"+s.Site && strings.HasPrefix(s.Site, "alloc_hist+") && (s.Count != 1 || s.Bytes != 24*4096) {
					t.Errorf("calloc site: %d objects, %d bytes; want 1, %d", s.Count, s.Bytes, 24*4096)
				}
				if strings.HasPrefix(s.Site, "alloc_first+") && s.Count < 2 {
					t.Errorf("alloc_first's site: %d objects, want >= 2 (one row per site)", s.Count)
				}
			}
			for _, o := range objs {
				if o.seg == "heap" && !found[o.owner] {
					t.Errorf("--json lacks the allocation site %s", o.owner)
				}
			}
			// the text report's table
			txt := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, cfg.hijack, "report", "--top", "0", tr)
			for _, s := range []string{"by allocation site", "by owner", "table", "counts", "new[]@alloc_nodes+"} {
				if !strings.Contains(string(txt.Stdout), s) {
					t.Errorf("the report lacks %q", s)
				}
			}
		})
	}
}

type ownerRow struct {
	owner string
	first uint64
}

type manifestObj struct {
	owner, seg string
	lo, hi     uint64
}

func readManifest(t *testing.T, path string) []manifestObj {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []manifestObj
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			t.Fatalf("manifest line %q", sc.Text())
		}
		lo, err1 := strconv.ParseUint(f[2], 16, 64)
		hi, err2 := strconv.ParseUint(f[3], 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("manifest line %q", sc.Text())
		}
		objs = append(objs, manifestObj{f[0], f[1], lo, hi})
	}
	return objs
}

// candidates are the owners the manifest gives a page: the objects
// covering most of it (a page shared by two objects may be named by either
// only if each covers part of it); a thread's stack holds its TLS block,
// which is the more specific owner.
func candidates(objs []manifestObj, page uint64) []manifestObj {
	var out []manifestObj
	var other bool
	for _, o := range objs {
		if o.lo < page+4096 && o.hi > page {
			out = append(out, o)
			other = other || o.seg != "stack"
		}
	}
	if other {
		keep := out[:0]
		for _, o := range out {
			if o.seg != "stack" {
				keep = append(keep, o)
			}
		}
		out = keep
	}
	return out
}

func matches(cands []manifestObj, owner, seg string, sites map[string]map[uint64]bool) bool {
	for _, c := range cands {
		if c.seg == seg && matchOwner(c.owner, owner, sites) {
			return true
		}
	}
	return false
}

// matchOwner: an exact owner, or for ALLOCATOR@FUNC+ prefixes the site's
// offset must be the return address of a call in FUNC (sites).
func matchOwner(want, got string, sites map[string]map[uint64]bool) bool {
	if !strings.HasSuffix(want, "+") {
		return want == got
	}
	if !strings.HasPrefix(got, want) {
		return false
	}
	fn := strings.TrimSuffix(want[strings.Index(want, "@")+1:], "+")
	off, err := strconv.ParseUint(strings.TrimPrefix(got[len(want):], "0x"), 16, 64)
	return err == nil && sites[fn][off]
}

var objdumpFunc = regexp.MustCompile(`^([0-9a-f]+) <([^>]+)>:$`)

// callSites: per function, the offsets (from the function's start) of the
// instructions that follow a call: where an allocation site's return
// address may point. The oracle is objdump's disassembly of the binary.
func callSites(t *testing.T, dir, bin string) map[string]map[uint64]bool {
	t.Helper()
	r := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, "objdump", "-d", "--no-show-raw-insn", "-w", bin)
	out := map[string]map[uint64]bool{}
	var fn string
	var start uint64
	afterCall := false
	insn := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(\S+)`)
	for _, l := range strings.Split(string(r.Stdout), "\n") {
		if m := objdumpFunc.FindStringSubmatch(l); m != nil {
			fn = m[2]
			start, _ = strconv.ParseUint(m[1], 16, 64)
			afterCall = false
			continue
		}
		m := insn.FindStringSubmatch(l)
		if m == nil || fn == "" {
			continue
		}
		a, _ := strconv.ParseUint(m[1], 16, 64)
		if afterCall {
			if out[fn] == nil {
				out[fn] = map[uint64]bool{}
			}
			out[fn][a-start] = true
		}
		afterCall = strings.HasPrefix(m[2], "call")
	}
	return out
}

func csvRows(t *testing.T, data []byte) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("csv: %v", err)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = rec[i]
		}
		rows = append(rows, m)
	}
	return rows
}
