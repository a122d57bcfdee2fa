package debuginfo

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"hijack/elfobj"
	"hijack/ibr"
	"hijack/internal/leb128"
)

// This file holds the small DWARF reader debug information rewriting
// needs: relocation-aware field access, abbreviation tables, unit headers
// and a DIE walker that reports, for every attribute, its form, the offset
// of its field and its raw value. debug/dwarf hides all three.

// DWARF forms.
const (
	dwFormAddr          = 0x01
	dwFormBlock2        = 0x03
	dwFormBlock4        = 0x04
	dwFormData2         = 0x05
	dwFormData4         = 0x06
	dwFormData8         = 0x07
	dwFormString        = 0x08
	dwFormBlock         = 0x09
	dwFormBlock1        = 0x0a
	dwFormData1         = 0x0b
	dwFormFlag          = 0x0c
	dwFormSdata         = 0x0d
	dwFormStrp          = 0x0e
	dwFormUdata         = 0x0f
	dwFormRefAddr       = 0x10
	dwFormRef1          = 0x11
	dwFormRef2          = 0x12
	dwFormRef4          = 0x13
	dwFormRef8          = 0x14
	dwFormRefUdata      = 0x15
	dwFormIndirect      = 0x16
	dwFormSecOffset     = 0x17
	dwFormExprloc       = 0x18
	dwFormFlagPresent   = 0x19
	dwFormStrx          = 0x1a
	dwFormAddrx         = 0x1b
	dwFormRefSup4       = 0x1c
	dwFormStrpSup       = 0x1d
	dwFormData16        = 0x1e
	dwFormLineStrp      = 0x1f
	dwFormRefSig8       = 0x20
	dwFormImplicitConst = 0x21
	dwFormLoclistx      = 0x22
	dwFormRnglistx      = 0x23
	dwFormRefSup8       = 0x24
	dwFormStrx1         = 0x25
	dwFormStrx2         = 0x26
	dwFormStrx3         = 0x27
	dwFormStrx4         = 0x28
	dwFormAddrx1        = 0x29
	dwFormAddrx2        = 0x2a
	dwFormAddrx3        = 0x2b
	dwFormAddrx4        = 0x2c
	dwFormGNUAddrIndex  = 0x1f01
	dwFormGNUStrIndex   = 0x1f02
	dwFormGNURefAlt     = 0x1f20
	dwFormGNUStrpAlt    = 0x1f21
)

// DWARF attributes the rewriter looks at.
const (
	dwAtLocation           = 0x02
	dwAtStmtList           = 0x10
	dwAtLowPC              = 0x11
	dwAtHighPC             = 0x12
	dwAtStringLength       = 0x19
	dwAtReturnAddr         = 0x2a
	dwAtStartScope         = 0x2c
	dwAtDataMemberLocation = 0x38
	dwAtFrameBase          = 0x40
	dwAtSegment            = 0x46
	dwAtStaticLink         = 0x48
	dwAtUseLocation        = 0x4a
	dwAtVtableElemLocation = 0x4d
	dwAtEntryPC            = 0x52
	dwAtRanges             = 0x55
	dwAtAddrBase           = 0x73
	dwAtRnglistsBase       = 0x74
	dwAtCallReturnPC       = 0x7d
	dwAtCallPC             = 0x81
	dwAtLoclistsBase       = 0x8c
	dwAtGNULocviews        = 0x2137
)

// dwIsLoclistAttr reports whether an attribute may be of class loclist.
func dwIsLoclistAttr(at uint64) bool {
	switch at {
	case dwAtLocation, dwAtStringLength, dwAtReturnAddr, dwAtDataMemberLocation, dwAtFrameBase,
		dwAtSegment, dwAtStaticLink, dwAtUseLocation, dwAtVtableElemLocation:
		return true
	}
	return false
}

// dwIsConstForm reports whether a form is of class constant (an unsigned
// value stored in the DIE).
func dwIsConstForm(form uint64) bool {
	switch form {
	case dwFormData1, dwFormData2, dwFormData4, dwFormData8, dwFormUdata, dwFormSdata, dwFormImplicitConst:
		return true
	}
	return false
}

// codeLoc is a location an address field designates: an offset in code
// section sec, or an absolute value when sec is 0 (no relocation, or a
// relocation against something this object does not define).
type codeLoc struct {
	sec int
	off uint64
}

