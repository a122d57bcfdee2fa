package vptrace

import (
	"slices"

	"hijack/cfg/effect"
	"hijack/preset/kit"
	"hijack/snippet"
	"hijack/vptrace/abi"
)

// probeThreadSym is the runtime's symbol the inline cache probe reads
// (ABI.md, "The inline cache probe"): its per-thread state (initial-exec
// TLS). The cache epoch, which keys add, it reads from the object's own
// epoch word (abi.FlagEpoch), which the runtime keeps at the epoch of its
// hot line (vpt_probe_hot): RIP-relative, no register, where the hot
// line's address took a GOT load first.
const probeThreadSym = "vpt_probe_tls"

// probeNeed is how many registers the cache probe takes: the key, the
// set's address and the entry it compares.
const probeNeed = 3

// probeTakes is how many registers the cache probe takes; cached: the
// cache's address is in a register of a spilled loop (probeHoist), and it
// takes one fewer, the key and the set's offset.
func probeTakes(cached bool) int {
	if cached {
		return probeNeed - 1
	}
	return probeNeed
}

// probeHoist is what a spilled loop holds for the cache probes of its
// sites (spill.go): the address of the thread's table (cache), loaded on
// the loop's entry edges and again after every call of the probe's miss
// path; NoReg where it holds none.
type probeHoist struct {
	cache snippet.Reg
}

// noHoist is a probe's with no registers of a spilled loop.
var noHoist = probeHoist{snippet.NoReg}

// loadProbeTable loads the calling thread's recent-page table into r
// (the zeros while it has none).
func loadProbeTable(b *kit.Builder, r snippet.Reg) {
	b.MovQ(snippet.GOTTPOFF(probeThreadSym), r)
	b.MovQ(snippet.Mem(r, abi.ProbeCacheOff).Seg(snippet.FS), r)
}

// epochWord is the object's epoch word (abi.FlagEpoch), RIP-relative.
func (st *objState) epochWord() snippet.Operand {
	return st.b.RIP(kit.Named(st.sym("epoch")), 0)
}

// kindBits returns the read and write bits of a site's kind: what the
// cache entry of its page must have for the access not to be recorded.
func kindBits(k abi.Kind) abi.Kind { return k & abi.KindRMW }

// probeScratch chooses the probe's registers: first those of reuse (the
// snippet's own registers it no longer needs after writing the slot, saved
// already if they were borrowed), then dead ones, then live ones (to be
// saved around the probe), never one of busy. live has every register the
// program or the snippet holds at the probe.
func probeScratch(n int, live, busy effect.RegSet, reuse []effect.Reg) []effect.Reg {
	regs := slices.Clone(reuse[:min(len(reuse), n)])
	taken := busy
	for _, r := range regs {
		taken |= 1 << r
	}
	more, _, err := kit.Scratch(n-len(regs), live|taken, taken, 0)
	if err != nil {
		return nil
	}
	return append(regs, more...)
}

// probeSaved returns the registers of regs that probe pushes around
// itself: those live and not reused from the snippet.
func probeSaved(regs []effect.Reg, live effect.RegSet, reuse []effect.Reg) []effect.Reg {
	var saved []effect.Reg
	for _, r := range regs {
		if live.Has(r) && !slices.Contains(reuse, r) {
			saved = append(saved, r)
		}
	}
	return saved
}

