// Package vptrace implements the vptrace preset: per-thread virtual-page
// access tracing. It instruments the memory accesses of the blocks whose
// loop score reaches the threshold T, skips accesses that the page-size
// estimate H says fall on a page an earlier access of the same block
// already covers, and inserts for every remaining access a short sequence
// that computes its page and compares it with the page the same site last
// recorded in this thread (a TLS slot), or first with the slot of a
// dominating site through the same base register (partner.go); on a page
// change it looks the page up in the thread's recent-page cache inline
// (probe.go), and only a page the cache lacks calls the runtime
// (bin/libvptrace.so, or bin/libvptrace.a in static programs). In loops
// that leave the checks too few dead registers, registers the loop does
// not reference are saved once per run of the loop instead of at every
// access, one of them holding the slots' base (spill.go).
// vptrace/ABI.md is the contract with the runtime (vptrace/runtime), and
// vptrace/abi its Go encoding.
package vptrace

import (
	"bytes"
	"compress/flate"
	"debug/elf"
	"fmt"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/elfobj"
	"hijack/ibr"
	"hijack/loops"
	"hijack/preset"
	"hijack/preset/kit"
	"hijack/rules"
	"hijack/snippet"
	"hijack/vptrace/abi"
)

// Preset is the vptrace preset. Its sessions (one per object, objState)
// hold everything that is per object; one Preset rewrites many objects
// concurrently.
type Preset struct{}

// tlsModels are the values of the tls parameter: the models, then auto.
var tlsModels = []string{"local-exec", "initial-exec", "indirect", "auto"}

// Spec declares vptrace's parameters.
func (Preset) Spec() rules.PresetSpec {
	return rules.PresetSpec{
		Name: "vptrace",
		Doc:  "virtual-page access tracing: record which pages each thread touches",
		Params: []rules.ParamSpec{
			rules.FloatParam("threshold", 0, 0, 1,
				"T: instrument blocks whose loop score is >= T (0 instruments every block)"),
			rules.SizeParam("pagesize", 4096, 16, 1<<30, "sizeexp",
				"H: estimated page size; an access within H bytes of an already traced one in the same block may be skipped"),
			rules.BoolParam("usestack", false,
				"trace rsp/rbp-based (stack) accesses too"),
			rules.EnumParam("tls", "auto", tlsModels,
				"TLS access model of the per-site slots: local-exec links only into executables, initial-exec also into shared libraries loaded at start-up, indirect into any (dlopen'ed too), auto: local-exec where the object shows it is for an executable, initial-exec where hijack cc compiled it for one (C or C++ without -fPIC, -fpic or -shared), else indirect"),
			rules.BoolParam("exact", false,
				"skip no access as same-page: trace every memory access of the selected blocks"),
		},
	}
}

// Runtime names the tracing runtime the inserted code calls (ABI.md).
func (Preset) Runtime() preset.Runtime {
	return preset.Runtime{Shared: "libvptrace.so", Static: "libvptrace.a", Libs: []string{"-lpthread"}}
}

// objState is the session of one object: what the preset accumulates
// for it.
type objState struct {
	o      *ibr.Object
	id     uint64
	suffix string
	names  map[string]string // sym's, by what
	// tls is how inserted code reaches the object's per-thread slots
	// (ABI.md, "Per-thread last-page slots"): with initial-exec, a
	// dlopen'ed library has static TLS for about 150 sites (glibc's
	// surplus, less what other libraries took); indirect: the runtime
	// maps them (vpt_slots).
	tls      kit.TLSModel
	prog     *cfg.Program
	analysis *loops.Analysis
	live     map[*cfg.Graph]*cfg.Liveness
	sites    []*site
	nslots   int // the sites' last-page slots (addSite)
	strs     kit.StringTable
	x        *kit.Object
	secData  int // .vptrace
	secSlots int // .tbss slots
	secEpoch int // .data.vptrace: the epoch word (abi.FlagEpoch)
	secText  int // .text.vptrace: the constructor
	b        *kit.Builder
	// loopRegs holds, per block of the function being instrumented, the
	// registers saved around the loop it is in (spill.go): those free
	// there, and the one holding the slot base.
	loopRegs map[int]loopRegs
	// chain links the function's sites to the previous ones of their
	// blocks, and bases holds the register in which a site's code left
	// the slot base for the next (basechain.go).
	chain map[*site]baseLink
	bases map[*site]effect.Reg
	// arrays tracks, with tls indirect, the code of the function being
	// instrumented that tests the thread's slot array (mapped.go).
	arrays *arrayTests
	// loaded holds, per loop of the function being instrumented, the
	// registers whose values come from what the loop loads (scattered).
	loaded map[*loops.Loop]effect.RegSet
	// irregular holds, per loop of the function being instrumented,
	// the registers it does not step by constants (irregularRegs).
	irregular map[*loops.Loop]effect.RegSet
	// sweepRegs holds, per edge of the function being instrumented
	// where a sweep's code goes, the program's registers that code reads
	// (sweepEdgeRegs): no spill saves them on that edge.
	sweepRegs map[kit.Edge]effect.RegSet
}

