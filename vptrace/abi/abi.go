// Package abi is the one definition of the vptrace ABI in Go: the records
// hijack's vptrace preset emits into every instrumented object (the object
// descriptor, struct vpt_object, and its site records, struct vpt_site),
// the events the runtime records (struct vpt_event, also a Raw chunk's
// events in a trace file), and the constants that go with them (magic,
// version, sizes, descriptor flags, site kinds and segments, the encodings
// of a site's block field).
//
// The preset (package vptrace), the trace reader (vptrace/trace) and the
// runtime's Go side (vptrace/runtime) use these types and constants and
// have no copies of their own. The C side (vptrace/runtime/vptrace.h and
// rt.h) is written by hand for its readers and checked against this
// package by a test (TestCLayout, c_test.go) that compiles a C program
// printing every field's offset, size and signedness and every constant,
// so a drift between the two fails. vptrace/ABI.md describes the contract
// in prose.
//
// Every record is little-endian with no padding: the Go struct layouts
// equal the C ones field for field (offsets and sizes), which the tests
// check too. Marshal and the Unmarshal functions convert between the
// structs and their bytes.
package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Object descriptor constants.
const (
	// Magic is vpt_object.magic: "VPT1" little-endian.
	Magic uint32 = 0x31545056
	// Version is vpt_object.version (VPTRACE_ABI_VERSION).
	Version uint32 = 1

	// ObjectSize is sizeof(struct vpt_object). (Descriptors of 48 bytes,
	// without the packed fields, and of 56, without the slot count, are
	// read as before: FlagPacked and FlagSlots say whether the fields
	// exist.)
	ObjectSize = 64
	// SiteSize is sizeof(struct vpt_site); site k is at sites[0] + k*SiteSize.
	SiteSize = 32
	// EventSize is sizeof(struct vpt_event).
	EventSize = 24

	// MaxSites bounds vpt_object.nsites: the runtime accepts fewer.
	MaxSites = 1 << 24
	// MaxSlots bounds vpt_object.nslots: at most two slots a site.
	MaxSlots = 2 * MaxSites
	// MaxStrs bounds vpt_object.nstrs: the runtime accepts fewer.
	MaxStrs = 1 << 28
	// MaxObjects is how many registrations the runtime keeps (VPT_MAXOBJ).
	MaxObjects = 65536

	// NoSym is vpt_site.sym for a site that names no variable.
	NoSym uint32 = 0xffffffff

	// PageShift: page numbers (slots, events) are addresses >> PageShift.
	PageShift = 12
	// PageSize is 1 << PageShift.
	PageSize = 1 << PageShift
)

// Flags is vpt_object.flags.
type Flags uint32

// Descriptor flags (ABI.md "Per-thread last-page slots", "Fork").
const (
	// FlagIE: the slots (with FlagIndirect: their word) are initial-exec
	// TLS; without it, local-exec.
	FlagIE Flags = 1
	// FlagSlotsTPOFF: Reserved holds the TPOFF of the slots (an
	// executable's __vpt_slots_<id>): a fork child zeroes them. Optional.
	FlagSlotsTPOFF Flags = 2
	// FlagIndirect: tls indirect. The slots' TLS word holds the address
	// of this thread's slot array, which the runtime maps (vpt_slots).
	FlagIndirect Flags = 4
	// FlagPacked: PackedRel and PackedLen give the site records and the
	// string table (the OBJECT chunk's payload after its 64-byte header)
	// as a raw DEFLATE stream that hijack compressed, which the runtime
	// writes as it is instead of compressing the table at every process
	// start (ABI.md "Per-object data").
	FlagPacked Flags = 8
	// FlagSlots: NSlots is the number of last-page slots, at least NSites:
	// the sites' own and the second slots some sites have (ABI.md "Second
	// slots"), which a fork child zeroes and the runtime maps for tls
	// indirect. Without it there are NSites slots. Implies FlagPacked's
	// fields exist (0 when not packed).
	FlagSlots Flags = 16
	// FlagEpoch: EpochRel gives the object's epoch word (8 bytes of its
	// writable data), which the runtime keeps equal to the cache epoch
	// (vpt_probe_hot's, ProbeEpochOff) from registration on: the object's
	// cache probes add it to their keys from there, RIP-relative, instead
	// of loading the hot line's address from the GOT first (ABI.md "The
	// inline cache probe"). Implies FlagSlots' field exists.
	FlagEpoch Flags = 32
	// FlagKinds: NSites bytes follow the packed table (with FlagPacked),
	// else the string table: each site's kind, as in its record, so that
	// the runtime copies them (it keeps every object's kinds for the
	// aggregator, past a dlclose) without reading every record of the
	// site table at every process start (ABI.md "Per-object data").
	FlagKinds Flags = 64
)

// Kind is vpt_site.kind: the kind of access and how the runtime records it.
type Kind uint8

