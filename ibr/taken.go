package ibr

import (
	"fmt"
	"slices"

	"hijack/ibr/x86len"
)

// takenPath is the code on the taken path of one conditional jump: the
// snippets in the order they were inserted (parts) and the one snippet
// that holds them all (merged), which is in the jump's Before list.
type takenPath struct {
	parts  []*Snippet
	merged *Snippet
}

// InsertTaken inserts code on the taken path of conditional jump i (jcc;
// not jrcxz or loop), which must branch within the section: the code runs
// when the jump is taken, before control reaches the target. The jump
// itself is re-targeted: it branches to the code, placed out of line (after
// the function, with the cold parts), which ends with a jump to the old
// target. The path that falls through runs nothing more, and the jump is
// not repeated: inserting a second conditional jump before the first,
// taken to the code and back to the first, would cost a branch on the
// fall-through path every time (16 a step in a compare loop that exits
// at every byte). Code inserted earlier on the same path runs first. The
// code may change the flags the jump tested; what the target needs it
// must keep.
func (s *Section) InsertTaken(i int, sn *Snippet) error {
	if !s.Rewritable() {
		return fmt.Errorf("section %s is not rewritable: %s", s.Elf.Name, s.Problem)
	}
	if i < 0 || i >= len(s.Insts) || !s.isJcc(i) {
		return fmt.Errorf("section %s: element %d is not a conditional jump within the section", s.Elf.Name, i)
	}
	if sn.Cold != nil && sn.Cold.Cold != nil {
		return fmt.Errorf("%s: code on a taken path: a cold part with a cold part", s.Where(uint64(s.Insts[i].Off)))
	}
	in := &s.Insts[i]
	p := s.taken[i]
	if p == nil {
		p = &takenPath{}
	}
	parts := append(slices.Clip(p.parts), sn)
	merged := mergeTaken(parts, in.Link)
	if err := s.checkSnippet(i, merged); err != nil {
		return err
	}
	if p.merged == nil {
		// (an empty hot part: the jump's own branch reaches the code)
		if err := s.InsertBefore(i, merged); err != nil {
			return err
		}
		if s.taken == nil {
			s.taken = make(map[int]*takenPath)
		}
		s.taken[i] = p
	} else {
		k := slices.Index(in.Before(), p.merged)
		if k < 0 {
			return fmt.Errorf("%s: code on a taken path: the path's code is gone from before the jump", s.Where(uint64(in.Off)))
		}
		in.inserted[k] = merged
	}
	p.parts, p.merged = parts, merged
	return nil
}

// Taken returns the snippet that holds the code on the taken path of
// instruction i (in i's Before list, with no code of its own and all of
// it in its cold part, where the jump now branches), or nil.
func (s *Section) Taken(i int) *Snippet {
	if p := s.taken[i]; p != nil {
		return p.merged
	}
	return nil
}

// isJcc reports whether instruction i is a conditional jump (70-7f rel8,
// 0f 80-8f rel32) resolved within the section.
func (s *Section) isJcc(i int) bool {
	in := &s.Insts[i]
	l := &in.Layout
	return in.Kind == Code && in.Flags&Prefix == 0 && in.Link != nil && in.Link.Kind == LinkBranch &&
		(l.Map == x86len.Map1Byte && l.Opcode&0xf0 == 0x70 || l.Map == x86len.Map0F && l.Opcode&0xf0 == 0x80)
}

// mergeTaken makes the snippet for a taken path from its parts: no hot
// code; a cold part of every part's code in order, a jump to the branch's
// old target (to), then every part's own cold part. The parts' links to
// their hot and cold parts count from the merged cold part's start.
func mergeTaken(parts []*Snippet, to *Link) *Snippet {
	n := 5
	for _, sn := range parts {
		n += len(sn.Code)
		if sn.Cold != nil {
			n += len(sn.Cold.Code)
		}
	}
	c := &Snippet{Code: make([]byte, 0, n)}
	hot := make([]int, len(parts))
	for k, sn := range parts {
		hot[k] = len(c.Code)
		c.Code = append(c.Code, sn.Code...)
	}
	jmp := len(c.Code)
	c.Code = append(c.Code, 0xe9, 0, 0, 0, 0)
	c.Links = append(c.Links, SnippetLink{Off: jmp + 1, End: jmp + 5, Target: to.Target, Delta: to.Delta})
	cold := make([]int, len(parts))
	for k, sn := range parts {
		cold[k] = len(c.Code)
		if sn.Cold != nil {
			c.Code = append(c.Code, sn.Cold.Code...)
		}
	}
	// add moves part k's relocations and links (of its hot part, or of its
	// cold part when inCold) into c.
	add := func(k int, part *Snippet, inCold bool) {
		at := hot[k]
		if inCold {
			at = cold[k]
		}
		for _, r := range part.Relocs {
			r.Off += at
			c.Relocs = append(c.Relocs, r)
		}
		for _, l := range part.Links {
			l.Off, l.End = l.Off+at, l.End+at
			switch l.To {
			case LinkHot:
				l.To, l.Delta = LinkCold, l.Delta+int64(hot[k])
			case LinkCold:
				l.Delta += int64(cold[k])
			}
			c.Links = append(c.Links, l)
		}
	}
	for k, sn := range parts {
		add(k, sn, false)
		if sn.Cold != nil {
			add(k, sn.Cold, true)
		}
	}
	return &Snippet{Code: []byte{}, Cold: c}
}
