package e2e

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Helpers of the vptrace accuracy test: the workloads' metadata, their
// oracle files, `hijack report --csv` output, and the comparison of the two.

// ---------------------------------------------------------------------------
// Workloads

// vptWorkload is one workload of vptrace/testdata/workloads: NAME_kern.c
// (instrumented) and NAME_drv.c (not), with metadata in the kernel's
// leading `// key: value` comment lines:
//
//	workload:  name
//	about:     description (repeatable)
//	test-args: driver arguments for the accuracy test
//	bench-args: driver arguments for scripts/bench-vptrace.sh (~0.5-2 s plain)
//	cflags:    extra kernel compiler flags
//	cpu:       /proc/cpuinfo flags the workload needs at every level
//	usestack:  levels (O0 O2 O3-v3) also run with usestack: true (default O0)
//	pdes:      yes for the PCS simulation (its oracle is regions, not exact pages)
type vptWorkload struct {
	name string
	kern string
	drv  string
	meta map[string][]string
}

func (w vptWorkload) get(key string) string { return strings.Join(w.meta[key], " ") }

func (w vptWorkload) fields(key string) []string { return strings.Fields(w.get(key)) }

func vptWorkloadDir() string { return filepath.Join(cfg.root, "vptrace", "testdata", "workloads") }

