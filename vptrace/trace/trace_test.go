package trace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sample builds a small trace with every chunk type.
func sample(t testing.TB) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Begin(&Header{PID: 42, PPID: 1, ClockRes: 1e6, StartUnix: 1700000000e9, StartMono: 5e9,
		BufEvents: 2725, IntervalMS: 100, Program: "./app", Exe: "/tmp/app",
		Cmdline: []string{"./app", "-x"}, Runtime: "test"})
	strs := []byte("\x00a.o\x00main\x00fill\x00buf\x00")
	w.Object(&Object{Desc: 0x5000, SitesAddr: 0x5030, StrsAddr: 0x5090, Version: 1, ID: 7, NameOff: 1,
		Sites: []SiteRec{
			{Func: 5, InsnOff: 0x10, Sym: NoSym, Kind: KindRead, Seg: SegUnknown, Size: 8, Covers: 1},
			{Func: 10, InsnOff: 0x24, Sym: 15, SymOff: 16, Kind: KindWrite, Seg: SegGlobal, Size: 4, Covers: 2},
			{Func: 10, InsnOff: 0x30, Sym: NoSym, Kind: KindRMW, Seg: SegStack, Size: 4},
		}, Strs: strs})
	w.ThreadStart(&ThreadStart{Serial: 1, TID: 42, Time: 10})
	w.Agg(&Agg{Serial: 1, TID: 42, From: 10, To: 100, Pages: []PageAgg{
		{Page: 0x7f0002, Events: 3, Reads: 2, Writes: 1, First: 20, Last: 90,
			Sites: []SiteCount{{0x5050, 1}, {0x5030, 2}}},
		{Page: 0x7f0001, Events: 1, Reads: 1, First: 15, Last: 15, Sites: []SiteCount{{0x5030, 1}}},
	}})
	w.Note(&Note{Kind: NoteText, TID: 42, Time: 50, Text: "phase 2"})
	w.Raw(&Raw{Serial: 2, TID: 43, Time: 120, Events: []Event{
		{Page1: 0x7f0002, Site: 0x5070, Time: 110}, // page 0x7f0001, rmw
		{Page1: 0x7f0003, Site: 0x5050, Time: 111}, // page 0x7f0002, write
		{Page1: 0x7f0003, Site: 0, Time: 0},        // empty slot
		{Page1: 0x10, Site: 0x9999, Time: 112},     // unknown site
	}})
	w.ThreadExit(&ThreadExit{Serial: 2, TID: 43, Time: 130, Events: 3, Drops: 1, Name: "worker"})
	w.Agg(&Agg{Serial: 1, TID: 42, From: 100, To: 200, Drops: 2, Pages: []PageAgg{
		{Page: 0x7f0002, Events: 1, Writes: 1, First: 150, Last: 150, Sites: []SiteCount{{0x5050, 1}}},
	}})
	w.End(&End{Time: 300, Threads: 2, Events: 8, Drops: 3, Flags: EndClean})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(t testing.TB, data []byte) *Trace {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestRoundTrip(t *testing.T) {
	data := sample(t)
	tr := readAll(t, data)
	if tr.Header.PID != 42 || tr.Header.Program != "./app" || !reflect.DeepEqual(tr.Header.Cmdline, []string{"./app", "-x"}) || tr.Header.PageSize != PageSize {
		t.Errorf("header %+v", tr.Header)
	}
	if tr.End == nil || tr.End.Flags != EndClean || tr.Truncated || tr.Damaged != 0 || len(tr.Errors) != 0 {
		t.Errorf("end %+v truncated %v damaged %d errors %v", tr.End, tr.Truncated, tr.Damaged, tr.Errors)
	}
	if len(tr.Threads) != 2 {
		t.Fatalf("%d threads", len(tr.Threads))
	}
	t42 := tr.Thread(42)
	p := t42.Pages[0x7f0002]
	if p == nil || p.Events != 4 || p.Reads != 2 || p.Writes != 2 || p.First != 20 || p.Last != 150 {
		t.Errorf("t42 page: %+v", p)
	}
	if !reflect.DeepEqual(p.Sites, []SiteCount{{0x5030, 2}, {0x5050, 2}}) {
		t.Errorf("sites %v", p.Sites)
	}
	if t42.Drops != 2 || t42.Events != 5 || t42.WorkingSet() != 2*PageSize {
		t.Errorf("t42 %+v", t42)
	}
	t43 := tr.Thread(43)
	if t43.Name != "worker" || len(t43.Instances) != 1 || !t43.Instances[0].Exited || t43.Drops != 1 {
		t.Errorf("t43 %+v %+v", t43, t43.Instances[0])
	}
	// raw: kinds resolved through the object table
	if p := t43.Pages[0x7f0001]; p == nil || p.Reads != 1 || p.Writes != 1 || p.Events != 1 {
		t.Errorf("raw rmw page %+v", p)
	}
	if p := t43.Pages[0x7f0002]; p == nil || p.Reads != 0 || p.Writes != 1 {
		t.Errorf("raw write page %+v", p)
	}
	if p := t43.Pages[0xf]; p == nil || p.Events != 1 || p.Reads+p.Writes != 0 {
		t.Errorf("unknown-site page %+v", p)
	}
	if len(t43.Pages) != 3 {
		t.Errorf("t43 pages %d", len(t43.Pages))
	}
	// sites
	s := tr.Site(0x5050)
	if !s.Known() || s.Function != "fill" || s.Symbol != "buf" || s.Variable() != "buf+16" || s.Where() != "fill+0x24" || s.Kind != KindWrite || s.Seg != SegGlobal {
		t.Errorf("site %+v %s %s", s, s.Variable(), s.Where())
	}
	if s := tr.Site(0x5031); s.Known() {
		t.Errorf("misaligned site resolved")
	}
	if s := tr.Site(0x5090); s.Known() {
		t.Errorf("site past the table resolved")
	}
	if s := tr.Site(0x9999); s.Known() || s.Where() != "?0x9999" {
		t.Errorf("unknown site %+v", s)
	}
	if tr.Objects[0].Name() != "a.o" {
		t.Errorf("object name %q", tr.Objects[0].Name())
	}
	if len(tr.Notes) != 1 || tr.Notes[0].Text != "phase 2" {
		t.Errorf("notes %+v", tr.Notes)
	}
}

// TestTruncated: every prefix of a file reads without error and returns the
// chunks before the cut.
func TestTruncated(t *testing.T) {
	data := sample(t)
	// chunk boundaries
	var ends []int
	r, _ := NewReader(bytes.NewReader(data))
	ends = append(ends, int(r.off))
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		ends = append(ends, int(c.Offset)+chunkHeaderSize+len(c.Payload))
	}
	for cut := 0; cut <= len(data); cut++ {
		r, err := NewReader(bytes.NewReader(data[:cut]))
		if cut < ends[0] {
			if !IsNotTrace(err) {
				t.Fatalf("cut %d: %v, want not a trace", cut, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			n++
		}
		whole := 0
		for _, e := range ends[1:] {
			if e <= cut {
				whole++
			}
		}
		atBoundary := false
		for _, e := range ends {
			atBoundary = atBoundary || e == cut
		}
		if n != whole || r.Truncated == atBoundary {
			t.Fatalf("cut %d: %d chunks (want %d), truncated %v", cut, n, whole, r.Truncated)
		}
	}
}

// TestDamaged: a damaged chunk in the middle is skipped, the rest is read.
func TestDamaged(t *testing.T) {
	data := sample(t)
	full := readAll(t, data)
	r, _ := NewReader(bytes.NewReader(data))
	var chunks []*Chunk
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		cp := *c
		chunks = append(chunks, &cp)
	}
	// damage the note chunk's payload
	var note *Chunk
	for _, c := range chunks {
		if c.Type == ChunkNote {
			note = c
		}
	}
	bad := bytes.Clone(data)
	bad[note.Offset+chunkHeaderSize+2] ^= 0xff
	tr := readAll(t, bad)
	if tr.Damaged != 1 || tr.Skipped == 0 || tr.Truncated || len(tr.Notes) != 0 {
		t.Errorf("damaged %d skipped %d truncated %v notes %d", tr.Damaged, tr.Skipped, tr.Truncated, len(tr.Notes))
	}
	if tr.End == nil || len(tr.Threads) != len(full.Threads) || tr.Thread(43) == nil {
		t.Errorf("chunks after the damage lost")
	}
	// a damaged length field: the reader must find the next chunk
	bad = bytes.Clone(data)
	bad[note.Offset+8] = 0xff
	bad[note.Offset+9] = 0xff
	tr = readAll(t, bad)
	if tr.Damaged != 1 || tr.End == nil || tr.Truncated {
		t.Errorf("length damage: damaged %d end %v truncated %v", tr.Damaged, tr.End, tr.Truncated)
	}
	// garbage appended
	tr = readAll(t, append(bytes.Clone(data), "garbage that is long enough to be a chunk header"...))
	if !tr.Truncated || tr.End == nil {
		t.Errorf("garbage tail: truncated %v", tr.Truncated)
	}
}

func TestNotTrace(t *testing.T) {
	for _, in := range []string{"", "VPTRACE", "hello world, not a trace", "VPTRACE\nVPTC"} {
		if _, err := NewReader(bytes.NewReader([]byte(in))); !IsNotTrace(err) {
			t.Errorf("%q: %v", in, err)
		}
	}
	// a newer major version
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Begin(&Header{Major: 2})
	w.Flush()
	if _, err := NewReader(&buf); !errors.Is(err, ErrVersion) {
		t.Errorf("major 2: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.vpt")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// TestAggSplit: large aggregates are split into several chunks.
func TestAggSplit(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Begin(&Header{PID: 1})
	a := &Agg{Serial: 1, TID: 9}
	for i := 0; i < MaxAggPages+10; i++ {
		a.Pages = append(a.Pages, PageAgg{Page: uint64(3*i + 1), Events: 1, Reads: 1, Sites: []SiteCount{{8, 1}}})
	}
	w.Agg(a)
	w.Flush()
	tr := readAll(t, buf.Bytes())
	if tr.Chunks[ChunkAgg] != 2 || len(tr.Thread(9).Pages) != MaxAggPages+10 {
		t.Errorf("agg chunks %d, pages %d", tr.Chunks[ChunkAgg], len(tr.Thread(9).Pages))
	}
}

// TestUnknownChunk: chunk types from newer minor versions are skipped.
func TestUnknownChunk(t *testing.T) {
	data := sample(t)
	data = AppendChunk(data, 99, []byte("future"))
	data = AppendChunk(data, ChunkNote, (&Note{Kind: NoteText, Text: "after"}).AppendPayload(nil))
	tr := readAll(t, data)
	if len(tr.Notes) != 2 || tr.Chunks[99] != 1 || len(tr.Errors) != 0 {
		t.Errorf("notes %d, unknown %d, errors %v", len(tr.Notes), tr.Chunks[99], tr.Errors)
	}
}

func FuzzReader(f *testing.F) {
	data := sample(f)
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte(FileMagic))
	f.Add(blockSample(f))
	f.Add(AppendChunk([]byte(FileMagic), ChunkHeader, (&Header{Major: 1}).AppendPayload(nil)))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := NewReader(bytes.NewReader(in))
		if err != nil {
			return
		}
		tr, err := r.ReadAll()
		if err != nil {
			return
		}
		for _, st := range tr.BlockTotals() {
			b := tr.Block(st.ID)
			_ = b.Where()
		}
		for _, th := range tr.Threads {
			for _, p := range th.Pages {
				for _, s := range p.Sites {
					site := tr.Site(s.Site)
					_ = site.Where() + site.Variable()
				}
			}
		}
	})
}