// debugRewrite holds what the rewriting of all debug sections shares.
type debugRewrite struct {
	f    *elfobj.File
	maps map[int]CodeMap
	// rel[sec][off] is the relocation whose field is at off in section
	// sec, as read (the relocations have not changed yet).
	rel map[int]map[uint64]elfobj.Rela
	// targets[sec] lists every offset of section sec that a relocation
	// (symbol+addend) designates: rewritten tables must keep them mapped.
	targets map[int][]uint64
	byName  map[string][]int
	warns   []string
	// raw holds the uncompressed contents of compressed debug sections;
	// bad says why a section cannot be read.
	raw   map[int][]byte
	align map[int]uint64
	bad   map[int]string
}

// data returns the contents of section sec, uncompressed.
func (d *debugRewrite) data(sec int) []byte {
	if b, ok := d.raw[sec]; ok {
		return b
	}
	return d.f.Sections[sec].Data
}

// readable returns an error if section sec cannot be read.
func (d *debugRewrite) readable(sec int) error {
	if why, ok := d.bad[sec]; ok {
		return fmt.Errorf("%s", why)
	}
	return nil
}

// decompress reads the compressed debug sections (SHF_COMPRESSED, zlib).
func (d *debugRewrite) decompress() {
	for i, s := range d.f.Sections {
		if s.Flags&elf.SHF_COMPRESSED == 0 || !strings.HasPrefix(s.Name, ".debug") {
			continue
		}
		if len(s.Data) < 24 {
			d.bad[i] = "truncated compression header"
			continue
		}
		typ := elf.CompressionType(le32(s.Data))
		size := binary.LittleEndian.Uint64(s.Data[8:])
		align := binary.LittleEndian.Uint64(s.Data[16:])
		if align&(align-1) != 0 || align > 1<<32 {
			// It becomes sh_addralign if the section is rewritten.
			d.bad[i] = fmt.Sprintf("compression header alignment 0x%x is not a power of two up to 2^32", align)
			continue
		}
		if typ != elf.COMPRESS_ZLIB {
			d.bad[i] = fmt.Sprintf("compressed with %s, which is not supported", typ)
			continue
		}
		// DWARF compresses 2-6 times with zlib; a size far beyond that is
		// a corrupt header or a zlib bomb, and the section is left alone
		// rather than inflated.
		if limit := maxInflate * uint64(len(s.Data)); size > limit {
			d.bad[i] = fmt.Sprintf("uncompressed size 0x%x is more than %d times the compressed size", size, maxInflate)
			continue
		}
		zr, err := zlib.NewReader(bytes.NewReader(s.Data[24:]))
		if err != nil {
			d.bad[i] = fmt.Sprintf("bad zlib data: %v", err)
			continue
		}
		b, err := io.ReadAll(io.LimitReader(zr, int64(size)+1))
		if err != nil || uint64(len(b)) != size {
			d.bad[i] = "bad zlib data"
			continue
		}
		d.raw[i] = b
		d.align[i] = align
	}
}

// maxInflate bounds the compression ratio of debug sections hijack
// inflates (zlib's own limit is about 1000).
const maxInflate = 64

// uncompressed marks a rewritten section as no longer compressed: it is
// written back uncompressed, which the output size limit allows for.
func (d *debugRewrite) uncompressed(sec int) {
	raw, ok := d.raw[sec]
	if !ok {
		return
	}
	s := d.f.Sections[sec]
	if d.f.MaxSize != 0 {
		d.f.MaxSize += uint64(len(raw))
	}
	s.Flags &^= elf.SHF_COMPRESSED
	s.Align = max(d.align[sec], 1)
}

func newDebugRewrite(f *elfobj.File, maps map[int]CodeMap) *debugRewrite {
	d := &debugRewrite{f: f, maps: maps, rel: make(map[int]map[uint64]elfobj.Rela),
		targets: make(map[int][]uint64), byName: make(map[string][]int),
		raw: make(map[int][]byte), align: make(map[int]uint64), bad: make(map[int]string)}
	d.decompress()
	for i, s := range f.Sections {
		d.byName[s.Name] = append(d.byName[s.Name], i)
		if s.Type != elf.SHT_RELA {
			continue
		}
		m := d.rel[int(s.Info)]
		if m == nil {
			m = make(map[uint64]elfobj.Rela)
			d.rel[int(s.Info)] = m
		}
		for _, r := range s.Relocs {
			m[r.Off] = r
			if int(r.Sym) >= len(f.Symbols) || ibr.ClassOf(r.Type) == ibr.RelocOther {
				continue
			}
			sym := &f.Symbols[r.Sym]
			if sym.Shndx == elfobj.ShnUndef || sym.Shndx >= 0xffff0000 {
				continue
			}
			if t := int64(sym.Value) + r.Addend; t >= 0 {
				d.targets[int(sym.Shndx)] = append(d.targets[int(sym.Shndx)], uint64(t))
			}
			d.targets[int(sym.Shndx)] = append(d.targets[int(sym.Shndx)], sym.Value)
		}
	}
	return d
}