// Begin settles what vptrace decides once per object, before any rule is
// applied: the TLS model of the per-site slots, which one descriptor
// registers for the whole object. params are those of every vptrace rule
// that selects functions of o. Rules that leave tls at auto take what an
// explicit one asks for; two rules that ask for different models are an
// error naming both (every other parameter may differ from rule to rule).
func (Preset) Begin(o *ibr.Object, params []rules.Params) (preset.Session, error) {
	model, err := kit.ObjectTLS(params, " (indirect links into executables and shared libraries alike)")
	if err != nil {
		return nil, fmt.Errorf("vptrace: %w", err)
	}
	return begin(o, model)
}

// Apply selects and instruments the sites of funcs with the parameters of
// their rule.
func (st *objState) Apply(funcs []*ibr.Func, params rules.Params, warn func(string)) error {
	o := st.o
	if tls := params.String("tls"); tls != "auto" && tls != st.tls.String() {
		// (Begin rules this out; a caller that skips it learns here.)
		return fmt.Errorf("vptrace: %s asks for tls: %s, but the object's TLS model is already %s", params.Origin(), tls, st.tls)
	}
	threshold := params.Float("threshold")
	pagesize := params.Size("pagesize")
	skipped := make(map[string]int)
	for _, fn := range funcs {
		g := st.prog.ByFunc[fn]
		sel := &selector{o: o, g: g, a: st.analysis, live: st.live[g], threshold: threshold, pagesize: pagesize,
			usestack: params.Bool("usestack"), exact: params.Bool("exact"), skipped: skipped}
		sel.run()
		for _, s := range sel.sites {
			s.exact = sel.exact
		}
		infos := make(map[*loops.Loop]*loopInfo)
		pa := newPartners(g, st.live[g])
		// Sweeps first: the other sites with slot code may have
		// registers saved around their loops for them (spill.go).
		sweeps := make([]*sweep, len(sel.sites))
		for k, s := range sel.sites {
			sweeps[k] = sel.findSweep(s, infos)
		}
		// ordinary: the site gets the default slot code (instrument)
		ordinary := func(k int) bool {
			s := sel.sites[k]
			return sweeps[k] == nil && s.vec == 0 && !s.repAfter && !s.rep
		}
		var cands []*site
		for k, s := range sel.sites {
			if ordinary(k) {
				cands = append(cands, s)
			}
		}
		st.arrays = nil
		if st.tls == kit.Indirect {
			st.arrays = newArrayTests(g)
		}
		st.sweepRegs = sweepEdgeRegs(sweeps)
		free, err := st.spillLoops(g, cands, stackSweepEdges(sweeps), stackSites(sel.sites))
		if err != nil {
			return fmt.Errorf("%s: %w", fn.Name, err)
		}
		st.loopRegs = free
		st.chain = st.baseChains(g, sel.sites, ordinary)
		st.bases = make(map[*site]effect.Reg)
		st.loaded = make(map[*loops.Loop]effect.RegSet)
		st.irregular = make(map[*loops.Loop]effect.RegSet)
		for k, s := range sel.sites {
			var err error
			switch sw := sweeps[k]; {
			case sw != nil:
				err = st.instrumentSweep(sw)
			case s.vec != 0:
				err = st.instrumentVec(s)
			case s.repAfter:
				err = st.instrumentRepAfter(s)
			default:
				if !sel.exact && !s.rep {
					s.byAddr = s.carry() && (st.steady(s, g) || st.dataTable(s, g))
					s.partner = pa.find(s)
				}
				err = st.instrument(s, sel.exact)
				if err == nil && !sel.exact && !s.rep {
					pa.add(s, len(st.sites)-1)
				}
			}
			if err != nil {
				return fmt.Errorf("%s: %w", fn.Section.Where(uint64(fn.Section.Insts[s.inst].Off)), err)
			}
		}
	}
	if len(skipped) > 0 {
		var parts []string
		for what, n := range skipped {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
		sort.Strings(parts)
		warn("vptrace: accesses not traced: " + strings.Join(parts, ", "))
	}
	return nil
}

// begin sets up the session of one object: analyses, TLS model (tls:
// "local-exec", "initial-exec", "indirect", or "" to choose from the
// object), and the symbols the inserted code refers to (added before any
// code refers to symbols by index, since local symbols renumber).
func begin(o *ibr.Object, tls string) (*objState, error) {
	f := o.File
	x, err := kit.NewObject(f)
	if err != nil {
		return nil, fmt.Errorf("vptrace: %w", err)
	}
	st := &objState{o: o, id: kit.ObjectID(o), x: x, b: kit.NewBuilder()}
	st.suffix = fmt.Sprintf("%016x", st.id)
	switch {
	case tls != "":
		if st.tls, err = kit.ParseTLSModel(tls); err != nil {
			return nil, fmt.Errorf("vptrace: %w", err)
		}
	case kit.MayBeShared(f) && o.Executable:
		// Compiled for an executable, which the object alone cannot
		// show (its relocations would be the same -fPIC): initial-exec,
		// which a shared library loaded at start-up could use too
		// (not local-exec, which would fail to link into one).
		st.tls = kit.InitialExec
	case kit.MayBeShared(f):
		// What may go into a shared library may be dlopen'ed, where
		// static TLS for its slots is scarce.
		st.tls = kit.Indirect
	default:
		st.tls = kit.LocalExec
	}
	an := kit.Analyze(o)
	st.prog, st.live = an.Prog, an.Live
	st.analysis = loops.Analyze(st.prog)
	st.strs.Add("")

	st.secData = x.AddSection(".vptrace", kit.ReadOnly, 8)
	st.secSlots = x.AddSection(".tbss.vptrace", kit.TLS, 8)
	st.secText = x.AddSection(".text.vptrace", kit.Text, 16)
	st.secEpoch = x.AddSection(".data.vptrace", kit.Writable, 8)
	x.SetData(st.secEpoch, make([]byte, 8))
	locals := []struct {
		what string
		typ  elf.SymType
		sec  int
	}{
		{"desc", elf.STT_OBJECT, st.secData},
		{"sites", elf.STT_OBJECT, st.secData},
		{"slots", elf.STT_TLS, st.secSlots},
		{"epoch", elf.STT_OBJECT, st.secEpoch},
		{"ctor", elf.STT_FUNC, st.secText},
		{"dtor", elf.STT_FUNC, st.secText},
		{"slotsetup", elf.STT_FUNC, st.secText},
	}
	if st.tls != kit.Indirect {
		locals = locals[:len(locals)-1]
	}
	for _, l := range locals {
		if err := x.AddLocal(st.sym(l.what), l.typ, l.sec); err != nil {
			return nil, fmt.Errorf("vptrace: %w", err)
		}
	}
	// The runtime's per-thread state, which the inline cache probe reads
	// (probe.go): an undefined TLS symbol. (A relocation to a name the
	// object lacks would add it untyped, which the linker refuses to
	// bind to a TLS definition.)
	if x.File.FindSymbol(probeThreadSym) == 0 {
		x.File.AddSymbol(elfobj.Symbol{Name: probeThreadSym, Info: byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_TLS)})
	}
	return st, nil
}

