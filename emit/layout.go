package emit

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"hijack/ibr"
	"hijack/ibr/x86len"
)

// codeMap is the new layout of one rewritten code section: where every
// element of the instruction chain went.
type codeMap struct {
	sec *ibr.Section
	// group[i] is the new offset of the code inserted before instruction i
	// (or of the instruction itself when nothing was inserted): where
	// control that reached the old instruction now arrives. group[n] is the
	// new section size. Offsets are 32-bit (an entry per instruction:
	// most of the map's memory); size says whether they fit.
	group []uint32
	// inst[i] is the new offset of instruction i's own bytes.
	inst []uint32
	// after[i] is the new offset of the code inserted after instruction i.
	after []uint32
	// size is the new section size, which the offsets hold when it is
	// below 4 GiB.
	size uint64
	// grown marks short branches re-encoded in a longer form.
	grown []bool
	// aligned lists, by index, the instructions that must start at an
	// offset congruent to a phase modulo an alignment (function entries,
	// data in code): few, so not an entry per instruction.
	aligned []alignment
}

// alignment is the constraint on where instruction i starts.
type alignment struct {
	i            int
	align, phase uint64
}

// maxFuncAlign caps the alignment kept for function entries: enough for
// the fetch and decode units, without the waste of cache-line alignment.
const maxFuncAlign = 16

func newCodeMap(s *ibr.Section) *codeMap {
	n := len(s.Insts)
	m := &codeMap{
		sec:   s,
		group: make([]uint32, n+1),
		inst:  make([]uint32, n),
		after: make([]uint32, n),
		grown: make([]bool, n),
	}
	secAlign := max(s.Elf.Align, 1)
	at := func(i int) {
		off := uint64(s.Insts[i].Off)
		a := secAlign
		if off != 0 {
			a = min(off&-off, secAlign)
		}
		if s.Insts[i].Kind != ibr.Data {
			a = min(a, maxFuncAlign)
		}
		if a > 1 {
			m.aligned = append(m.aligned, alignment{i, a, off % a})
		}
	}
	for _, fn := range s.Funcs {
		at(fn.Start)
	}
	// A loop head the compiler aligned (no-ops up to an instruction at a
	// multiple of 8 or more in its function) keeps its alignment: the
	// code inserted before it would otherwise put it anywhere, and where
	// an instrumented loop started alone moved kernels' times by 5-10%.
	for i := 1; i < n; i++ {
		in := &s.Insts[i]
		if in.Kind == ibr.Code && in.Func >= 0 && s.Funcs[in.Func].Start != i && in.Func == s.Insts[i-1].Func &&
			s.Nop(i-1) && !s.Nop(i) && in.Off%8 == 0 {
			at(i)
		}
	}
	for i := range s.Insts {
		if s.Insts[i].Kind == ibr.Data {
			at(i)
		}
	}
	slices.SortFunc(m.aligned, func(a, b alignment) int { return cmp.Compare(a.i, b.i) })
	return m
}

// encLen returns the new length of instruction i's own bytes.
func (m *codeMap) encLen(i int) uint64 {
	in := &m.sec.Insts[i]
	switch {
	case in.Kind == ibr.Pad:
		return 0
	case m.grown[i]:
		return uint64(in.Layout.OpcodeOff) + grownBody(in.Layout.Opcode)
	}
	return uint64(in.Len)
}

// grownBody returns the length, without prefixes, of the long form of a
// short branch with the given opcode.
func grownBody(op byte) uint64 {
	switch {
	case op >= 0x70 && op <= 0x7f:
		return 6 // 0f 8x rel32
	case op == 0xeb:
		return 5 // e9 rel32
	default:
		return 9 // jrcxz/loop: op +2; jmp short +5; jmp rel32
	}
}

