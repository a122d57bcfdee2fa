package cfg

import (
	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg/effect"
)

// frame is what is known of the stack pointer, and of a frame pointer,
// as offsets from the stack pointer at the function's entry.
type frame struct {
	set        bool // some path reached here
	sp, bp     int64
	spOK, bpOK bool
}

func (a frame) join(b frame) frame {
	if !a.set {
		return b
	}
	if !b.set {
		return a
	}
	a.spOK = a.spOK && b.spOK && a.sp == b.sp
	a.bpOK = a.bpOK && b.bpOK && a.bp == b.bp
	return a
}

// step carries the frame over instruction i: pushes, pops, constant
// adjustments of rsp, a frame pointer set from rsp and restored with
// leave or mov %rbp,%rsp. Anything else that writes rsp (and $-16, %rsp)
// makes its height unknown.
func (r *resolver) step(f frame, i int) frame {
	a := r.asm(i)
	e := r.effect(i)
	sp, bp := f.sp, f.bp
	spOK, bpOK := f.spOK, f.bpOK
	spDone, bpDone := false, false
	dst, dw, dok := effect.Reg(0), 0, false
	if args(a) >= 1 {
		dst, dw, dok = gpr(a.Args[0])
	}
	size := int64(8)
	if a.DataSize == 16 {
		size = 2
	}
	switch a.Op {
	case x86asm.PUSH:
		sp -= size
		spDone = true
	case x86asm.POP:
		sp += size
		spDone = true
		if dok && dst == effect.RSP {
			spOK = false
		}
	case x86asm.CALL:
		// The callee pops the return address.
		spDone = true
	case x86asm.LEAVE:
		sp, spOK = bp+8, bpOK
		bpOK = false
		spDone, bpDone = true, true
	case x86asm.ADD, x86asm.SUB:
		if imm, ok := a.Args[1].(x86asm.Imm); ok && dok && dw == 64 && dst == effect.RSP {
			if a.Op == x86asm.ADD {
				sp += int64(imm)
			} else {
				sp -= int64(imm)
			}
			spDone = true
		}
	case x86asm.LEA:
		if m, ok := a.Args[1].(x86asm.Mem); ok && dok && dw == 64 && m.Index == 0 && m.Segment == 0 {
			switch {
			case dst == effect.RSP && m.Base == x86asm.RSP:
				sp += m.Disp
				spDone = true
			case dst == effect.RSP && m.Base == x86asm.RBP:
				sp, spOK = bp+m.Disp, bpOK
				spDone = true
			case dst == effect.RBP && m.Base == x86asm.RSP:
				bp, bpOK = sp+m.Disp, spOK
				bpDone = true
			}
		}
	case x86asm.MOV:
		if src, sw, ok := gpr(a.Args[1]); ok && dok && dw == 64 && sw == 64 {
			switch {
			case dst == effect.RSP && src == effect.RBP:
				sp, spOK = bp, bpOK
				spDone = true
			case dst == effect.RBP && src == effect.RSP:
				bp, bpOK = sp, spOK
				bpDone = true
			}
		}
	}
	defs := e.Def | e.Partial
	if !spDone && defs.Has(effect.RSP) {
		spOK = false
	}
	if !bpDone && defs.Has(effect.RBP) {
		bpOK = false
	}
	return frame{set: true, sp: sp, bp: bp, spOK: spOK, bpOK: bpOK}
}

// heights computes the frame at the start of every block by forward data
// flow from the entry, where the height is 0. Blocks other code may enter
// start unknown.
func (r *resolver) heights() []frame {
	g := r.g
	in := make([]frame, len(g.Blocks))
	for _, b := range g.Blocks {
		if r.external[b.Index] {
			in[b.Index] = frame{set: true}
		}
	}
	in[0] = frame{set: true, spOK: true}
	work := make([]*Block, 0, len(g.Blocks))
	queued := make([]bool, len(g.Blocks))
	for _, b := range g.Blocks {
		work = append(work, b)
		queued[b.Index] = true
	}
	for len(work) > 0 {
		b := work[0]
		work = work[1:]
		queued[b.Index] = false
		f := in[b.Index]
		if !f.set {
			continue
		}
		for i := b.Start; i < b.End; i++ {
			f = r.step(f, i)
		}
		for _, s := range b.Succs {
			n := in[s.Index].join(f)
			if n != in[s.Index] {
				in[s.Index] = n
				if !queued[s.Index] {
					queued[s.Index] = true
					work = append(work, s)
				}
			}
		}
	}
	return in
}

// atEntryHeight reports whether the stack pointer before instruction i is
// provably where it was at the function's entry, on every path.
func (r *resolver) atEntryHeight(in []frame, i int) bool {
	b := r.g.BlockOf(i)
	if b == nil {
		return false
	}
	f := in[b.Index]
	for k := b.Start; k < i; k++ {
		f = r.step(f, k)
	}
	return f.set && f.spOK && f.sp == 0
}
