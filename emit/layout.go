package emit

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"hijack/cfg/effect"
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
	// stack holds the instructions whose rsp-based operands are shifted
	// (ibr.Section.ShiftStack), by index: how many bytes longer the
	// output's displacement field makes them (0, 3 or 4). Few: nil when
	// the section has none.
	stack map[int]int
	// aligned lists, by index, the instructions that must start at an
	// offset congruent to a phase modulo an alignment (function entries,
	// data in code): few, so not an entry per instruction.
	aligned []alignment
	// cold lists the inserted snippets that have a cold part, in the
	// order of the chain (instruction by instruction, code before it
	// first); coldOrder indexes it in the order the cold parts are laid
	// out (by home, then as cold).
	cold      []coldPart
	coldOrder []int
	// taken maps a conditional jump with code on its taken path
	// (ibr.Section.InsertTaken) to that code's entry in cold: the jump
	// branches there.
	taken map[int]int
	// guards are the jumps over cold areas that follow an element that
	// may fall through, by home.
	guards []guard
	// align, when not 0, is the alignment the section needs for the new
	// layout's (smallLoopAlign), if more than it has.
	align uint64
}

// coldPart is the out-of-line part of an inserted snippet: it goes after
// its home element, the last of the function the snippet is inserted in
// (the section's last outside functions), with the other cold parts that
// go there. hot and at are where the snippet and its cold part start.
type coldPart struct {
	sn      *ibr.Snippet
	home    int
	hot, at uint32
}

// guard is a jump over the cold area after element home, at offset at:
// the element may fall through (a call to a function that does not
// return, code that ends a section), which must reach what followed it.
type guard struct {
	home int
	at   uint32
}

// guardLen is the size of a guard: e9 rel32.
const guardLen = 5

// alignment is the constraint on where instruction i starts.
type alignment struct {
	i            int
	align, phase uint64
}

// maxFuncAlign caps the alignment kept for function entries: enough for
// the fetch and decode units, without the waste of cache-line alignment.
const maxFuncAlign = 16

// smallLoopAlign is where a loop whose code fits in that many bytes
// starts (smallLoop), and the section's alignment then.
const smallLoopAlign = 32

// smallLoop reports whether the aligned loop head i starts a loop of at
// most smallLoopAlign bytes once rewritten: a branch back to i ends
// within that many bytes of the start of the code inserted before i. The
// compiler aligns such a loop to 16 (or 8) bytes, which may leave it
// across a 32-byte boundary, where the front end fetches and caches it in
// two pieces; where code moved decides whether it does, which moved an
// instrumented kernel's time by 20% with its inner loop unchanged.
func (m *codeMap) smallLoop(i int) bool {
	s := m.sec
	var size uint64
	for j := i; j < len(s.Insts) && s.Insts[j].Func == s.Insts[i].Func; j++ {
		for _, sn := range s.Insts[j].Before() {
			size += uint64(len(sn.Code))
		}
		size += m.encLen(j)
		if size > smallLoopAlign {
			return false
		}
		if l := s.Insts[j].Link; l != nil && l.Kind == ibr.LinkBranch && l.Target == i && l.Delta == 0 {
			return true
		}
		for _, sn := range s.Insts[j].After() {
			size += uint64(len(sn.Code))
		}
	}
	return false
}

func newCodeMap(s *ibr.Section) *codeMap {
	n := len(s.Insts)
	m := &codeMap{
		sec:   s,
		group: make([]uint32, n+1),
		inst:  make([]uint32, n),
		after: make([]uint32, n),
		grown: make([]bool, n),
	}
	for _, i := range s.StackShifted() {
		if m.stack == nil {
			m.stack = make(map[int]int)
		}
		_, field := s.StackShift(i)
		m.stack[i] = field - int(s.Insts[i].Layout.DispSize)
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
			if secAlign >= 16 && m.smallLoop(i) {
				m.aligned = append(m.aligned, alignment{i, smallLoopAlign, 0})
				m.align = smallLoopAlign
				continue
			}
			at(i)
		}
	}
	for i := range s.Insts {
		if s.Insts[i].Kind == ibr.Data {
			at(i)
		}
	}
	slices.SortFunc(m.aligned, func(a, b alignment) int { return cmp.Compare(a.i, b.i) })
	m.findCold()
	return m
}

// findCold lists the cold parts of inserted code, where each goes, and
// the cold areas that need a guard.
func (m *codeMap) findCold() {
	s := m.sec
	for i := range s.Insts {
		for _, sn := range s.Insts[i].Inserted() {
			if sn.Cold == nil {
				continue
			}
			home := len(s.Insts) - 1
			if fn := s.FuncAt(i); fn != nil && fn.End > i {
				home = fn.End - 1
			}
			if sn == s.Taken(i) {
				if m.taken == nil {
					m.taken = make(map[int]int)
				}
				m.taken[i] = len(m.cold)
			}
			m.cold = append(m.cold, coldPart{sn: sn, home: home})
		}
	}
	if len(m.cold) == 0 {
		return
	}
	m.coldOrder = make([]int, len(m.cold))
	for k := range m.coldOrder {
		m.coldOrder[k] = k
	}
	slices.SortStableFunc(m.coldOrder, func(a, b int) int { return cmp.Compare(m.cold[a].home, m.cold[b].home) })
	for _, k := range m.coldOrder {
		if h := m.cold[k].home; (len(m.guards) == 0 || m.guards[len(m.guards)-1].home != h) && m.mayFallThrough(h) {
			m.guards = append(m.guards, guard{home: h})
		}
	}
}