// place computes offsets from the current branch forms.
func (m *codeMap) place() {
	var pos uint64
	insts := m.sec.Insts
	next := 0 // m.aligned[next] is the next instruction with an alignment
	for i := range insts {
		for next < len(m.aligned) && m.aligned[next].i == i {
			a := m.aligned[next]
			pos += (a.phase - pos%a.align + a.align) % a.align
			next++
		}
		m.group[i] = uint32(pos)
		for _, sn := range insts[i].Before() {
			pos += uint64(len(sn.Code))
		}
		m.inst[i] = uint32(pos)
		pos += m.encLen(i)
		m.after[i] = uint32(pos)
		for _, sn := range insts[i].After() {
			pos += uint64(len(sn.Code))
		}
	}
	m.group[len(insts)] = uint32(pos)
	m.size = pos
}

// addr maps a location, given as an instruction index and an offset from
// its start, to its new offset. The start of an instruction maps to the
// start of the code inserted before it.
func (m *codeMap) addr(i int, delta int64) uint64 {
	if delta == 0 {
		return uint64(m.group[i])
	}
	p := uint64(m.inst[i]) + uint64(delta)
	if m.sec.Insts[i].Kind == ibr.Pad {
		// Padding is made again and may be shorter.
		p = min(p, uint64(m.group[i+1]))
	}
	return p
}

// addrOf maps an old section offset.
func (m *codeMap) addrOf(off uint64) (uint64, error) {
	i := m.sec.Find(off)
	if i < 0 {
		return 0, fmt.Errorf("offset 0x%x is beyond the end of %s", off, m.sec.Elf.Name)
	}
	if i == len(m.sec.Insts) {
		return uint64(m.group[i]), nil
	}
	in := &m.sec.Insts[i]
	delta := int64(off) - int64(in.Off)
	if delta != 0 && in.Kind == ibr.Code {
		return 0, fmt.Errorf("%s is inside an instruction", m.sec.Where(off))
	}
	return m.addr(i, delta), nil
}

// fieldOf maps the old offset of a byte inside an instruction's own
// encoding (a relocated field) to its new offset.
func (m *codeMap) fieldOf(off uint64) uint64 {
	i := m.sec.Find(off)
	return uint64(m.inst[i]) + off - uint64(m.sec.Insts[i].Off)
}

