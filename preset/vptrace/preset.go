// Package vptrace implements the vptrace preset: per-thread virtual-page
// access tracing. It instruments the memory accesses of the blocks whose
// loop score reaches the threshold T, skips accesses that the page-size
// estimate H says fall on a page an earlier access of the same block
// already covers, and inserts for every remaining access a short sequence
// that computes its page and compares it with the page the same site last
// recorded in this thread (a TLS slot): only a page change calls the
// runtime (bin/libvptrace.so, or bin/libvptrace.a in static programs).
// vptrace/ABI.md is the contract with the runtime (vptrace/runtime), and
// vptrace/abi its Go encoding.
package vptrace

import (
	"debug/elf"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/twitchyliquid64/golang-asm/obj"
	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/elfobj"
	"hijack/ibr"
	"hijack/loops"
	"hijack/preset"
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
				"TLS access model of the per-site slots: local-exec links only into executables, initial-exec also into shared libraries loaded at start-up, indirect into any (dlopen'ed too), auto: local-exec where the object shows it is for an executable, else indirect"),
			rules.BoolParam("exact", false,
				"skip no access as same-page: trace every memory access of the selected blocks"),
		},
	}
}

// Runtime names the tracing runtime the inserted code calls (ABI.md).
func (Preset) Runtime() preset.Runtime {
	return preset.Runtime{Shared: "libvptrace.so", Static: "libvptrace.a", Libs: []string{"-lpthread"}}
}

// tlsModel is how inserted code reaches the object's per-thread slots
// (ABI.md, "Per-thread last-page slots").
type tlsModel int

const (
	// localExec: the slots in the executable's static TLS block, at an
	// offset the linker fixes (executables only).
	localExec tlsModel = iota
	// initialExec: the slots in the static TLS block through a GOT entry
	// the loader fills: executables, and libraries loaded at start-up. A
	// dlopen'ed library gets static TLS only from glibc's small surplus
	// (1664 bytes by default: about 150 sites, less what other libraries
	// took).
	initialExec
	// indirect: one initial-exec TLS word (8 bytes, whatever the number
	// of sites) holds the address of this thread's slot array, which the
	// runtime maps on the thread's first use (vpt_slots): any executable
	// or library, dlopen'ed ones too.
	indirect
)

func (m tlsModel) String() string {
	return [...]string{"local-exec", "initial-exec", "indirect"}[m]
}

// objState is the session of one object: what the preset accumulates
// for it.
type objState struct {
	o        *ibr.Object
	id       uint64
	suffix   string
	tls      tlsModel
	prog     *cfg.Program
	analysis *loops.Analysis
	live     map[*cfg.Graph]*cfg.Liveness
	sites    []*site
	strs     strtab
	secData  int // .vptrace
	secSlots int // .tbss slots
	secText  int // .text.vptrace: the constructor
	b        *snippet.Builder
}