// section returns the index of the only section called name, 0 if there is
// none, -1 if there are several.
func (d *debugRewrite) section(name string) int {
	switch l := d.byName[name]; len(l) {
	case 0:
		return 0
	case 1:
		return l[0]
	}
	return -1
}

func (d *debugRewrite) warnf(format string, args ...any) {
	d.warns = append(d.warns, fmt.Sprintf(format, args...))
}

// reloc returns the relocation whose field is at off in section sec.
func (d *debugRewrite) reloc(sec int, off uint64) (elfobj.Rela, bool) {
	r, ok := d.rel[sec][off]
	return r, ok
}

// hasRelocIn reports whether a relocation patches a byte in [lo, hi) of
// section sec.
func (d *debugRewrite) hasRelocIn(sec int, lo, hi uint64) bool {
	for o := lo; o < hi; o++ {
		if _, ok := d.rel[sec][o]; ok {
			return true
		}
	}
	return false
}

// locAt returns the location of the address field at off in section sec
// whose stored value is raw.
func (d *debugRewrite) locAt(sec int, off, raw uint64) (codeLoc, error) {
	r, ok := d.reloc(sec, off)
	if !ok {
		return codeLoc{0, raw}, nil
	}
	if ibr.ClassOf(r.Type) != ibr.RelocAbs {
		return codeLoc{}, fmt.Errorf("address field at 0x%x has a %s relocation", off, r.Type)
	}
	sym := &d.f.Symbols[r.Sym]
	if sym.Shndx == elfobj.ShnUndef || sym.Shndx >= 0xffff0000 {
		// An external or absolute symbol: nothing moved code affects.
		return codeLoc{0, raw}, nil
	}
	s, t, err := d.f.Target(r)
	if err != nil {
		return codeLoc{}, err
	}
	return codeLoc{s, t}, nil
}

// secRef returns the section and offset an offset field (DW_FORM_sec_offset
// and the like) at off in section sec designates; without a relocation the
// raw value is an offset into the section called dflt.
func (d *debugRewrite) secRef(sec int, off, raw uint64, dflt string) (int, uint64, error) {
	if r, ok := d.reloc(sec, off); ok {
		if ibr.ClassOf(r.Type) != ibr.RelocAbs {
			return 0, 0, fmt.Errorf("offset field at 0x%x has a %s relocation", off, r.Type)
		}
		return d.f.Target(r)
	}
	s := d.section(dflt)
	if s <= 0 {
		return 0, 0, fmt.Errorf("offset field at 0x%x has no relocation and there is no single %s", off, dflt)
	}
	return s, raw, nil
}

// moved reports whether a location lies in rewritten code.
func (d *debugRewrite) moved(l codeLoc) bool { return l.sec != 0 && d.maps[l.sec] != nil }

// mapLoc returns the new offset of a location.
func (d *debugRewrite) mapLoc(l codeLoc) (uint64, error) {
	if !d.moved(l) {
		return l.off, nil
	}
	return mapDebugAddr(d.maps[l.sec], l.off)
}

// mapDebugAddr maps an old offset of a code section as debug information
// needs it. Instruction starts map like AddrOf, to the code inserted before
// the instruction. Debug information also designates bytes inside an
// instruction: gcc ends location ranges at the last byte of a call
// (.LVLn-1), so that the range covers the call but not the return
// address. Such a byte maps to the same byte of the instruction's new
// encoding; the last byte stays the last byte when a branch grew.
func mapDebugAddr(m CodeMap, off uint64) (uint64, error) {
	n, err := m.AddrOf(off)
	if err == nil {
		return n, nil
	}
	in, ok := m.InstAt(off)
	if !ok {
		return 0, err
	}
	delta := off - in.Old
	if delta == in.OldLen-1 || delta >= in.NewLen {
		return in.New + in.NewLen - 1, nil
	}
	return in.New + delta, nil
}