// sym returns the name of the object's symbol what: __vpt_<what>_<id>
// (made once per name: the sites ask for theirs at every site).
func (st *objState) sym(what string) string {
	if name, ok := st.names[what]; ok {
		return name
	}
	if st.names == nil {
		st.names = make(map[string]string)
	}
	name := "__vpt_" + what + "_" + st.suffix
	st.names[what] = name
	return name
}

// slots returns the object's per-site slots: the array, or with tls:
// indirect the word holding this thread's array, and the function that
// has the runtime map one.
func (st *objState) slots() kit.Slots {
	return kit.Slots{Model: st.tls, Sym: st.sym("slots"), Setup: st.sym("slotsetup")}
}

// Finish writes the object's site table, TLS slots and registration
// constructor, after every rule ran.
func (st *objState) Finish() error {
	n := len(st.sites)
	name := st.strs.Add(st.o.Name)
	desc := abi.Object{
		Magic:   abi.Magic,
		Version: abi.Version,
		NSites:  uint32(n),
		// The sites and strings follow in this section: plain offsets.
		SitesRel: abi.ObjectSize - abi.ObjectSitesRelOff,
		StrsRel:  int32(abi.ObjectSize + abi.SiteSize*n - abi.ObjectStrsRelOff),
		Name:     name,
		ID:       st.id,
	}
	switch st.tls {
	case kit.InitialExec:
		desc.Flags = abi.FlagIE
	case kit.Indirect:
		desc.Flags = abi.FlagIE | abi.FlagIndirect
	}
	// Every object has its epoch word (a relocation at EpochRel, a field
	// of descriptors with FlagSlots) and its sites' kinds after its
	// tables, for the runtime's copy at every start: a byte a site, not
	// the whole table (FlagKinds).
	desc.Flags |= abi.FlagSlots | abi.FlagEpoch | abi.FlagKinds
	desc.NSlots = uint32(st.nslots)
	recs := make([]abi.Site, n)
	for k, s := range st.sites {
		sec := s.fn.Section
		r := abi.Site{
			Func:    st.strs.Add(s.fn.Name),
			InsnOff: sec.Insts[s.inst].Off - sec.Insts[s.fn.Start].Off,
			Sym:     abi.NoSym,
			SymOff:  int32(s.symOff),
			Kind:    s.kind,
			Seg:     s.seg,
			Size:    uint16(s.size),
			Covers:  s.covers,
			Block:   uint32(s.block),
			Score:   uint32(s.score * 1e6),
		}
		if s.sym != "" {
			r.Sym = st.strs.Add(s.sym)
		}
		if s.exact {
			r.Kind |= abi.KindExact
		}
		if s.rep {
			if b := s.acc.Mem.Base; b == x86asm.RSI || b == x86asm.ESI {
				r.Kind |= abi.KindRepSrc
			} else {
				r.Kind |= abi.KindRepDest
			}
		}
		if s.vec != 0 {
			r.Kind |= abi.KindVec
			r.Block = uint32(s.vec)
		}
		if s.kind&abi.KindRange != 0 {
			// A sweep's range covers its merged accesses too. Its block
			// field is its step when it exceeds a page (0: the range is
			// contiguous); with a register step, abi.DynStep.
			r.Size = uint16(s.hi - s.lo)
			r.Block = uint32(int32(s.stride))
			if d := s.dynStep; d != nil {
				r.Kind |= abi.KindDynStep
				r.Block = abi.DynStep(uint8(d.reg), d.mult)
			}
		}
		recs[k] = r
	}
	// The string table is complete only now that every site named its
	// function and variable.
	desc.NStrs = uint32(st.strs.Len())
	body := make([]byte, 0, abi.SiteSize*n+st.strs.Len())
	for k := range recs {
		body = recs[k].Append(body)
	}
	body = append(body, st.strs.Bytes()...)
	packed, err := pack(body)
	if err != nil {
		return fmt.Errorf("vptrace: site table: %w", err)
	}
	if packed != nil {
		desc.Flags |= abi.FlagPacked
		desc.PackedRel = int32(abi.ObjectSize + len(body) - abi.ObjectPackedRelOff)
		desc.PackedLen = uint32(len(packed))
	}
	data := desc.Append(make([]byte, 0, abi.ObjectSize+len(body)+len(packed)+n))
	data = append(data, body...)
	data = append(data, packed...)
	for k := range recs {
		data = append(data, byte(recs[k].Kind))
	}
	x := st.x
	x.SetData(st.secData, data)
	if err := x.RelocateData(st.secData, []kit.DataReloc{{Off: abi.ObjectEpochRelOff, Type: elf.R_X86_64_PC32, Sym: st.sym("epoch")}}); err != nil {
		return fmt.Errorf("vptrace: %w", err)
	}
	slots := st.slots().Size(st.nslots)
	x.SetSize(st.secSlots, slots)
	for _, sym := range []struct {
		what        string
		value, size uint64
	}{
		{"desc", 0, abi.ObjectSize},
		{"sites", abi.ObjectSize, uint64(abi.SiteSize * n)},
		{"slots", 0, slots},
		{"epoch", 0, 8},
	} {
		if err := x.SetSymbol(st.sym(sym.what), sym.value, sym.size); err != nil {
			return fmt.Errorf("vptrace: %w", err)
		}
	}
	return st.addConstructor()
}