// Begin settles what vptrace decides once per object, before any rule is
// applied: the TLS model of the per-site slots, which one descriptor
// registers for the whole object. params are those of every vptrace rule
// that selects functions of o. Rules that leave tls at auto take what an
// explicit one asks for; two rules that ask for different models are an
// error naming both (every other parameter may differ from rule to rule).
func (Preset) Begin(o *ibr.Object, params []rules.Params) (preset.Session, error) {
	model, from := "", ""
	for _, ps := range params {
		m := ps.String("tls")
		if m == "auto" {
			continue
		}
		if model != "" && m != model {
			return nil, fmt.Errorf("vptrace: %s asks for tls: %s and %s for tls: %s, but one object has one TLS model: give both rules the same tls (indirect links into executables and shared libraries alike)",
				from, model, ps.Origin(), m)
		}
		model, from = m, ps.Origin()
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
		for _, s := range sel.sites {
			var err error
			switch sw := sel.findSweep(s, infos); {
			case sw != nil:
				err = st.instrumentSweep(sw)
			case s.vec != 0:
				err = st.instrumentVec(s)
			case s.repAfter:
				err = st.instrumentRepAfter(s)
			default:
				err = st.instrument(s, sel.exact)
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
	if f.SymtabNdx == 0 {
		return nil, fmt.Errorf("vptrace: the object has no symbol table")
	}
	h := fnv.New64a()
	for _, s := range o.Code {
		h.Write(s.Elf.Data)
	}
	h.Write([]byte(o.Name))
	st := &objState{o: o, id: h.Sum64(), b: snippet.New()}
	st.suffix = fmt.Sprintf("%016x", st.id)
	switch tls {
	case "local-exec":
		st.tls = localExec
	case "initial-exec":
		st.tls = initialExec
	case "indirect":
		st.tls = indirect
	default:
		// What may go into a shared library may be dlopen'ed, where
		// static TLS for its slots is scarce.
		st.tls = localExec
		if isPIC(f) {
			st.tls = indirect
		}
	}
	st.prog = cfg.Build(o)
	st.analysis = loops.Analyze(st.prog)
	st.live = st.prog.Liveness()
	st.strs.add("")

	st.secData = f.AddSection(&elfobj.Section{Name: ".vptrace", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Align: 8})
	st.secSlots = f.AddSection(&elfobj.Section{Name: ".tbss.vptrace", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE | elf.SHF_TLS, Align: 8})
	st.secText = f.AddSection(&elfobj.Section{Name: ".text.vptrace", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Align: 16})
	local := func(name string, typ elf.SymType, sec int) {
		f.AddSymbol(elfobj.Symbol{Name: name, Info: byte(elf.STB_LOCAL)<<4 | byte(typ), Shndx: uint32(sec)})
	}
	local(st.sym("desc"), elf.STT_OBJECT, st.secData)
	local(st.sym("sites"), elf.STT_OBJECT, st.secData)
	local(st.sym("slots"), elf.STT_TLS, st.secSlots)
	local(st.sym("ctor"), elf.STT_FUNC, st.secText)
	local(st.sym("dtor"), elf.STT_FUNC, st.secText)
	if st.tls == indirect {
		local(st.sym("slotsetup"), elf.STT_FUNC, st.secText)
	}
	return st, nil
}

func (st *objState) sym(what string) string { return "__vpt_" + what + "_" + st.suffix }

// isPIC reports whether the object may end up in a shared library, which
// local-exec TLS cannot link into: unless it shows that it was compiled
// for an executable only, it may. Evidence for an executable: absolute
// 32-bit addresses (non-PIC code), or PC-relative references from code to
// global data of default visibility, which a shared library could not bind
// locally (gcc -fPIE). Objects with neither (functions that only use their
// arguments) get the model that links anywhere.
func isPIC(f *elfobj.File) bool {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || int(s.Info) >= len(f.Sections) || f.Sections[s.Info].Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		for _, r := range s.Relocs {
			sym := &f.Symbols[r.Sym]
			switch r.Type {
			case elf.R_X86_64_TLSGD, elf.R_X86_64_TLSLD, elf.R_X86_64_DTPOFF32:
				return true
			case elf.R_X86_64_32, elf.R_X86_64_32S, elf.R_X86_64_TPOFF32:
				return false
			case elf.R_X86_64_PC32:
				if sym.Bind() != elf.STB_LOCAL && elf.ST_VISIBILITY(sym.Other) == elf.STV_DEFAULT && sym.Type() != elf.STT_FUNC && sym.Type() != elf.STT_SECTION {
					if sym.Shndx == elfobj.ShnUndef || sym.Type() == elf.STT_OBJECT || sym.Type() == elf.STT_NOTYPE {
						return false
					}
				}
			}
		}
	}
	return true
}

// Finish writes the object's site table, TLS slots and registration
// constructor, after every rule ran.
func (st *objState) Finish() error {
	f := st.o.File
	n := len(st.sites)
	name := st.strs.add(st.o.Name)
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
	case initialExec:
		desc.Flags = abi.FlagIE
	case indirect:
		desc.Flags = abi.FlagIE | abi.FlagIndirect
	}
	recs := make([]abi.Site, n)
	for k, s := range st.sites {
		sec := s.fn.Section
		r := abi.Site{
			Func:    st.strs.add(s.fn.Name),
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
			r.Sym = st.strs.add(s.sym)
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
	desc.NStrs = uint32(len(st.strs.data))
	data := desc.Append(make([]byte, 0, abi.ObjectSize+abi.SiteSize*n+len(st.strs.data)))
	for k := range recs {
		data = recs[k].Append(data)
	}
	data = append(data, st.strs.data...)
	sec := f.Sections[st.secData]
	sec.Data = data
	slots := uint64(8 * max(n, 1))
	if st.tls == indirect {
		slots = 8 // the word; the runtime maps the slots
	}
	f.Sections[st.secSlots].Size = slots
	setSym := func(what string, size uint64) {
		k := f.FindSymbol(st.sym(what))
		f.Symbols[k].Size = size
		if what == "sites" {
			f.Symbols[k].Value = abi.ObjectSize
		}
	}
	setSym("desc", abi.ObjectSize)
	setSym("sites", uint64(abi.SiteSize*n))
	setSym("slots", slots)
	return st.addConstructor()
}

// addConstructor emits the object's functions into its code section
// .text.vptrace, and the array entries that run two of them:
//
//	__vpt_ctor_<id>:  lea desc(%rip),%rdi; jmp *vpt_register@GOTPCREL(%rip)    (.init_array)
//	__vpt_dtor_<id>:  lea desc(%rip),%rdi; jmp *vpt_unregister@GOTPCREL(%rip)  (.fini_array.00000)
//	__vpt_slotsetup_<id>  (tls: indirect: the sites call it, ABI.md)
//
// The runtime is reached through the GOT, never a PLT: a lazy-binding
// resolver would run on the first call with the registers of the
// interrupted code, and clobbers some (r10, r11 and the flags on x86-64);
// the linker turns the indirect jumps and calls into direct ones where
// the runtime is in the same link (a static program). The destructor's
// priority 0 runs it after every other destructor of the module (the
// highest priorities run first, 0 last): the object's code cannot run
// after its registration is gone, then dlclose unmaps it.
func (st *objState) addConstructor() error {
	f := st.o.File
	b := st.b
	desc := snippet.RIP(st.sym("desc"), 0)
	b.Label("ctor")
	b.LeaQ(desc, snippet.RDI)
	b.Inst(obj.AJMP, snippet.GOTPCRELX("vpt_register"))
	b.Label("dtor")
	b.LeaQ(desc, snippet.RDI)
	b.Inst(obj.AJMP, snippet.GOTPCRELX("vpt_unregister"))
	if st.tls == indirect {
		// vpt_slots(tpoff of the word) with nopl desc(%rip) after the
		// call, like a site's call; every register and the flags kept.
		b.Label("slotsetup")
		b.LeaQ(snippet.Mem(snippet.RSP, -8), snippet.RSP)
		b.PushQ(snippet.RAX)
		b.MovQ(snippet.GOTTPOFF(st.sym("slots")), snippet.RAX)
		b.MovQ(snippet.RAX, snippet.Mem(snippet.RSP, 8))
		b.PopQ(snippet.RAX)
		b.Call(snippet.GOTPCRELX("vpt_slots"))
		siteNop(b, "desc")
		b.LeaQ(snippet.Mem(snippet.RSP, 8), snippet.RSP)
		b.Ret()
	}
	b.Label("end")
	code, err := b.Assemble()
	if err != nil {
		return fmt.Errorf("vptrace: constructor: %w", err)
	}
	text := st.secText
	f.Sections[text].Data = code.Bytes
	fn := func(what, from, to string) uint32 {
		k := f.FindSymbol(st.sym(what))
		f.Symbols[k].Value = uint64(code.Labels[from])
		f.Symbols[k].Size = uint64(code.Labels[to] - code.Labels[from])
		return k
	}
	ctor := fn("ctor", "ctor", "dtor")
	dtor := fn("dtor", "dtor", "end")
	if st.tls == indirect {
		f.Symbols[dtor].Size = uint64(code.Labels["slotsetup"] - code.Labels["dtor"])
		fn("slotsetup", "slotsetup", "end")
	}
	var rs []elfobj.Rela
	for _, r := range code.Relocs {
		k := f.FindSymbol(r.Sym)
		if k == 0 {
			k = f.AddSymbol(elfobj.Symbol{Name: r.Sym, Info: byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_NOTYPE)})
		}
		rs = append(rs, elfobj.Rela{Off: uint64(r.Off), Type: r.Type, Sym: k, Addend: r.Addend})
	}
	if off, ok := code.Labels["desc"]; ok {
		rs = append(rs, elfobj.Rela{Off: uint64(off + 3), Type: elf.R_X86_64_PC32, Sym: f.FindSymbol(st.sym("desc")), Addend: -4})
	}
	f.AddSection(&elfobj.Section{Name: ".rela.text.vptrace", Type: elf.SHT_RELA, Flags: elf.SHF_INFO_LINK, Link: uint32(f.SymtabNdx), Info: uint32(text), Align: 8, Entsize: 24, Relocs: rs})
	entry := func(name string, typ elf.SectionType, sym uint32) {
		sec := f.AddSection(&elfobj.Section{Name: name, Type: typ, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Align: 8, Entsize: 8, Data: make([]byte, 8)})
		f.AddSection(&elfobj.Section{Name: ".rela" + name, Type: elf.SHT_RELA, Flags: elf.SHF_INFO_LINK, Link: uint32(f.SymtabNdx), Info: uint32(sec), Align: 8, Entsize: 24,
			Relocs: []elfobj.Rela{{Off: 0, Type: elf.R_X86_64_64, Sym: sym}}})
	}
	entry(".init_array", elf.SHT_INIT_ARRAY, ctor)
	entry(".fini_array.00000", elf.SHT_FINI_ARRAY, dtor)
	return nil
}

// strtab is a string table with deduplication.
type strtab struct {
	data []byte
	idx  map[string]uint32
}

func (t *strtab) add(s string) uint32 {
	if t.idx == nil {
		t.idx = make(map[string]uint32)
	}
	if off, ok := t.idx[s]; ok {
		return off
	}
	off := uint32(len(t.data))
	t.data = append(append(t.data, s...), 0)
	t.idx[s] = off
	return off
}