// mapDelta returns the new distance from base to base+delta.
func (d *debugRewrite) mapDelta(base codeLoc, delta uint64) (uint64, error) {
	if !d.moved(base) {
		return delta, nil
	}
	nb, err := d.mapLoc(base)
	if err != nil {
		return 0, err
	}
	ne, err := d.mapLoc(codeLoc{base.sec, base.off + delta})
	if err != nil {
		return 0, err
	}
	if ne < nb {
		return 0, fmt.Errorf("range at %s+0x%x runs backwards after rewriting", d.f.SectionName(base.sec), base.off)
	}
	return ne - nb, nil
}

// dwReader reads little-endian DWARF data with bounds checks.
type dwReader struct {
	b   []byte
	p   uint64
	err error
}

func (r *dwReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *dwReader) need(n uint64) bool {
	if r.err != nil {
		return false
	}
	if n > uint64(len(r.b)) || r.p > uint64(len(r.b))-n {
		r.fail(errShort)
		return false
	}
	return true
}

func (r *dwReader) u8() uint64 {
	if !r.need(1) {
		return 0
	}
	r.p++
	return uint64(r.b[r.p-1])
}

func (r *dwReader) u16() uint64 {
	if !r.need(2) {
		return 0
	}
	r.p += 2
	return uint64(binary.LittleEndian.Uint16(r.b[r.p-2:]))
}

func (r *dwReader) u24() uint64 {
	if !r.need(3) {
		return 0
	}
	r.p += 3
	b := r.b[r.p-3:]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16
}

func (r *dwReader) u32() uint64 {
	if !r.need(4) {
		return 0
	}
	r.p += 4
	return uint64(le32(r.b[r.p-4:]))
}

func (r *dwReader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	r.p += 8
	return binary.LittleEndian.Uint64(r.b[r.p-8:])
}

// uN reads an n-byte unsigned value (1, 2, 4 or 8).
func (r *dwReader) uN(n int) uint64 {
	switch n {
	case 1:
		return r.u8()
	case 2:
		return r.u16()
	case 4:
		return r.u32()
	case 8:
		return r.u64()
	}
	r.fail(fmt.Errorf("unsupported field width %d", n))
	return 0
}

func (r *dwReader) uleb() uint64 {
	if r.err != nil {
		return 0
	}
	if r.p > uint64(len(r.b)) {
		r.fail(errShort)
		return 0
	}
	v, n, err := leb128.ReadUleb(r.b[r.p:])
	if err != nil {
		r.fail(err)
		return 0
	}
	r.p += uint64(n)
	return v
}

func (r *dwReader) sleb() int64 {
	if r.err != nil {
		return 0
	}
	if r.p > uint64(len(r.b)) {
		r.fail(errShort)
		return 0
	}
	v, n, err := leb128.ReadSleb(r.b[r.p:])
	if err != nil {
		r.fail(err)
		return 0
	}
	r.p += uint64(n)
	return v
}

func (r *dwReader) skip(n uint64) {
	if r.need(n) {
		r.p += n
	}
}

func (r *dwReader) cstring() {
	if r.err != nil {
		return
	}
	for r.p < uint64(len(r.b)) {
		r.p++
		if r.b[r.p-1] == 0 {
			return
		}
	}
	r.fail(errShort)
}

// initialLength reads a unit length; it returns the length, the size of
// offsets in the unit (4 or 8) and the offset of the unit's end.
func (r *dwReader) initialLength() (length uint64, offSize int, end uint64) {
	length, offSize = r.u32(), 4
	if length == 0xffffffff {
		length, offSize = r.u64(), 8
	} else if length >= 0xfffffff0 {
		r.fail(fmt.Errorf("reserved unit length 0x%x", length))
	}
	if r.err == nil && (length > uint64(len(r.b)) || r.p > uint64(len(r.b))-length) {
		r.fail(fmt.Errorf("unit length 0x%x beyond the section", length))
	}
	return length, offSize, r.p + length
}

// dwAbbrevAttr is one attribute specification of an abbreviation.
type dwAbbrevAttr struct {
	name, form uint64
	implicit   int64
}

type dwAbbrev struct {
	tag   uint64
	attrs []dwAbbrevAttr
}