// Kinds and kind bits.
const (
	KindRead  Kind = 0x01
	KindWrite Kind = 0x02
	KindRMW   Kind = KindRead | KindWrite // read-modify-write
	// KindExact: a site of exact mode: the runtime records every event
	// (no recent-page cache, no range memo).
	KindExact Kind = 0x04
	// KindDynStep: with KindRange, a sweep whose step the runtime reads
	// from a register (vpt_range_dyn; Block holds DynStep).
	KindDynStep Kind = 0x08
	// KindRepSrc: a rep string operation's source range, from rsi (vpt_rep).
	KindRepSrc Kind = 0x10
	// KindRepDest: a rep string operation's destination range, from rdi.
	KindRepDest Kind = 0x20
	// KindRange: a loop sweep reported as one range per loop run
	// (vpt_range); Block holds the step when it exceeds a page, else 0.
	KindRange Kind = 0x40
	// KindVec: vector elements (vpt_vec); Block holds the VecDesc.
	KindVec Kind = 0x80
)

func (k Kind) String() string {
	var s string
	switch k & KindRMW {
	case KindRead:
		s = "read"
	case KindWrite:
		s = "write"
	case KindRMW:
		s = "rmw"
	default:
		s = "unknown"
	}
	if k&KindExact != 0 {
		s += ",exact"
	}
	if k&KindRepSrc != 0 {
		s += ",rep-src"
	}
	if k&KindRepDest != 0 {
		s += ",rep-dst"
	}
	if k&KindRange != 0 {
		s += ",range"
	}
	if k&KindDynStep != 0 {
		s += ",register-step"
	}
	if k&KindVec != 0 {
		s += ",vector"
	}
	return s
}

// Segment is vpt_site.seg: what the preset knows of the accessed memory
// from the operand's form. A relocation names a global or a TLS variable,
// rsp/rbp addresses the stack; an address computed in a register (a
// pointer: the heap, but as well a global array passed to a function,
// another thread's stack, an mmap'ed file) is SegUnknown.
type Segment uint8

// Segments.
const (
	SegUnknown Segment = 0 // a pointer in a register: heap, global or stack
	SegGlobal  Segment = 1 // .data, .bss, .rodata: RIP-relative or absolute symbol
	SegStack   Segment = 2 // rsp- or frame-pointer-based
	SegTLS     Segment = 3 // a thread-local variable
)

func (s Segment) String() string {
	switch s {
	case SegUnknown:
		return "unknown"
	case SegGlobal:
		return "global"
	case SegStack:
		return "stack"
	case SegTLS:
		return "tls"
	}
	return fmt.Sprintf("seg%d", uint8(s))
}

// Object is struct vpt_object, the descriptor at the start of an
// instrumented object's .vptrace section. The c tags name the C fields.
type Object struct {
	Magic    uint32 `c:"magic"`     // Magic
	Version  uint32 `c:"version"`   // Version
	NSites   uint32 `c:"nsites"`    // below MaxSites
	Flags    Flags  `c:"flags"`     // Flag*
	SitesRel int32  `c:"sites_rel"` // address of sites[0] minus the address of this field
	StrsRel  int32  `c:"strs_rel"`  // address of the string table minus the address of this field
	Name     uint32 `c:"name"`      // offset in the strings: the object file name given to hijack
	NStrs    uint32 `c:"nstrs"`     // size of the string table in bytes (below MaxStrs)
	ID       uint64 `c:"id"`        // FNV-1a hash of the object's original bytes
	Reserved uint64 `c:"reserved"`  // 0, or with FlagSlotsTPOFF the slots' TPOFF
	// With FlagPacked: the address of the packed table minus the address
	// of this field, and its length in bytes.
	PackedRel int32  `c:"packed_rel"`
	PackedLen uint32 `c:"packed_len"`
	// With FlagSlots: the number of slots (below MaxSlots).
	NSlots uint32 `c:"nslots"`
	// With FlagEpoch: the address of the object's epoch word minus the
	// address of this field; else 0.
	EpochRel int32 `c:"epoch_rel"`
}

// Slots returns the number of last-page slots o's object has.
func (o *Object) Slots() uint32 {
	if o.Flags&FlagSlots != 0 {
		return o.NSlots
	}
	return o.NSites
}

// Offsets of the descriptor's PC-relative fields, which the sites and
// strings are counted from.
const (
	ObjectSitesRelOff  = 16
	ObjectStrsRelOff   = 20
	ObjectPackedRelOff = 48
	ObjectEpochRelOff  = 60
)