// probe emits the look-up of the page in register page in the calling thread's
// recent-page cache (ABI.md), after a slot miss with the slot written and
// the flags saved: when the page's entry has every kind of this access
// (kind), the access was recorded lately and the code jumps to hit without
// a call; otherwise miss emits the call. regs are probeScratch's; those
// live (not dead, not reused from the snippet) are pushed around the probe,
// after stepping over the red zone unless the snippet did (shift != 0).
//
//	lea  4+kind(,page,4), K
//	add  __vpt_epoch_<id>(%rip), K      # the key: ((page+1) << 2) + epoch, | kind
//	mov  vpt_probe_tls@GOTTPOFF(%rip), H
//	mov  %fs:VT_PROBE(H), H             # the cache (zeros while there is none: no test)
//	lea  0(,K,4), X; and $CacheSetMask, X   # the set (page+1 mod 16384): two entries
//	cmp  K, (H,X); je hit               # (kind 3, read-modify-write: then 8(H,X), done)
//	add  $(3-kind), K                   # the key with both kinds
//	cmp  K, (H,X); je hit; cmp K, 8(H,X); je hit
//	sub  $(3-kind), K
//	cmp  K, 8(H,X); je hit
//	miss: call the stub
//
// An entry has the page's kinds so far, one or both: the key with the
// access's own kinds matches the first, with both the second (the
// runtime's own test, entry ^ key masked by the other kind's bit, as two
// compares). A page's entry is mostly in the first way: a hit there
// costs 2 instructions where the page is only read or only written, 5
// where it is both (as the masked test took).
//
// With page NoReg, pre (run after the pushes) leaves the page in K, or
// jumps to its miss label (a label miss emits the call at): a sweep's exit
// finds its range's page so (with H free: not with hoist, below).
//
// The third register may be page itself (snippet.go, probeS): reload
// then emits the load from the slot it was written to, which puts the
// page back on the miss path, before the call.
//
// first, if not nil, runs right after the pushes, with the probe's
// registers, those pushed first (each free to use until the probe's own
// code, but for the page and the registers of the snippet it reuses): a
// site writes its slots there (snippet.go).
//
// stepped, if not nil, emits the call of miss with the red zone already
// stepped over (no lea around it): where the probe stepped over it itself
// to push registers (shift 0), it calls that after popping them.
//
// In a spilled loop that holds the cache's address C in a register of
// its own (hoist, spill.go), the probe does not load it and takes two
// registers, not three:
//
//	lea  4+kind(,page,4), K
//	add  __vpt_epoch_<id>(%rip), K
//	lea  0(,K,4), X; and $CacheSetMask, X
//	cmp  K, (C,X); je hit; ...          # as above
//	miss: call the stub
//	mov  vpt_probe_tls@GOTTPOFF(%rip), C
//	mov  %fs:VT_PROBE(C), C             # the stub may have mapped the cache
//
// The stub may change the thread's table (from the zeros to its cache, at
// its first event), so C is loaded again after the call; a C that still
// holds the zeros makes probes miss, never hit, and the thread's cache is
// only unmapped at its exit, which no loop outlives.
func (st *objState) probe(page snippet.Reg, kind abi.Kind, regs []effect.Reg, live effect.RegSet, reuse []effect.Reg, shift int32, hit string, hoist probeHoist, first func(regs []snippet.Reg), pre func(K, H snippet.Reg, miss string), miss, stepped, reload func()) {
	b := st.b
	saved := probeSaved(regs, live, reuse)
	K, H, X := kit.Reg(regs[0]), snippet.NoReg, kit.Reg(regs[len(regs)-1])
	if hoist.cache == snippet.NoReg {
		H = kit.Reg(regs[1])
	}
	save := func() {
		if shift == 0 {
			b.Save(saved...)
			return
		}
		for _, r := range saved {
			b.PushQ(kit.Reg(r))
		}
	}
	restore := func() {
		if shift == 0 {
			b.Restore(saved...)
			return
		}
		for i := len(saved) - 1; i >= 0; i-- {
			b.PopQ(kit.Reg(saved[i]))
		}
	}
	if len(saved) > 0 {
		save()
	}
	if first != nil {
		// (before anything the probe computes: it may reuse the
		// register of the slots' base)
		order := make([]snippet.Reg, 0, len(regs))
		for _, r := range saved {
			order = append(order, kit.Reg(r))
		}
		for _, r := range regs {
			if !slices.Contains(saved, r) {
				order = append(order, kit.Reg(r))
			}
		}
		first(order)
	}
	// (labels of their own per hit label: a snippet may probe twice)
	missL, hitL := "pmiss."+hit, hit
	if len(saved) > 0 {
		hitL = "phit." + hit
	}
	if page == snippet.NoReg {
		pre(K, H, missL)
		page = K
	}
	// The key with the access's kinds in its low bits (the epoch is a
	// multiple of 1 << 40: adding it leaves them alone; the set's mask
	// drops them).
	k := int64(kindBits(kind))
	b.LeaQ(snippet.MemIndex(snippet.NoReg, page, 4, int32(4+k)), K)
	b.AddQ(st.epochWord(), K)
	table := hoist.cache
	if table == snippet.NoReg {
		table = H
		loadProbeTable(b, H)
	}
	b.LeaQ(snippet.MemIndex(snippet.NoReg, K, 4, 0), X)
	b.AndQ(snippet.Imm(abi.CacheSetMask), X)
	// The entry with the access's own kinds, and for a read or a write
	// the one with both (the key plus the other kind's bit): the first
	// way's first (where a page's entry mostly is), its exact kinds
	// before both (what a page only read or only written has).
	entry := func(way int32) {
		b.CmpQ(K, snippet.MemIndex(table, X, 1, 8*way))
		b.Jcc(snippet.CondE, hitL)
	}
	if k == int64(abi.KindRMW) {
		entry(0)
		entry(1)
	} else {
		other := snippet.Imm(int64(abi.KindRMW) - k)
		entry(0)
		b.AddQ(other, K)
		entry(0)
		entry(1)
		b.SubQ(other, K)
		entry(1)
	}
	b.Label(missL)
	if reload != nil {
		reload()
	}
	switch {
	case len(saved) > 0 && shift == 0 && stepped != nil:
		// the red zone stepped over already: the call goes right here
		for i := len(saved) - 1; i >= 0; i-- {
			b.PopQ(kit.Reg(saved[i]))
		}
		stepped()
		b.LeaQ(snippet.Mem(snippet.RSP, kit.RedZone), snippet.RSP)
	case len(saved) > 0:
		restore()
		miss()
	default:
		miss()
	}
	if hoist.cache != snippet.NoReg {
		loadProbeTable(b, hoist.cache)
	}
	if len(saved) > 0 {
		b.Jmp(hit)
		b.Label(hitL)
		restore()
	}
}