// dwParseAbbrevs reads the abbreviation table at off.
func dwParseAbbrevs(b []byte, off uint64) (map[uint64]*dwAbbrev, error) {
	r := &dwReader{b: b, p: off}
	tab := make(map[uint64]*dwAbbrev)
	for {
		code := r.uleb()
		if r.err != nil {
			return nil, fmt.Errorf("abbreviation table at 0x%x: %w", off, r.err)
		}
		if code == 0 {
			return tab, nil
		}
		a := &dwAbbrev{tag: r.uleb()}
		r.u8() // children
		for {
			name, form := r.uleb(), r.uleb()
			if r.err != nil {
				return nil, fmt.Errorf("abbreviation table at 0x%x: %w", off, r.err)
			}
			if name == 0 && form == 0 {
				break
			}
			at := dwAbbrevAttr{name: name, form: form}
			if form == dwFormImplicitConst {
				at.implicit = r.sleb()
			}
			a.attrs = append(a.attrs, at)
		}
		tab[code] = a
	}
}

// dwUnit is one unit of .debug_info with what its unit DIE says.
type dwUnit struct {
	sec      int
	off, end uint64
	version  int
	unitType uint64
	addrSize int
	offSize  int
	abbrevs  map[uint64]*dwAbbrev
	dies     uint64 // offset of the first DIE

	base                   codeLoc // DW_AT_low_pc of the unit DIE
	hasBase                bool
	addrBase               uint64 // in section addrSec
	addrSec                int
	hasAddrBase            bool
	rngBase, locBase       uint64
	rngBaseSec, locBaseSec int
	hasRngBase, hasLocBase bool
}

// dwAttr is one attribute of one DIE.
type dwAttr struct {
	name, form uint64
	off        uint64 // offset of the field in the section
	size       uint64 // size of the field
	val        uint64 // value of constant, reference, index and offset forms
}

// dwDIE is one debugging information entry.
type dwDIE struct {
	off   uint64
	tag   uint64
	attrs []dwAttr
}

func (e *dwDIE) find(name uint64) *dwAttr {
	for i := range e.attrs {
		if e.attrs[i].name == name {
			return &e.attrs[i]
		}
	}
	return nil
}

// readForm reads the value of one attribute of the given form.
func (u *dwUnit) readForm(r *dwReader, form uint64, implicit int64) (val uint64) {
	for depth := 0; ; depth++ {
		if form != dwFormIndirect {
			break
		}
		if depth > 4 {
			r.fail(errors.New("nested DW_FORM_indirect"))
			return 0
		}
		form = r.uleb()
	}
	switch form {
	case dwFormAddr:
		return r.uN(u.addrSize)
	case dwFormData1, dwFormRef1, dwFormFlag, dwFormStrx1, dwFormAddrx1:
		return r.u8()
	case dwFormData2, dwFormRef2, dwFormStrx2, dwFormAddrx2:
		return r.u16()
	case dwFormStrx3, dwFormAddrx3:
		return r.u24()
	case dwFormData4, dwFormRef4, dwFormRefSup4, dwFormStrx4, dwFormAddrx4:
		return r.u32()
	case dwFormData8, dwFormRef8, dwFormRefSig8, dwFormRefSup8:
		return r.u64()
	case dwFormData16:
		r.skip(16)
	case dwFormUdata, dwFormRefUdata, dwFormStrx, dwFormAddrx, dwFormLoclistx, dwFormRnglistx, dwFormGNUAddrIndex, dwFormGNUStrIndex:
		return r.uleb()
	case dwFormSdata:
		return uint64(r.sleb())
	case dwFormString:
		r.cstring()
	case dwFormStrp, dwFormLineStrp, dwFormSecOffset, dwFormStrpSup, dwFormGNURefAlt, dwFormGNUStrpAlt:
		return r.uN(u.offSize)
	case dwFormRefAddr:
		if u.version <= 2 {
			return r.uN(u.addrSize)
		}
		return r.uN(u.offSize)
	case dwFormBlock1:
		n := r.u8()
		r.skip(n)
		return n
	case dwFormBlock2:
		n := r.u16()
		r.skip(n)
		return n
	case dwFormBlock4:
		n := r.u32()
		r.skip(n)
		return n
	case dwFormBlock, dwFormExprloc:
		n := r.uleb()
		r.skip(n)
		return n
	case dwFormFlagPresent:
		return 1
	case dwFormImplicitConst:
		return uint64(implicit)
	default:
		r.fail(fmt.Errorf("unknown form 0x%x", form))
	}
	return 0
}