// Site is struct vpt_site, one instrumented access (sites[k] is site k).
type Site struct {
	Func    uint32  `c:"func"`     // offset in the strings: the function's name
	InsnOff uint32  `c:"insn_off"` // the instruction's offset from the function start, in the original object
	Sym     uint32  `c:"sym"`      // offset in the strings: the variable a relocation names, or NoSym
	SymOff  int32   `c:"sym_off"`  // offset from that variable's start
	Kind    Kind    `c:"kind"`     // Kind*
	Seg     Segment `c:"seg"`      // Seg*
	Size    uint16  `c:"size"`     // access size in bytes; rep string operations: the element size; sweeps: the bytes of one access
	Covers  uint32  `c:"covers"`   // accesses of its block this site stands for
	Block   uint32  `c:"block"`    // block index; KindRange: the step or DynStep; KindVec: the VecDesc
	Score   uint32  `c:"score"`    // the block's loop score * 1e6
}

// SiteKindOff is the offset of vpt_site.kind (the runtime's stubs read it).
const SiteKindOff = 16

// Event is struct vpt_event: one recorded page change, as the runtime's
// stubs write it into a thread's buffer and as a Raw chunk holds it.
type Event struct {
	Page1 uint64 `c:"page1"` // page number + 1 (0: never written)
	Site  uint64 `c:"site"`  // address of the struct vpt_site; 0: the slot was not written
	Time  uint64 `c:"time"`  // ns since trace start
}

// DynStep encodes a register step (KindRange|KindDynStep) in a site's
// Block: the register's hardware number in bits 24-31 and the multiplier
// (bytes per unit of the register, negative for a subtraction) as a signed
// 24-bit number in bits 0-23.
func DynStep(reg uint8, mult int64) uint32 {
	return uint32(reg)<<24 | uint32(mult)&0xffffff
}

// DecodeDynStep is DynStep's inverse.
func DecodeDynStep(block uint32) (reg uint8, mult int64) {
	return uint8(block >> 24), int64(int32(block<<8) >> 8)
}

// VecDesc is a vector site's Block (KindVec, ABI.md "Vector accesses").
type VecDesc uint32

// Vector descriptor fields: shifts, widths and flag bits.
const (
	VecIndexReg   VecDesc = 0x1f    // bits 0-4: the index vector register (gathers)
	VecGather     VecDesc = 1 << 5  // per-element indices (VSIB)
	VecScaleShift         = 6       // bits 6-7: log2 of the index scale
	VecQwordIndex VecDesc = 1 << 8  // the indices are qwords (else dwords)
	VecCountShift         = 9       // bits 9-14: the number of elements
	VecMaskShift          = 15      // bits 15-19: the mask vector register
	VecMasked     VecDesc = 1 << 20 // an element is accessed only if its mask element's sign bit is set
)

// Vec builds a vector descriptor.
func Vec(indexReg uint32, gather bool, scaleLog2 uint32, qwordIndex bool, count int, maskReg uint32, masked bool) VecDesc {
	d := VecDesc(indexReg&0x1f) | VecDesc(scaleLog2&3)<<VecScaleShift |
		VecDesc(uint32(count)&0x3f)<<VecCountShift | VecDesc(maskReg&0x1f)<<VecMaskShift
	if gather {
		d |= VecGather
	}
	if qwordIndex {
		d |= VecQwordIndex
	}
	if masked {
		d |= VecMasked
	}
	return d
}

// Fields of a vector descriptor.
func (d VecDesc) IndexReg() uint32  { return uint32(d & VecIndexReg) }
func (d VecDesc) ScaleLog2() uint32 { return uint32(d>>VecScaleShift) & 3 }
func (d VecDesc) Count() int        { return int(d>>VecCountShift) & 0x3f }
func (d VecDesc) MaskReg() uint32   { return uint32(d>>VecMaskShift) & 0x1f }

var le = binary.LittleEndian

// Append appends the descriptor's bytes to dst.
func (o *Object) Append(dst []byte) []byte {
	dst = le.AppendUint32(dst, o.Magic)
	dst = le.AppendUint32(dst, o.Version)
	dst = le.AppendUint32(dst, o.NSites)
	dst = le.AppendUint32(dst, uint32(o.Flags))
	dst = le.AppendUint32(dst, uint32(o.SitesRel))
	dst = le.AppendUint32(dst, uint32(o.StrsRel))
	dst = le.AppendUint32(dst, o.Name)
	dst = le.AppendUint32(dst, o.NStrs)
	dst = le.AppendUint64(dst, o.ID)
	dst = le.AppendUint64(dst, o.Reserved)
	dst = le.AppendUint32(dst, uint32(o.PackedRel))
	dst = le.AppendUint32(dst, o.PackedLen)
	dst = le.AppendUint32(dst, o.NSlots)
	return le.AppendUint32(dst, uint32(o.EpochRel))
}

// Marshal returns the descriptor's ObjectSize bytes.
func (o *Object) Marshal() []byte { return o.Append(make([]byte, 0, ObjectSize)) }