// relax grows short branches that no longer reach their target until
// every branch fits. Branches only ever grow, so this terminates.
func (m *codeMap) relax() {
	insts := m.sec.Insts
	for {
		m.place()
		changed := false
		for i := range insts {
			in := &insts[i]
			if in.Link == nil || in.Link.Kind != ibr.LinkBranch || in.Layout.RelSize != 1 || m.grown[i] {
				continue
			}
			d := int64(m.addr(in.Link.Target, in.Link.Delta)) - int64(m.inst[i]) - int64(in.Len)
			if d < -128 || d > 127 {
				m.grown[i] = true
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// nops holds the recommended multi-byte NOPs, indexed by length.
var nops = [...][]byte{
	nil,
	{0x90},
	{0x66, 0x90},
	{0x0f, 0x1f, 0x00},
	{0x0f, 0x1f, 0x40, 0x00},
	{0x0f, 0x1f, 0x44, 0x00, 0x00},
	{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
	{0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
	{0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	{0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
}

// FillNops fills b with as few no-op instructions as possible.
func FillNops(b []byte) {
	for len(b) > 0 {
		n := min(len(b), len(nops)-1)
		copy(b, nops[n])
		b = b[n:]
	}
}

// write produces the new section contents. Links are re-encoded; inserted
// code is copied in.
func (m *codeMap) write() ([]byte, error) {
	insts := m.sec.Insts
	out := make([]byte, m.size)
	var end uint64
	for i := range insts {
		in := &insts[i]
		FillNops(out[end:m.group[i]])
		pos := uint64(m.group[i])
		for _, sn := range in.Before() {
			if err := m.writeSnippet(out, pos, sn, i); err != nil {
				return nil, err
			}
			pos += uint64(len(sn.Code))
		}
		if err := m.writeInst(out, i); err != nil {
			return nil, err
		}
		pos = uint64(m.after[i])
		for _, sn := range in.After() {
			if err := m.writeSnippet(out, pos, sn, i); err != nil {
				return nil, err
			}
			pos += uint64(len(sn.Code))
		}
		end = pos
	}
	FillNops(out[end:])
	return out, nil
}

// writeSnippet copies inserted code to pos and resolves its links.
func (m *codeMap) writeSnippet(out []byte, pos uint64, sn *ibr.Snippet, i int) error {
	copy(out[pos:], sn.Code)
	for _, l := range sn.Links {
		d := int64(m.addr(l.Target, l.Delta)) - int64(pos+uint64(l.End))
		if err := putDisp(out[pos+uint64(l.Off):pos+uint64(l.Off)+4], d); err != nil {
			return fmt.Errorf("%s: inserted code: %v", m.sec.Where(uint64(m.sec.Insts[i].Off)), err)
		}
	}
	return nil
}

// writeInst writes element i's own bytes, re-encoding its link.
func (m *codeMap) writeInst(out []byte, i int) error {
	in := &m.sec.Insts[i]
	old := m.sec.Elf.Data
	pos := uint64(m.inst[i])
	end := pos + m.encLen(i)
	switch in.Kind {
	case ibr.Pad:
		return nil
	case ibr.Data:
		copy(out[pos:], old[in.Off:in.End()])
		return nil
	}
	dst := out[pos:end]
	src := old[in.Off:in.End()]
	if m.grown[i] {
		return m.writeGrown(i, dst, src)
	}
	copy(dst, src)
	if in.Link == nil {
		return nil
	}
	var off, size int
	if in.Link.Kind == ibr.LinkBranch {
		off, size = int(in.Layout.RelOff), int(in.Layout.RelSize)
	} else {
		off, size = int(in.Layout.DispOff), int(in.Layout.DispSize)
	}
	d := int64(m.addr(in.Link.Target, in.Link.Delta)) - int64(end)
	if err := putDisp(dst[off:off+size], d); err != nil {
		return fmt.Errorf("%s: %v", m.sec.Where(uint64(in.Off)), err)
	}
	return nil
}

// writeGrown writes the long form of short branch i.
func (m *codeMap) writeGrown(i int, dst, src []byte) error {
	in := &m.sec.Insts[i]
	l := &in.Layout
	p := copy(dst, src[:l.OpcodeOff])
	target := int64(m.addr(in.Link.Target, in.Link.Delta))
	end := int64(m.inst[i]) + int64(len(dst))
	var field []byte
	switch op := l.Opcode; {
	case l.Map != x86len.Map1Byte:
		return fmt.Errorf("%s: cannot lengthen branch opcode %02x", m.sec.Where(uint64(in.Off)), op)
	case op >= 0x70 && op <= 0x7f:
		dst[p], dst[p+1] = 0x0f, 0x80|(op&0x0f)
		field = dst[p+2 : p+6]
	case op == 0xeb:
		dst[p] = 0xe9
		field = dst[p+1 : p+5]
	case op >= 0xe0 && op <= 0xe3:
		// loop/jrcxz have no rel32 form: branch over a jump that skips a
		// near jump to the target.
		copy(dst[p:], []byte{op, 0x02, 0xeb, 0x05, 0xe9})
		field = dst[p+5 : p+9]
	default:
		return fmt.Errorf("%s: cannot lengthen branch opcode %02x", m.sec.Where(uint64(in.Off)), op)
	}
	return putDisp(field, target-end)
}

// putDisp stores a little-endian displacement, checking that it fits.
func putDisp(b []byte, d int64) error {
	switch len(b) {
	case 1:
		if d < -128 || d > 127 {
			return fmt.Errorf("displacement %d does not fit in 8 bits", d)
		}
		b[0] = byte(d)
	case 4:
		if d < -1<<31 || d >= 1<<31 {
			return fmt.Errorf("displacement %d does not fit in 32 bits", d)
		}
		binary.LittleEndian.PutUint32(b, uint32(int32(d)))
	default:
		return fmt.Errorf("unsupported displacement width %d", len(b))
	}
	return nil
}