// walkInfo reads every unit of a .debug_info section and calls fn for
// every DIE. The unit DIE comes first; the unit's fields derived from it
// (bases) are set before fn sees it.
func (d *debugRewrite) walkInfo(sec int, fn func(u *dwUnit, e *dwDIE) error) error {
	b := d.data(sec)
	abbrevCache := make(map[[2]uint64]map[uint64]*dwAbbrev)
	r := &dwReader{b: b}
	for r.p < uint64(len(b)) {
		u := &dwUnit{sec: sec, off: r.p}
		_, u.offSize, u.end = r.initialLength()
		u.version = int(r.u16())
		if r.err != nil {
			return fmt.Errorf("unit at 0x%x: %w", u.off, r.err)
		}
		if u.version < 2 || u.version > 5 {
			return fmt.Errorf("unit at 0x%x: DWARF version %d is not supported", u.off, u.version)
		}
		var abbrOff uint64
		abbrField := uint64(0)
		if u.version >= 5 {
			u.unitType = r.u8()
			u.addrSize = int(r.u8())
			abbrField = r.p
			abbrOff = r.uN(u.offSize)
			switch u.unitType {
			case 1, 3: // DW_UT_compile, DW_UT_partial
			case 4, 5: // DW_UT_skeleton, DW_UT_split_compile
				r.skip(8)
			case 2, 6: // DW_UT_type, DW_UT_split_type
				r.skip(8 + uint64(u.offSize))
			default:
				return fmt.Errorf("unit at 0x%x: unit type 0x%x is not supported", u.off, u.unitType)
			}
		} else {
			u.unitType = 1
			abbrField = r.p
			abbrOff = r.uN(u.offSize)
			u.addrSize = int(r.u8())
		}
		if r.err != nil {
			return fmt.Errorf("unit at 0x%x: %w", u.off, r.err)
		}
		if u.addrSize != 8 && u.addrSize != 4 {
			return fmt.Errorf("unit at 0x%x: address size %d is not supported", u.off, u.addrSize)
		}
		asec, aoff, err := d.secRef(sec, abbrField, abbrOff, ".debug_abbrev")
		if err != nil {
			return fmt.Errorf("unit at 0x%x: %w", u.off, err)
		}
		if err := d.readable(asec); err != nil {
			return fmt.Errorf("unit at 0x%x: %s: %w", u.off, d.f.SectionName(asec), err)
		}
		key := [2]uint64{uint64(asec), aoff}
		if u.abbrevs = abbrevCache[key]; u.abbrevs == nil {
			if u.abbrevs, err = dwParseAbbrevs(d.data(asec), aoff); err != nil {
				return fmt.Errorf("unit at 0x%x: %w", u.off, err)
			}
			abbrevCache[key] = u.abbrevs
		}
		u.dies = r.p
		ur := &dwReader{b: b[:u.end], p: r.p}
		first := true
		for ur.p < u.end {
			e := &dwDIE{off: ur.p}
			code := ur.uleb()
			if ur.err != nil {
				return fmt.Errorf("DIE at 0x%x: %w", e.off, ur.err)
			}
			if code == 0 {
				continue
			}
			ab := u.abbrevs[code]
			if ab == nil {
				return fmt.Errorf("DIE at 0x%x: unknown abbreviation code %d", e.off, code)
			}
			e.tag = ab.tag
			e.attrs = make([]dwAttr, 0, len(ab.attrs))
			for _, as := range ab.attrs {
				a := dwAttr{name: as.name, form: as.form, off: ur.p}
				if as.form == dwFormIndirect {
					a.form = ur.uleb()
					a.off = ur.p
				}
				a.val = u.readForm(ur, a.form, as.implicit)
				if ur.err != nil {
					return fmt.Errorf("DIE at 0x%x, attribute 0x%x: %w", e.off, as.name, ur.err)
				}
				a.size = ur.p - a.off
				e.attrs = append(e.attrs, a)
			}
			if first {
				first = false
				if err := d.unitBases(u, e); err != nil {
					return fmt.Errorf("unit at 0x%x: %w", u.off, err)
				}
			}
			if err := fn(u, e); err != nil {
				return err
			}
		}
		r.p = u.end
	}
	return nil
}

