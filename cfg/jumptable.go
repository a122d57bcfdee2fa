package cfg

import (
	"cmp"
	"debug/elf"
	"slices"

	"hijack/ibr"
)

// table is a jump table in a data section.
type table struct {
	sec     uint32 // data section
	base    uint64 // offset of the table
	targets []int  // instruction indices in code, in entry order
	code    *ibr.Section
}

type tableKey struct {
	sec  uint32
	base uint64
}

// tableIndex finds jump tables by their base address.
type tableIndex struct {
	o      *ibr.Object
	byBase map[tableKey]*table
	// abs holds, per data section, the absolute 8-byte entries that point
	// into code, sorted by offset; anchors the offsets code refers to.
	abs     map[uint32][]absEntry
	anchors map[tableKey]bool
}

type absEntry struct {
	off  uint64
	code *ibr.Section
	inst int
}

// findTables collects the jump tables of the object from its relocations:
// PC-relative tables (entries relative to the table base, which code loads
// with lea) and absolute ones (runs of 8-byte R_X86_64_64 entries pointing
// into code, indexed from an address the code refers to).
func findTables(o *ibr.Object) *tableIndex {
	ti := &tableIndex{o: o, byBase: make(map[tableKey]*table), abs: make(map[uint32][]absEntry), anchors: make(map[tableKey]bool)}
	for _, r := range o.Refs {
		rs := o.File.Sections[r.RelaSec]
		rel := rs.Relocs[r.Index]
		if o.BySection[int(rs.Info)] != nil || r.Delta != 0 {
			continue
		}
		if r.Table {
			k := tableKey{rs.Info, r.TableBase}
			t := ti.byBase[k]
			if t == nil {
				t = &table{sec: rs.Info, base: r.TableBase, code: r.Target}
				ti.byBase[k] = t
			}
			t.targets = append(t.targets, r.Inst)
			continue
		}
		if rel.Type == elf.R_X86_64_64 {
			ti.abs[rs.Info] = append(ti.abs[rs.Info], absEntry{rel.Off, r.Target, r.Inst})
		}
	}
	for _, es := range ti.abs {
		slices.SortFunc(es, func(a, b absEntry) int { return cmp.Compare(a.off, b.off) })
	}
	for _, s := range o.Code {
		for i := range s.Insts {
			in := &s.Insts[i]
			for _, fr := range in.Relocs {
				if sec, t, ok := relocTarget(o.File, s, in, fr); ok && t >= 0 && o.BySection[int(sec)] == nil {
					ti.anchors[tableKey{sec, uint64(t)}] = true
				}
			}
		}
	}
	return ti
}

// absTable returns the absolute table starting at base: the contiguous
// entries from base up to the next place code refers to.
func (ti *tableIndex) absTable(sec uint32, base uint64, code *ibr.Section) []int {
	es := ti.abs[sec]
	i, found := slices.BinarySearchFunc(es, base, func(e absEntry, v uint64) int { return cmp.Compare(e.off, v) })
	if !found {
		return nil
	}
	var out []int
	for k := i; k < len(es) && es[k].code == code; k++ {
		if k > i && (es[k].off != es[k-1].off+8 || ti.anchors[tableKey{sec, es[k].off}]) {
			break
		}
		out = append(out, es[k].inst)
	}
	return out
}

// targetsFor finds the table an indirect jump at instruction j of fn goes
// through: the nearest reference, at or before the jump in the function,
// to the base of a known table. It returns the distinct targets.
func (ti *tableIndex) targetsFor(s *ibr.Section, fn *ibr.Func, j int) ([]int, bool) {
	const window = 64 // instructions searched backwards
	for i := j; i >= fn.Start && i > j-window; i-- {
		in := &s.Insts[i]
		for _, fr := range in.Relocs {
			sec, t, ok := relocTarget(ti.o.File, s, in, fr)
			if !ok || t < 0 {
				continue
			}
			var targets []int
			if tb := ti.byBase[tableKey{sec, uint64(t)}]; tb != nil && tb.code == s {
				targets = tb.targets
			} else {
				targets = ti.absTable(sec, uint64(t), s)
			}
			if len(targets) == 0 {
				continue
			}
			return dedup(targets), true
		}
		if i != j && classify(s, i) == ctlIndirectJump {
			break // an earlier dispatch: its table is not ours
		}
	}
	// The table's address may have been loaded far from the jump (clang
	// hoists it out of loops). If the function refers to exactly one
	// table, the jump uses it.
	var only []int
	n := 0
	for i := fn.Start; i < fn.End; i++ {
		in := &s.Insts[i]
		for _, fr := range in.Relocs {
			sec, t, ok := relocTarget(ti.o.File, s, in, fr)
			if !ok || t < 0 {
				continue
			}
			if tb := ti.byBase[tableKey{sec, uint64(t)}]; tb != nil && tb.code == s {
				n++
				only = tb.targets
			} else if ts := ti.absTable(sec, uint64(t), s); len(ts) > 0 {
				n++
				only = ts
			}
		}
	}
	if n == 1 {
		return dedup(only), true
	}
	return nil, false
}

func dedup(xs []int) []int {
	var out []int
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