func loadVptWorkloads() ([]vptWorkload, error) {
	dir := vptWorkloadDir()
	kerns, err := filepath.Glob(filepath.Join(dir, "*_kern.c"))
	if err != nil {
		return nil, err
	}
	sort.Strings(kerns)
	var ws []vptWorkload
	for _, k := range kerns {
		name := strings.TrimSuffix(filepath.Base(k), "_kern.c")
		w := vptWorkload{name: name, kern: k, drv: filepath.Join(dir, name+"_drv.c"), meta: map[string][]string{}}
		if _, err := os.Stat(w.drv); err != nil {
			return nil, fmt.Errorf("workload %s: no driver: %v", name, err)
		}
		data, err := os.ReadFile(k)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(line, "//") {
				break
			}
			kv := strings.TrimSpace(strings.TrimPrefix(line, "//"))
			if i := strings.Index(kv, ":"); i > 0 && !strings.Contains(kv[:i], " ") {
				w.meta[kv[:i]] = append(w.meta[kv[:i]], strings.TrimSpace(kv[i+1:]))
			}
		}
		if w.get("workload") != name {
			return nil, fmt.Errorf("%s: first line must be `// workload: %s`", k, name)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// ---------------------------------------------------------------------------
// Oracle files (format: vptrace/testdata/workloads/oracle.h)

const (
	okR     = 1
	okW     = 2
	okStack = 4 // required only with usestack
	okAllow = 8 // may be touched
)

type vptRegion struct {
	name      string
	base, len uint64
}

type vptOracle struct {
	workload string
	threads  []string          // in file order
	tid      map[string]uint32 // thread name -> TID
	name     map[uint32]string // TID -> thread name
	regions  []vptRegion       // ascending base
	pages    map[string]map[uint64]uint8
	notes    []string
}

func parseOracle(data []byte) (*vptOracle, error) {
	o := &vptOracle{tid: map[string]uint32{}, name: map[uint32]string{}, pages: map[string]map[uint64]uint8{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	ln := 0
	hex := func(s string) (uint64, error) { return strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64) }
	for sc.Scan() {
		ln++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		bad := func(err error) error { return fmt.Errorf("oracle line %d %q: %v", ln, sc.Text(), err) }
		switch f[0] {
		case "vptrace-oracle":
			if len(f) != 2 || f[1] != "1" {
				return nil, bad(fmt.Errorf("unknown version"))
			}
		case "workload":
			if len(f) == 2 {
				o.workload = f[1]
			}
		case "thread":
			if len(f) != 3 {
				return nil, bad(fmt.Errorf("want: thread NAME TID"))
			}
			tid, err := strconv.ParseUint(f[2], 10, 32)
			if err != nil {
				return nil, bad(err)
			}
			o.threads = append(o.threads, f[1])
			o.tid[f[1]] = uint32(tid)
			o.name[uint32(tid)] = f[1]
			o.pages[f[1]] = map[uint64]uint8{}
		case "region":
			if len(f) != 4 {
				return nil, bad(fmt.Errorf("want: region NAME BASE LEN"))
			}
			b, err1 := hex(f[2])
			l, err2 := hex(f[3])
			if err1 != nil || err2 != nil {
				return nil, bad(fmt.Errorf("bad number"))
			}
			o.regions = append(o.regions, vptRegion{f[1], b, l})
		case "need", "stack", "allow":
			if (f[0] == "allow" && len(f) != 4) || (f[0] != "allow" && len(f) != 5) {
				return nil, bad(fmt.Errorf("wrong number of fields"))
			}
			m := o.pages[f[1]]
			if m == nil {
				return nil, bad(fmt.Errorf("unknown thread %s", f[1]))
			}
			pg, err1 := hex(f[2])
			n, err2 := strconv.ParseUint(f[3], 10, 32)
			if err1 != nil || err2 != nil || pg%4096 != 0 {
				return nil, bad(fmt.Errorf("bad page or count"))
			}
			var k uint8
			switch f[0] {
			case "allow":
				k = okAllow
			case "stack":
				k = okStack
			}
			if f[0] != "allow" {
				switch f[4] {
				case "r":
					k |= okR
				case "w":
					k |= okW
				case "rw":
					k |= okR | okW
				default:
					return nil, bad(fmt.Errorf("kind %q", f[4]))
				}
			}
			for i := uint64(0); i < n; i++ {
				p := pg/4096 + i
				old := m[p]
				// need beats stack beats allow
				switch {
				case old == 0:
					m[p] = k
				case k&(okR|okW) != 0 && k&okStack == 0:
					m[p] = (old & (okR | okW)) | k
				case k&(okR|okW) != 0 && old&(okR|okW) == 0:
					m[p] = k
				case k&(okR|okW) != 0:
					m[p] = old | (k & (okR | okW))
				}
			}
		case "note":
			o.notes = append(o.notes, strings.TrimSpace(strings.TrimPrefix(sc.Text(), "note")))
		default:
			return nil, bad(fmt.Errorf("unknown record"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(o.threads) == 0 {
		return nil, fmt.Errorf("oracle names no thread")
	}
	sort.Slice(o.regions, func(i, j int) bool { return o.regions[i].base < o.regions[j].base })
	return o, nil
}

// region returns the region holding an address (or whose first page holds
// it). Regions overlap only for stacks holding other regions; the
// innermost (latest starting) wins.
func (o *vptOracle) region(addr uint64) (vptRegion, bool) {
	i := sort.Search(len(o.regions), func(i int) bool { return o.regions[i].base > addr }) - 1
	for ; i >= 0; i-- {
		r := o.regions[i]
		if addr >= r.base && addr < r.base+r.len {
			return r, true
		}
	}
	// a page holding a region's first bytes, below its base
	for _, r := range o.regions {
		if addr < r.base && addr/4096 == r.base/4096 {
			return r, true
		}
	}
	return vptRegion{}, false
}

// where names an address by its region: ("t0.rd", offset).
func (o *vptOracle) where(addr uint64) (string, uint64, bool) {
	r, ok := o.region(addr)
	if !ok {
		return "", 0, false
	}
	if addr < r.base {
		return r.name, 0, true
	}
	return r.name, addr - r.base, true
}

func (o *vptOracle) describe(page uint64) string {
	a := page * 4096
	if n, off, ok := o.where(a); ok {
		return fmt.Sprintf("%#x (%s+%#x)", a, n, off)
	}
	if n, off, ok := o.where(a + 4095); ok {
		return fmt.Sprintf("%#x (%s+%#x)", a, n, off)
	}
	return fmt.Sprintf("%#x (no region)", a)
}

// norm names a page independently of the run's address layout: "t0.rd/3"
// (page index from the region's first page), for comparing runs.
func (o *vptOracle) norm(page uint64) string {
	if r, ok := o.region(page * 4096); ok {
		return fmt.Sprintf("%s/%d", r.name, page-r.base/4096)
	}
	if r, ok := o.region(page*4096 + 4095); ok {
		return fmt.Sprintf("%s/%d", r.name, page-r.base/4096)
	}
	return fmt.Sprintf("?%#x", page*4096)
}

// ---------------------------------------------------------------------------
// Report CSV

type vptRow struct {
	tid           uint32
	page          uint64 // page number
	reads, writes uint64
	rest          string // the other columns, for failure messages
}

type vptReport struct {
	header []string
	rows   []vptRow
	byTID  map[uint32]map[uint64]*vptRow
}

func parseReportCSV(data []byte) (*vptReport, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("report --csv: no header: %v", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"thread", "page", "reads", "writes"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("report --csv: no %q column in header %q", need, strings.Join(head, ","))
		}
	}
	rep := &vptReport{header: head, byTID: map[uint32]map[uint64]*vptRow{}}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("report --csv: %v", err)
		}
		get := func(c string) string {
			if i := col[c]; i < len(rec) {
				return rec[i]
			}
			return ""
		}
		tid, err1 := strconv.ParseUint(get("thread"), 10, 32)
		page, err2 := strconv.ParseUint(strings.TrimPrefix(get("page"), "0x"), 16, 64)
		rd, err3 := strconv.ParseUint(get("reads"), 10, 64)
		wr, err4 := strconv.ParseUint(get("writes"), 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || !strings.HasPrefix(get("page"), "0x") || page%4096 != 0 {
			return nil, fmt.Errorf("report --csv: bad row %q", strings.Join(rec, ","))
		}
		var rest []string
		for i, v := range rec {
			switch strings.TrimSpace(head[min(i, len(head)-1)]) {
			case "thread", "page", "reads", "writes", "first_ns", "last_ns", "pid":
				continue
			}
			if v != "" && i < len(head) {
				rest = append(rest, head[i]+"="+v)
			}
		}
		row := vptRow{tid: uint32(tid), page: page / 4096, reads: rd, writes: wr, rest: strings.Join(rest, " ")}
		rep.rows = append(rep.rows, row)
	}
	for i := range rep.rows {
		row := &rep.rows[i]
		m := rep.byTID[row.tid]
		if m == nil {
			m = map[uint64]*vptRow{}
			rep.byTID[row.tid] = m
		}
		if old := m[row.page]; old != nil {
			// several processes or instances: add up
			old.reads += row.reads
			old.writes += row.writes
			continue
		}
		m[row.page] = row
	}
	return rep, nil
}

// ---------------------------------------------------------------------------
// Comparison

type vptThreadScore struct {
	thread             string
	tid                uint32
	need, hit, traced  int // required pages, of them traced, pages traced
	extra              int // traced pages neither required nor allowed
	allowed            int // traced pages only allowed (stack, pools)
	kindBad            int // pure-read pages with writes or pure-write pages with reads
	missed, extraPages []uint64
	kindMsgs           []string
	recall, precision  float64
	normPages          map[string]bool
}

type vptScore struct {
	threads     []*vptThreadScore
	strayTIDs   map[uint32]int // TIDs in the trace the oracle does not know -> pages
	strayPages  []vptRow
	totalNeed   int
	totalHit    int
	totalTraced int
	totalExtra  int
}

func (s *vptScore) recall() float64 {
	if s.totalNeed == 0 {
		return 1
	}
	return float64(s.totalHit) / float64(s.totalNeed)
}

func (s *vptScore) precision() float64 {
	if s.totalTraced == 0 {
		return 1
	}
	return float64(s.totalTraced-s.totalExtra) / float64(s.totalTraced)
}

// score compares a trace with the oracle: per thread, recall over the
// required pages and precision (traced pages the oracle requires or
// allows). usestack makes the oracle's stack pages required.
func score(o *vptOracle, rep *vptReport, usestack, checkKinds bool) *vptScore {
	s := &vptScore{strayTIDs: map[uint32]int{}}
	for _, name := range o.threads {
		tid := o.tid[name]
		ts := &vptThreadScore{thread: name, tid: tid, normPages: map[string]bool{}}
		exp := o.pages[name]
		got := rep.byTID[tid]
		for p, k := range exp {
			req := k&(okR|okW) != 0 && (k&okStack == 0 || usestack)
			if !req {
				continue
			}
			ts.need++
			row := got[p]
			if row == nil {
				ts.missed = append(ts.missed, p)
				continue
			}
			ts.hit++
			if checkKinds && k&okStack == 0 {
				switch k & (okR | okW) {
				case okR:
					if row.writes != 0 || row.reads == 0 {
						ts.kindBad++
						ts.kindMsgs = append(ts.kindMsgs, fmt.Sprintf("%s: only read, trace says reads=%d writes=%d [%s]", o.describe(p), row.reads, row.writes, row.rest))
					}
				case okW:
					if row.reads != 0 || row.writes == 0 {
						ts.kindBad++
						ts.kindMsgs = append(ts.kindMsgs, fmt.Sprintf("%s: only written, trace says reads=%d writes=%d [%s]", o.describe(p), row.reads, row.writes, row.rest))
					}
				}
			}
		}
		for p := range got {
			ts.traced++
			// stack pages shift between builds (the static TLS block,
			// at the top of a thread's stack, grows with the sites)
			if r, ok := o.region(p * 4096); !ok || !strings.HasPrefix(r.name, "stack:") {
				ts.normPages[o.norm(p)] = true
			}
			k := exp[p]
			switch {
			case k == 0:
				ts.extra++
				ts.extraPages = append(ts.extraPages, p)
			case k&(okR|okW) == 0 || (k&okStack != 0 && !usestack):
				ts.allowed++
			}
		}
		sort.Slice(ts.missed, func(i, j int) bool { return ts.missed[i] < ts.missed[j] })
		sort.Slice(ts.extraPages, func(i, j int) bool { return ts.extraPages[i] < ts.extraPages[j] })
		sort.Strings(ts.kindMsgs)
		ts.recall, ts.precision = 1, 1
		if ts.need > 0 {
			ts.recall = float64(ts.hit) / float64(ts.need)
		}
		if ts.traced > 0 {
			ts.precision = float64(ts.traced-ts.extra) / float64(ts.traced)
		}
		s.threads = append(s.threads, ts)
		s.totalNeed += ts.need
		s.totalHit += ts.hit
		s.totalTraced += ts.traced
		s.totalExtra += ts.extra
	}
	for tid, m := range rep.byTID {
		if _, ok := o.name[tid]; ok {
			continue
		}
		for _, row := range m {
			// Drivers call small kernel helpers (address getters) on
			// threads that run no kernel; with usestack their own
			// stack frames are real accesses the oracle does not model.
			if strings.Contains(row.rest, "segment=stack") {
				continue
			}
			s.strayTIDs[tid]++
			s.totalTraced++
			s.totalExtra++
			s.strayPages = append(s.strayPages, *row)
		}
	}
	sort.Slice(s.strayPages, func(i, j int) bool {
		a, b := s.strayPages[i], s.strayPages[j]
		return a.tid < b.tid || a.tid == b.tid && a.page < b.page
	})
	return s
}

// pageRuns formats sorted pages as runs: "0x7f..000 (t0.rd+0x0) .. +3 pages".
func pageRuns(o *vptOracle, pages []uint64, max int) []string {
	var out []string
	for i := 0; i < len(pages); {
		j := i + 1
		for j < len(pages) && pages[j] == pages[j-1]+1 {
			j++
		}
		if len(out) == max {
			out = append(out, fmt.Sprintf("... and %d more pages", len(pages)-i))
			break
		}
		if j-i == 1 {
			out = append(out, o.describe(pages[i]))
		} else {
			out = append(out, fmt.Sprintf("%s .. %d pages", o.describe(pages[i]), j-i))
		}
		i = j
	}
	return out
}

// regionSites lists, for the regions of some missed pages, the sites that
// did reach the trace in the same region (what touched the rest of it).
func regionSites(o *vptOracle, rep *vptReport, tid uint32, pages []uint64, max int) []string {
	regs := map[string]bool{}
	for _, p := range pages {
		if n, _, ok := o.where(p * 4096); ok {
			regs[n] = true
		}
	}
	seen := map[string]map[string]int{}
	for _, row := range rep.byTID[tid] {
		n, _, ok := o.where(row.page * 4096)
		if !ok || !regs[n] {
			continue
		}
		if seen[n] == nil {
			seen[n] = map[string]int{}
		}
		seen[n][row.rest]++
	}
	var out []string
	var names []string
	for n := range regs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if len(seen[n]) == 0 {
			out = append(out, fmt.Sprintf("%s: no page of it traced", n))
			continue
		}
		var rs []string
		for r, c := range seen[n] {
			rs = append(rs, fmt.Sprintf("%d pages [%s]", c, r))
		}
		sort.Strings(rs)
		if len(rs) > max {
			rs = append(rs[:max], "...")
		}
		out = append(out, fmt.Sprintf("%s, traced: %s", n, strings.Join(rs, "; ")))
	}
	return out
}

// byRegion counts pages per region: "t0.rd: 12, t1.wd: 3".
func byRegion(o *vptOracle, pages []uint64, of map[string]int) string {
	n := map[string]int{}
	for _, p := range pages {
		name, _, ok := o.where(p * 4096)
		if !ok {
			name = "(no region)"
		}
		n[name]++
	}
	var names []string
	for k := range n {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if n[names[i]] != n[names[j]] {
			return n[names[i]] > n[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for _, k := range names {
		if of != nil && of[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d of %d", k, n[k], of[k]))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// requiredByRegion counts a thread's required pages per region.
func requiredByRegion(o *vptOracle, thread string, usestack bool) map[string]int {
	m := map[string]int{}
	for p, k := range o.pages[thread] {
		if k&(okR|okW) != 0 && (k&okStack == 0 || usestack) {
			if name, _, ok := o.where(p * 4096); ok {
				m[name]++
			}
		}
	}
	return m
}

// failureText explains a score that misses the bar.
func failureText(o *vptOracle, rep *vptReport, s *vptScore, minRecall float64, usestack bool) string {
	var b strings.Builder
	for _, ts := range s.threads {
		if ts.recall < minRecall {
			fmt.Fprintf(&b, "thread %s (tid %d): recall %.2f%% (%d of %d required pages traced)\n", ts.thread, ts.tid, 100*ts.recall, ts.hit, ts.need)
			fmt.Fprintf(&b, "  missed, by region: %s\n", byRegion(o, ts.missed, requiredByRegion(o, ts.thread, usestack)))
			b.WriteString("  missed pages (first ones):\n")
			for _, l := range pageRuns(o, ts.missed, 12) {
				fmt.Fprintf(&b, "    %s\n", l)
			}
			b.WriteString("  what the trace has in those regions (pages [sites]):\n")
			for _, l := range regionSites(o, rep, ts.tid, ts.missed, 6) {
				fmt.Fprintf(&b, "    %s\n", l)
			}
		}
		if ts.extra > 0 {
			fmt.Fprintf(&b, "thread %s (tid %d): precision %.2f%%: %d traced pages the kernel did not touch\n", ts.thread, ts.tid, 100*ts.precision, ts.extra)
			fmt.Fprintf(&b, "  extra, by region: %s\n", byRegion(o, ts.extraPages, nil))
			byTID := rep.byTID[ts.tid]
			for i, p := range ts.extraPages {
				if i == 16 {
					fmt.Fprintf(&b, "    ... and %d more\n", len(ts.extraPages)-i)
					break
				}
				row := byTID[p]
				fmt.Fprintf(&b, "    %s reads=%d writes=%d [%s]\n", o.describe(p), row.reads, row.writes, row.rest)
			}
		}
		if ts.kindBad > 0 {
			fmt.Fprintf(&b, "thread %s (tid %d): %d pages with the wrong access kind:\n", ts.thread, ts.tid, ts.kindBad)
			for i, m := range ts.kindMsgs {
				if i == 12 {
					fmt.Fprintf(&b, "    ... and %d more\n", len(ts.kindMsgs)-i)
					break
				}
				fmt.Fprintf(&b, "    %s\n", m)
			}
		}
	}
	if len(s.strayPages) > 0 {
		fmt.Fprintf(&b, "%d traced pages of threads that ran no kernel (%v):\n", len(s.strayPages), s.strayTIDs)
		for i, row := range s.strayPages {
			if i == 12 {
				fmt.Fprintf(&b, "    ... and %d more\n", len(s.strayPages)-i)
				break
			}
			fmt.Fprintf(&b, "    tid %d %s reads=%d writes=%d [%s]\n", row.tid, o.describe(row.page), row.reads, row.writes, row.rest)
		}
	}
	for _, n := range o.notes {
		fmt.Fprintf(&b, "oracle note: %s\n", n)
	}
	return b.String()
}