// FuzzDecode: every payload decoder on arbitrary bytes.
func FuzzDecode(f *testing.F) {
	f.Add(uint16(ChunkAgg), (&Agg{Pages: []PageAgg{{Page: 1, Sites: []SiteCount{{1, 1}}}}}).AppendPayload(nil))
	f.Add(uint16(ChunkObject), (&Object{Sites: []SiteRec{{}}, Strs: []byte("\x00x\x00")}).AppendPayload(nil))
	f.Add(uint16(ChunkRaw), (&Raw{Events: []Event{{Page1: 1, Site: 2, Time: 3}}}).AppendPayload(nil))
	f.Add(uint16(ChunkStatus), (&Status{Flags: StatusWriteError, Errno: 28}).AppendPayload(nil))
	f.Add(uint16(ChunkAllocs), (&Allocs{Events: []AllocEvent{{Seq: 1, Kind: AllocMmap, Path: "/f"}}}).AppendPayload(nil))
	f.Add(uint16(ChunkAllocs), (&Allocs{Events: []AllocEvent{{Seq: 1, Kind: AllocMmap, Path: "/f"}, {Seq: 5, Kind: AllocRealloc, Old: 9}}}).AppendCompactPayload(nil))
	f.Add(uint16(ChunkMaps), (&Maps{Maps: []Mapping{{Start: 1, End: 2, Path: "[stack]"}}}).AppendPayload(nil))
	f.Add(uint16(ChunkThread), (&ThreadStart{Stack: Range{1, 2}, TLS: []Range{{3, 4}}}).AppendPayload(nil))
	f.Fuzz(func(t *testing.T, typ uint16, p []byte) {
		v, err := Decode(ChunkType(typ), p)
		if o, ok := v.(*Object); ok && err == nil {
			_ = o.Name()
			for _, s := range o.Sites {
				_ = o.Str(s.Func) + o.Str(s.Sym)
			}
		}
	})
}