// ErrShort: fewer bytes than the record's size.
var ErrShort = errors.New("vptrace abi: record truncated")

// UnmarshalObject decodes a descriptor from the first ObjectSize bytes of b.
func UnmarshalObject(b []byte) (Object, error) {
	if len(b) < ObjectSize {
		return Object{}, fmt.Errorf("object descriptor: %d bytes, want %d: %w", len(b), ObjectSize, ErrShort)
	}
	return Object{
		Magic:     le.Uint32(b[0:]),
		Version:   le.Uint32(b[4:]),
		NSites:    le.Uint32(b[8:]),
		Flags:     Flags(le.Uint32(b[12:])),
		SitesRel:  int32(le.Uint32(b[16:])),
		StrsRel:   int32(le.Uint32(b[20:])),
		Name:      le.Uint32(b[24:]),
		NStrs:     le.Uint32(b[28:]),
		ID:        le.Uint64(b[32:]),
		Reserved:  le.Uint64(b[40:]),
		PackedRel: int32(le.Uint32(b[48:])),
		PackedLen: le.Uint32(b[52:]),
		NSlots:    le.Uint32(b[56:]),
		EpochRel:  int32(le.Uint32(b[60:])),
	}, nil
}

// Check reports why the runtime would refuse the descriptor (ABI.md,
// "Registration"), or nil.
func (o *Object) Check() error {
	switch {
	case o.Magic != Magic:
		return fmt.Errorf("object descriptor: magic %#x, want %#x", o.Magic, Magic)
	case o.Version != Version:
		return fmt.Errorf("object descriptor: version %d, want %d", o.Version, Version)
	case o.NSites >= MaxSites:
		return fmt.Errorf("object descriptor: %d sites, at most %d", o.NSites, MaxSites-1)
	case o.NStrs >= MaxStrs:
		return fmt.Errorf("object descriptor: %d bytes of strings, at most %d", o.NStrs, MaxStrs-1)
	case o.NStrs != 0 && o.Name >= o.NStrs:
		return fmt.Errorf("object descriptor: name at %d, past the %d bytes of strings", o.Name, o.NStrs)
	case o.Flags&FlagSlots != 0 && (o.NSlots < o.NSites || o.NSlots >= MaxSlots):
		return fmt.Errorf("object descriptor: %d slots for %d sites, want at least as many and at most %d", o.NSlots, o.NSites, MaxSlots-1)
	}
	return nil
}

// Append appends the site record's bytes to dst.
func (s *Site) Append(dst []byte) []byte {
	dst = le.AppendUint32(dst, s.Func)
	dst = le.AppendUint32(dst, s.InsnOff)
	dst = le.AppendUint32(dst, s.Sym)
	dst = le.AppendUint32(dst, uint32(s.SymOff))
	dst = append(dst, byte(s.Kind), byte(s.Seg))
	dst = le.AppendUint16(dst, s.Size)
	dst = le.AppendUint32(dst, s.Covers)
	dst = le.AppendUint32(dst, s.Block)
	return le.AppendUint32(dst, s.Score)
}

// Marshal returns the site record's SiteSize bytes.
func (s *Site) Marshal() []byte { return s.Append(make([]byte, 0, SiteSize)) }

// UnmarshalSite decodes a site record from the first SiteSize bytes of b.
func UnmarshalSite(b []byte) (Site, error) {
	if len(b) < SiteSize {
		return Site{}, fmt.Errorf("site record: %d bytes, want %d: %w", len(b), SiteSize, ErrShort)
	}
	return Site{
		Func:    le.Uint32(b[0:]),
		InsnOff: le.Uint32(b[4:]),
		Sym:     le.Uint32(b[8:]),
		SymOff:  int32(le.Uint32(b[12:])),
		Kind:    Kind(b[16]),
		Seg:     Segment(b[17]),
		Size:    le.Uint16(b[18:]),
		Covers:  le.Uint32(b[20:]),
		Block:   le.Uint32(b[24:]),
		Score:   le.Uint32(b[28:]),
	}, nil
}

// Append appends the event's bytes to dst.
func (e *Event) Append(dst []byte) []byte {
	dst = le.AppendUint64(dst, e.Page1)
	dst = le.AppendUint64(dst, e.Site)
	return le.AppendUint64(dst, e.Time)
}

// Marshal returns the event's EventSize bytes.
func (e *Event) Marshal() []byte { return e.Append(make([]byte, 0, EventSize)) }

// UnmarshalEvent decodes an event from the first EventSize bytes of b.
func UnmarshalEvent(b []byte) (Event, error) {
	if len(b) < EventSize {
		return Event{}, fmt.Errorf("event: %d bytes, want %d: %w", len(b), EventSize, ErrShort)
	}
	return Event{Page1: le.Uint64(b), Site: le.Uint64(b[8:]), Time: le.Uint64(b[16:])}, nil
}