// unitBases reads the bases a unit DIE sets.
func (d *debugRewrite) unitBases(u *dwUnit, e *dwDIE) error {
	var err error
	if a := e.find(dwAtAddrBase); a != nil && a.form == dwFormSecOffset {
		if u.addrSec, u.addrBase, err = d.secRef(u.sec, a.off, a.val, ".debug_addr"); err != nil {
			return err
		}
		u.hasAddrBase = true
	}
	if a := e.find(dwAtRnglistsBase); a != nil && a.form == dwFormSecOffset {
		if u.rngBaseSec, u.rngBase, err = d.secRef(u.sec, a.off, a.val, ".debug_rnglists"); err != nil {
			return err
		}
		u.hasRngBase = true
	}
	if a := e.find(dwAtLoclistsBase); a != nil && a.form == dwFormSecOffset {
		if u.locBaseSec, u.locBase, err = d.secRef(u.sec, a.off, a.val, ".debug_loclists"); err != nil {
			return err
		}
		u.hasLocBase = true
	}
	if a := e.find(dwAtLowPC); a != nil {
		if u.base, err = d.addrAttr(u, a); err != nil {
			return err
		}
		u.hasBase = true
	} else {
		// No DW_AT_low_pc: the base address is 0 (DW_AT_ranges with
		// absolute addresses).
		u.hasBase = true
	}
	return nil
}

// addrAttr returns the location an attribute of class address designates.
func (d *debugRewrite) addrAttr(u *dwUnit, a *dwAttr) (codeLoc, error) {
	switch a.form {
	case dwFormAddr:
		return d.locAt(u.sec, a.off, a.val)
	case dwFormAddrx, dwFormAddrx1, dwFormAddrx2, dwFormAddrx3, dwFormAddrx4, dwFormGNUAddrIndex:
		return d.addrIndex(u, a.val)
	}
	return codeLoc{}, fmt.Errorf("attribute 0x%x has form 0x%x, not an address", a.name, a.form)
}

// addrIndex returns the location entry idx of the unit's .debug_addr table
// designates.
func (d *debugRewrite) addrIndex(u *dwUnit, idx uint64) (codeLoc, error) {
	if !u.hasAddrBase {
		return codeLoc{}, fmt.Errorf("address index %d in a unit without DW_AT_addr_base", idx)
	}
	if err := d.readable(u.addrSec); err != nil {
		return codeLoc{}, fmt.Errorf("%s: %w", d.f.SectionName(u.addrSec), err)
	}
	b := d.data(u.addrSec)
	if idx > uint64(len(b)) {
		return codeLoc{}, fmt.Errorf("address index %d beyond %s", idx, d.f.SectionName(u.addrSec))
	}
	off := u.addrBase + idx*uint64(u.addrSize)
	if off+uint64(u.addrSize) > uint64(len(b)) || off < u.addrBase {
		return codeLoc{}, fmt.Errorf("address index %d beyond %s", idx, d.f.SectionName(u.addrSec))
	}
	r := &dwReader{b: b, p: off}
	return d.locAt(u.addrSec, off, r.uN(u.addrSize))
}

// dwPutConst stores v in a constant field of the given form and size,
// keeping its size. It fails if v does not fit.
func dwPutConst(b []byte, form uint64, v uint64) error {
	switch form {
	case dwFormData1:
		if v > 0xff {
			return fmt.Errorf("0x%x does not fit in DW_FORM_data1", v)
		}
		b[0] = byte(v)
	case dwFormData2:
		if v > 0xffff {
			return fmt.Errorf("0x%x does not fit in DW_FORM_data2", v)
		}
		binary.LittleEndian.PutUint16(b, uint16(v))
	case dwFormData4:
		if v > 0xffffffff {
			return fmt.Errorf("0x%x does not fit in DW_FORM_data4", v)
		}
		put32(b, uint32(v))
	case dwFormData8:
		binary.LittleEndian.PutUint64(b, v)
	case dwFormUdata:
		if leb128.UlebLen(v) > len(b) {
			return fmt.Errorf("0x%x does not fit in %d bytes of DW_FORM_udata", v, len(b))
		}
		leb128.AppendUleb(b[:0], v, len(b))
	case dwFormSdata:
		if v >= 1<<63 || leb128.SlebLen(int64(v)) > len(b) {
			return fmt.Errorf("0x%x does not fit in %d bytes of DW_FORM_sdata", v, len(b))
		}
		leb128.AppendSleb(b[:0], int64(v), len(b))
	default:
		return fmt.Errorf("form 0x%x cannot be rewritten in place", form)
	}
	return nil
}