// pack returns the site records and strings (body) as a raw DEFLATE stream
// for the runtime's OBJECT chunk (ABI.md "Per-object data"), or nil where
// the runtime would not compress them either (small, or not a sixteenth
// smaller). The runtime then writes the stream after a stored block with
// the chunk's 64-byte header: no compression at every process start (a
// zstd binary's 38 objects: 772 KB of tables, 2.7 ms a process). The
// stream starts on a byte boundary and refers to nothing before it, so it
// may follow that block.
func pack(body []byte) ([]byte, error) {
	const minBody = 256 - 64 // the runtime's DF_MIN, less the header
	if len(body) < minBody {
		return nil, nil
	}
	var buf bytes.Buffer
	var w *flate.Writer
	select {
	case w = <-packers:
		w.Reset(&buf)
	default:
		var err error
		if w, err = flate.NewWriter(&buf, packLevel); err != nil {
			return nil, err
		}
	}
	defer func() {
		select {
		case packers <- w:
		default: // (as many kept as rewrite at once, mostly)
		}
	}()
	if _, err := w.Write(body); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if buf.Len() >= len(body)-len(body)/16 {
		return nil, nil
	}
	return buf.Bytes(), nil
}

// packLevel is the compress/flate level of pack: the fastest, whose tables
// are still smaller than the runtime's (a zstd process's trace: 187 KB
// instead of 216); DefaultCompression (155 KB) cost 10% more rewriting
// time over libsqlite3.
const packLevel = flate.BestSpeed

