package emit

import (
	"hijack/elfobj"
	"hijack/emit/debuginfo"
	"hijack/ibr"
)

// rewriteDebugInfo makes DWARF debug information follow moved code (see
// debuginfo.Rewrite) and returns the rebuilt sections for applyRebuilt.
func rewriteDebugInfo(f *elfobj.File, maps map[int]*codeMap, warn func(string)) (map[int]*rebuiltSection, error) {
	dm := make(map[int]debuginfo.CodeMap, len(maps))
	for k, m := range maps {
		dm[k] = m
	}
	secs, err := debuginfo.Rewrite(f, dm, warn)
	if err != nil || secs == nil {
		return nil, err
	}
	res := make(map[int]*rebuiltSection, len(secs))
	for idx, s := range secs {
		res[idx] = &rebuiltSection{idx: idx, Section: *s}
	}
	return res, nil
}

// AddrOf maps an old section offset (debuginfo.CodeMap).
func (m *codeMap) AddrOf(off uint64) (uint64, error) { return m.addrOf(off) }

// InstAt describes the instruction whose old encoding holds off
// (debuginfo.CodeMap).
func (m *codeMap) InstAt(off uint64) (debuginfo.Inst, bool) {
	i := m.sec.Find(off)
	if i < 0 || i >= len(m.sec.Insts) || m.sec.Insts[i].Kind != ibr.Code {
		return debuginfo.Inst{}, false
	}
	in := &m.sec.Insts[i]
	return debuginfo.Inst{Old: uint64(in.Off), OldLen: uint64(in.Len), New: uint64(m.inst[i]), NewLen: m.encLen(i)}, true
}

var _ debuginfo.CodeMap = (*codeMap)(nil)