func BenchmarkWriterAgg(b *testing.B) {
	a := &Agg{Serial: 1, TID: 9}
	for i := 0; i < 10000; i++ {
		a.Pages = append(a.Pages, PageAgg{Page: uint64(0x7f0000000 + i), Events: 3, Reads: 2, Writes: 1,
			First: uint64(i) * 1000, Last: uint64(i)*1000 + 500, Sites: []SiteCount{{0x55550000 + 32, 2}, {0x55550000 + 64, 1}}})
	}
	w := NewWriter(io.Discard)
	b.ResetTimer()
	var bytes int
	for i := 0; i < b.N; i++ {
		w.Agg(a)
		bytes += w.Buffered()
		w.Flush()
	}
	b.SetBytes(int64(bytes / b.N))
	b.ReportMetric(float64(b.N*len(a.Pages))/b.Elapsed().Seconds()/1e6, "Mpages/s")
}

func BenchmarkLoad(b *testing.B) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Begin(&Header{PID: 1})
	for k := 0; k < 10; k++ {
		a := &Agg{Serial: uint64(k), TID: uint32(k)}
		for i := 0; i < 10000; i++ {
			a.Pages = append(a.Pages, PageAgg{Page: uint64(0x7f0000000 + i), Events: 3, Reads: 2, Writes: 1,
				Sites: []SiteCount{{0x55550000 + 32, 2}, {0x55550000 + 64, 1}}})
		}
		w.Agg(a)
	}
	w.Flush()
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		readAll(b, data)
	}
	b.ReportMetric(float64(b.N*100000)/b.Elapsed().Seconds()/1e6, "Mpages/s")
}

