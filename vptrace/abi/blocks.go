package abi

import "fmt"

// The blockcount records (vptrace/ABI.md "blockcount"): an object
// instrumented by the blockcount preset carries a section .blockcount
// holding one descriptor (Blocks, struct vpt_blocks), its block records
// (Block, struct vpt_block) and a string table; each thread counts the
// executions of the object's blocks in a static TLS array of NBlocks+1
// words (word 0: the thread is registered with the runtime; word 1+k:
// block k), which the runtime reads at the thread's exit, when the object
// is unloaded and at process exit and writes into the trace.

// Blockcount descriptor constants.
const (
	// BlocksMagic is vpt_blocks.magic: "HJBC" little-endian.
	BlocksMagic uint32 = 0x43424a48
	// BlocksVersion is vpt_blocks.version.
	BlocksVersion uint16 = 1

	// BlocksSize is sizeof(struct vpt_blocks).
	BlocksSize = 48
	// BlockSize is sizeof(struct vpt_block); block k is at blocks[0] + k*BlockSize.
	BlockSize = 16

	// MaxBlocks bounds vpt_blocks.nblocks: the runtime accepts fewer.
	// (The string table is bounded by MaxStrs, as a vpt_object's.)
	MaxBlocks = 1 << 24

	// BlocksTPOffOff is the offset of vpt_blocks.tpoff, which an
	// object's constructor may store (see Blocks.TPOff).
	BlocksTPOffOff = 16
	// BlocksBlocksRelOff and BlocksStrsRelOff are the offsets of the
	// descriptor's PC-relative fields.
	BlocksBlocksRelOff = 24
	BlocksStrsRelOff   = 28
)

// Blocks is struct vpt_blocks, the descriptor at the start of a
// blockcount object's .blockcount section (SHF_ALLOC|SHF_WRITE, align 8).
// The c tags name the C fields.
type Blocks struct {
	Magic   uint32 `c:"magic"`   // BlocksMagic
	Version uint16 `c:"version"` // BlocksVersion
	Flags   uint16 `c:"flags"`   // 0: none defined (the runtime ignores them)
	NBlocks uint32 `c:"nblocks"` // below MaxBlocks
	NStrs   uint32 `c:"nstrs"`   // size of the string table in bytes (below MaxStrs)
	// TPOff is the TLS counter array's offset from the thread pointer:
	// an R_X86_64_TPOFF64 (links into executables only), or stored by
	// the object's constructor before it registers the object; 0: not
	// known yet (a static TLS offset is never 0 on x86-64).
	TPOff     int64  `c:"tpoff"`
	BlocksRel int32  `c:"blocks_rel"` // address of blocks[0] minus the address of this field
	StrsRel   int32  `c:"strs_rel"`   // address of the string table minus the address of this field
	Name      uint32 `c:"name"`       // offset in the strings: the object file name given to hijack
	Reserved  uint32 `c:"reserved"`   // 0
	ID        uint64 `c:"id"`         // FNV-1a hash of the object's original bytes (as Object.ID)
}

// Block is struct vpt_block, one basic block (blocks[k] is block k, counted
// by TLS word 1+k).
type Block struct {
	Func      uint32 `c:"func"`       // offset in the strings: the function's name
	Off       uint32 `c:"off"`        // the block's first instruction from the function start, in the original object
	Score     uint32 `c:"score"`      // the block's static loop score * 1e6
	LoopDepth uint16 `c:"loop_depth"` // loops the block is in (0: none)
	Insns     uint16 `c:"insns"`      // instructions in the block, at most 65535
}

// Append appends the descriptor's bytes to dst.
func (b *Blocks) Append(dst []byte) []byte {
	dst = le.AppendUint32(dst, b.Magic)
	dst = le.AppendUint16(dst, b.Version)
	dst = le.AppendUint16(dst, b.Flags)
	dst = le.AppendUint32(dst, b.NBlocks)
	dst = le.AppendUint32(dst, b.NStrs)
	dst = le.AppendUint64(dst, uint64(b.TPOff))
	dst = le.AppendUint32(dst, uint32(b.BlocksRel))
	dst = le.AppendUint32(dst, uint32(b.StrsRel))
	dst = le.AppendUint32(dst, b.Name)
	dst = le.AppendUint32(dst, b.Reserved)
	return le.AppendUint64(dst, b.ID)
}

// Marshal returns the descriptor's BlocksSize bytes.
func (b *Blocks) Marshal() []byte { return b.Append(make([]byte, 0, BlocksSize)) }

// UnmarshalBlocks decodes a blockcount descriptor from the first BlocksSize bytes of b.
func UnmarshalBlocks(b []byte) (Blocks, error) {
	if len(b) < BlocksSize {
		return Blocks{}, fmt.Errorf("blockcount descriptor: %d bytes, want %d: %w", len(b), BlocksSize, ErrShort)
	}
	return Blocks{
		Magic:     le.Uint32(b[0:]),
		Version:   le.Uint16(b[4:]),
		Flags:     le.Uint16(b[6:]),
		NBlocks:   le.Uint32(b[8:]),
		NStrs:     le.Uint32(b[12:]),
		TPOff:     int64(le.Uint64(b[16:])),
		BlocksRel: int32(le.Uint32(b[24:])),
		StrsRel:   int32(le.Uint32(b[28:])),
		Name:      le.Uint32(b[32:]),
		Reserved:  le.Uint32(b[36:]),
		ID:        le.Uint64(b[40:]),
	}, nil
}

// Check reports why the runtime would refuse the descriptor (ABI.md
// "blockcount"), or nil. TPOff is not checked: 0 only means the
// constructor has not stored it yet.
func (b *Blocks) Check() error {
	switch {
	case b.Magic != BlocksMagic:
		return fmt.Errorf("blockcount descriptor: magic %#x, want %#x", b.Magic, BlocksMagic)
	case b.Version != BlocksVersion:
		return fmt.Errorf("blockcount descriptor: version %d, want %d", b.Version, BlocksVersion)
	case b.NBlocks >= MaxBlocks:
		return fmt.Errorf("blockcount descriptor: %d blocks, at most %d", b.NBlocks, MaxBlocks-1)
	case b.NStrs >= MaxStrs:
		return fmt.Errorf("blockcount descriptor: %d bytes of strings, at most %d", b.NStrs, MaxStrs-1)
	case b.NStrs != 0 && b.Name >= b.NStrs:
		return fmt.Errorf("blockcount descriptor: name at %d, past the %d bytes of strings", b.Name, b.NStrs)
	}
	return nil
}

// Append appends the block record's bytes to dst.
func (b *Block) Append(dst []byte) []byte {
	dst = le.AppendUint32(dst, b.Func)
	dst = le.AppendUint32(dst, b.Off)
	dst = le.AppendUint32(dst, b.Score)
	dst = le.AppendUint16(dst, b.LoopDepth)
	return le.AppendUint16(dst, b.Insns)
}

// Marshal returns the block record's BlockSize bytes.
func (b *Block) Marshal() []byte { return b.Append(make([]byte, 0, BlockSize)) }

// UnmarshalBlock decodes a block record from the first BlockSize bytes of b.
func UnmarshalBlock(b []byte) (Block, error) {
	if len(b) < BlockSize {
		return Block{}, fmt.Errorf("block record: %d bytes, want %d: %w", len(b), BlockSize, ErrShort)
	}
	return Block{
		Func:      le.Uint32(b[0:]),
		Off:       le.Uint32(b[4:]),
		Score:     le.Uint32(b[8:]),
		LoopDepth: le.Uint16(b[12:]),
		Insns:     le.Uint16(b[14:]),
	}, nil
}