// packers keeps pack's compressors (about half a megabyte each to make: a
// new one per object was 15% of the bytes a vptrace rewrite allocates). A
// cache only: any writer, reset, compresses the same. Not a sync.Pool,
// which every collection empties: an archive's rewrite collects every few
// members, and made a new writer for most of them (46 MB a pass over
// libsqlite3.a's 102 members).
var packers = make(chan *flate.Writer, runtime.GOMAXPROCS(0))

// addConstructor emits the object's functions into its code section
// .text.vptrace, and the array entries that run two of them:
//
//	__vpt_ctor_<id>:  lea desc(%rip),%rdi; jmp *vpt_register@GOTPCREL(%rip)    (.init_array)
//	__vpt_dtor_<id>:  lea desc(%rip),%rdi; jmp *vpt_unregister@GOTPCREL(%rip)  (.fini_array.00000)
//	__vpt_slotsetup_<id>  (tls: indirect: the sites call it, ABI.md)
//
// The runtime is reached through the GOT, never a PLT (kit.Builder.CallGOT
// says why). The destructor's priority 0 runs it after every other
// destructor of the module: the object's code cannot run after its
// registration is gone, then dlclose unmaps it.
func (st *objState) addConstructor() error {
	b := st.b
	descRef := kit.Named(st.sym("desc"))
	desc := b.RIP(descRef, 0)
	b.Label("ctor")
	b.LeaQ(desc, snippet.RDI)
	b.JmpGOT("vpt_register")
	b.Label("dtor")
	b.LeaQ(desc, snippet.RDI)
	b.JmpGOT("vpt_unregister")
	if st.tls == kit.Indirect {
		// vpt_slots(tpoff of the word) with nopl desc(%rip) after the
		// call, like a site's call; every register and the flags kept.
		b.Label("slotsetup")
		b.LeaQ(snippet.Mem(snippet.RSP, -8), snippet.RSP)
		b.PushQ(snippet.RAX)
		b.MovQ(snippet.GOTTPOFF(st.sym("slots")), snippet.RAX)
		b.MovQ(snippet.RAX, snippet.Mem(snippet.RSP, 8))
		b.PopQ(snippet.RAX)
		b.CallGOT("vpt_slots")
		st.recordNop(descRef, 0)
		b.LeaQ(snippet.Mem(snippet.RSP, 8), snippet.RSP)
		b.Ret()
	}
	b.Label("end")
	code, err := b.Assemble()
	if err != nil {
		return fmt.Errorf("vptrace: constructor: %w", err)
	}
	x := st.x
	if err := x.SetCode(st.secText, code); err != nil {
		return fmt.Errorf("vptrace: %w", err)
	}
	l := b.Labels()
	funcs := []struct{ what, end string }{{"ctor", "dtor"}, {"dtor", "end"}}
	if st.tls == kit.Indirect {
		funcs = []struct{ what, end string }{{"ctor", "dtor"}, {"dtor", "slotsetup"}, {"slotsetup", "end"}}
	}
	for _, fn := range funcs {
		if err := x.SetSymbol(st.sym(fn.what), uint64(l[fn.what]), uint64(l[fn.end]-l[fn.what])); err != nil {
			return fmt.Errorf("vptrace: %w", err)
		}
	}
	if err := x.Constructor(st.sym("ctor"), kit.NoPriority); err != nil {
		return fmt.Errorf("vptrace: %w", err)
	}
	if err := x.Destructor(st.sym("dtor"), 0); err != nil {
		return fmt.Errorf("vptrace: %w", err)
	}
	return nil
}