// TestMoreThanOneProcess: a file holding the chunks of two processes (two
// files concatenated; or, from runtimes before 1.1, a process that
// truncated a file another one kept appending to) is refused, not merged
// into the same threads.
func TestMoreThanOneProcess(t *testing.T) {
	second := func(pid uint32, withHeader bool) []byte {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if withHeader {
			w.Begin(&Header{PID: pid})
		}
		w.ThreadStart(&ThreadStart{Serial: 1, TID: pid})
		w.Agg(&Agg{Serial: 1, TID: pid, Pages: []PageAgg{{Page: 9, Events: 1}}})
		w.Flush()
		return buf.Bytes()
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"concatenated", append(sample(t), second(77, true)...), "a second header at offset"},
		{"interleaved", append(sample(t), second(77, false)...), "thread serial 1 is TID 42 and TID 77"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(c.data))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := r.ReadAll()
			if !errors.Is(err, ErrMultiProcess) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (trace %v), want ErrMultiProcess saying %q", err, tr != nil, c.want)
			}
		})
	}
}

// TestExecEnd: an image that exec'd ends its file with an EXEC note and an
// END flagged EndExec; a NOTE EXEC_FAILED after them voids that end
// (tracing went on in the same file).
func TestExecEnd(t *testing.T) {
	exec := func(failed, exitAfter bool) *Trace {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		w.Begin(&Header{PID: 5})
		w.Note(&Note{Kind: NoteExec, Time: 10, Text: "/bin/next"})
		w.End(&End{Time: 10, Flags: EndExec})
		if failed {
			w.Note(&Note{Kind: NoteExecFailed, Time: 11, Value: 2, Text: "exec failed"})
		}
		if exitAfter {
			w.End(&End{Time: 20, Flags: EndClean})
		}
		w.Flush()
		return readAll(t, buf.Bytes())
	}
	if tr := exec(false, false); tr.End == nil || tr.End.Flags&EndExec == 0 || tr.Exec != "/bin/next" {
		t.Errorf("exec: end %+v, exec %q", tr.End, tr.Exec)
	}
	if tr := exec(true, false); tr.End != nil || tr.Exec != "" {
		t.Errorf("failed exec, then killed: end %+v, exec %q; want no end", tr.End, tr.Exec)
	}
	if tr := exec(true, true); tr.End == nil || tr.End.Flags != EndClean || tr.Exec != "" {
		t.Errorf("failed exec, then exit: end %+v, exec %q", tr.End, tr.Exec)
	}
}

// TestWriteError: the runtime's STATUS chunk (rewritten in place after a
// failed write) and the END flag both say the file lacks chunks.
func TestWriteError(t *testing.T) {
	st := func(s *Status) []byte {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		w.Begin(&Header{PID: 5})
		w.Status(s)
		w.Flush()
		return buf.Bytes()
	}
	if tr := readAll(t, st(&Status{})); tr.WriteError || tr.WriteErrno != 0 {
		t.Errorf("clean status: write error %v %d", tr.WriteError, tr.WriteErrno)
	}
	if tr := readAll(t, st(&Status{Flags: StatusWriteError, Errno: 28, Time: 7})); !tr.WriteError || tr.WriteErrno != 28 {
		t.Errorf("status: write error %v %d", tr.WriteError, tr.WriteErrno)
	}
	data := AppendChunk(st(&Status{}), ChunkEnd, (&End{Flags: EndClean | EndWriteError, Errno: 5}).AppendPayload(nil))
	if tr := readAll(t, data); !tr.WriteError || tr.WriteErrno != 5 {
		t.Errorf("end flag: write error %v %d", tr.WriteError, tr.WriteErrno)
	}
}