// mayFallThrough reports whether control may go on from element i (or
// the code inserted after it) to what follows: anything but an
// unconditional jump, a return or a trap, as the control-flow analysis
// classifies it. (Padding too: it runs where what precedes it falls
// through; a function may be nothing else.)
func (m *codeMap) mayFallThrough(i int) bool {
	s := m.sec
	in := &s.Insts[i]
	if len(in.After()) > 0 || in.Kind != ibr.Code {
		return true
	}
	return effect.Of(s.Asm(i), &in.Layout, s.Bytes(i)).Ctrl.FallsThrough()
}

// encLen returns the new length of instruction i's own bytes.
func (m *codeMap) encLen(i int) uint64 {
	in := &m.sec.Insts[i]
	switch {
	case in.Kind == ibr.Pad:
		return 0
	case m.grown[i]:
		return uint64(in.Layout.OpcodeOff) + grownBody(in.Layout.Opcode)
	case m.stack != nil:
		if grow, ok := m.stack[i]; ok {
			return uint64(int(in.Len) + grow)
		}
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
	hot := 0  // m.cold[hot] is the next snippet with a cold part
	cold := 0 // m.coldOrder[cold] is the next cold part to lay out
	guards := 0
	snippets := func(sns []*ibr.Snippet) {
		for _, sn := range sns {
			if sn.Cold != nil {
				m.cold[hot].hot = uint32(pos)
				hot++
			}
			pos += uint64(len(sn.Code))
		}
	}
	for i := range insts {
		for next < len(m.aligned) && m.aligned[next].i == i {
			a := m.aligned[next]
			pos += (a.phase - pos%a.align + a.align) % a.align
			next++
		}
		m.group[i] = uint32(pos)
		snippets(insts[i].Before())
		m.inst[i] = uint32(pos)
		pos += m.encLen(i)
		m.after[i] = uint32(pos)
		snippets(insts[i].After())
		if guards < len(m.guards) && m.guards[guards].home == i {
			m.guards[guards].at = uint32(pos)
			pos += guardLen
			guards++
		}
		for ; cold < len(m.coldOrder) && m.cold[m.coldOrder[cold]].home == i; cold++ {
			c := &m.cold[m.coldOrder[cold]]
			c.at = uint32(pos)
			pos += uint64(len(c.sn.Cold.Code))
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

// target returns the new offset branch i goes to: its link's target, or
// the code on its taken path (which goes on to that target).
func (m *codeMap) target(i int) uint64 {
	if k, ok := m.taken[i]; ok {
		return uint64(m.cold[k].at)
	}
	l := m.sec.Insts[i].Link
	return m.addr(l.Target, l.Delta)
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
			d := int64(m.target(i)) - int64(m.inst[i]) - int64(in.Len)
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
	hot := 0 // m.cold[hot] is the next snippet with a cold part
	snippets := func(pos uint64, sns []*ibr.Snippet, i int) (uint64, error) {
		for _, sn := range sns {
			var c *coldPart
			if sn.Cold != nil {
				c = &m.cold[hot]
				hot++
			}
			if err := m.writeSnippet(out, pos, sn, c, i); err != nil {
				return 0, err
			}
			pos += uint64(len(sn.Code))
		}
		return pos, nil
	}
	for i := range insts {
		in := &insts[i]
		// (Also the nops under a cold area, which the loop below writes.)
		FillNops(out[end:m.group[i]])
		if _, err := snippets(uint64(m.group[i]), in.Before(), i); err != nil {
			return nil, err
		}
		if err := m.writeInst(out, i); err != nil {
			return nil, err
		}
		pos, err := snippets(uint64(m.after[i]), in.After(), i)
		if err != nil {
			return nil, err
		}
		end = pos
	}
	FillNops(out[end:])
	for _, g := range m.guards {
		out[g.at] = 0xe9
		if err := putDisp(out[g.at+1:g.at+guardLen], int64(m.group[g.home+1])-int64(g.at+guardLen)); err != nil {
			return nil, fmt.Errorf("%s: jump over cold code: %v", m.sec.Where(uint64(insts[g.home].Off)), err)
		}
	}
	for k := range m.cold {
		c := &m.cold[k]
		if err := m.writeSnippet(out, uint64(c.at), c.sn.Cold, c, c.home); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeSnippet copies inserted code, or the cold part of c, to pos and
// resolves its links; c is where the parts of a snippet with a cold part
// went.
func (m *codeMap) writeSnippet(out []byte, pos uint64, sn *ibr.Snippet, c *coldPart, i int) error {
	copy(out[pos:], sn.Code)
	for _, l := range sn.Links {
		var to uint64
		switch {
		case l.To == ibr.LinkInst:
			to = m.addr(l.Target, l.Delta)
		case c == nil:
			return fmt.Errorf("%s: inserted code: a link to a part of a snippet without a cold part", m.sec.Where(uint64(m.sec.Insts[i].Off)))
		case l.To == ibr.LinkHot:
			to = uint64(c.hot) + uint64(l.Delta)
		default:
			to = uint64(c.at) + uint64(l.Delta)
		}
		if err := putDisp(out[pos+uint64(l.Off):pos+uint64(l.Off)+4], int64(to)-int64(pos+uint64(l.End))); err != nil {
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
	if _, ok := m.stack[i]; ok {
		// (ibr.ShiftStack checked the operand: rsp-based, no link)
		copy(dst, m.sec.ShiftedBytes(nil, i))
		return nil
	}
	copy(dst, src)
	if in.Link == nil {
		return nil
	}
	var off, size int
	var to uint64
	if in.Link.Kind == ibr.LinkBranch {
		off, size, to = int(in.Layout.RelOff), int(in.Layout.RelSize), m.target(i)
	} else {
		off, size, to = int(in.Layout.DispOff), int(in.Layout.DispSize), m.addr(in.Link.Target, in.Link.Delta)
	}
	d := int64(to) - int64(end)
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
	target := int64(m.target(i))
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
