package trace

import (
	"cmp"
	"fmt"
	"slices"

	"hijack/vptrace/abi"
)

// Block counts (format 1.2): the runtime writes a BlockObject chunk for
// every object of the blockcount preset it learns of (a registration,
// numbered Reg), and BlockCounts chunks holding one thread's counters of
// one registration. Counters only grow, and the runtime writes them
// whole each time (at the thread's exit, when the object is unloaded, at
// process exit, before an exec, at vptrace_flush): a reader takes, per
// thread serial, registration and block, the largest count of any chunk.

// BlockRec is one struct vpt_block as the object emitted it.
type BlockRec = abi.Block

// BlockObject is a blockcount object's descriptor with its blocks and
// strings, and where it was in the process.
type BlockObject struct {
	// Reg numbers the registration in the process (from 1): an object
	// loaded again after an unload is registered again, with fresh
	// counters. BlockCounts chunks name it.
	Reg     uint32
	Version uint16 // vpt_blocks.version
	Flags   uint16 // vpt_blocks.flags
	Desc    uint64 // runtime address of the struct vpt_blocks
	ID      uint64 // vpt_blocks.id (FNV-1a of the original object)
	TPOff   int64  // vpt_blocks.tpoff when the chunk was written
	NameOff uint32
	// Same: the object is loaded again where an earlier registration of
	// the same object was (the same id, blocks and strings): the chunk
	// holds no tables, they are that registration's (Load copies them).
	Same   uint32
	Blocks []BlockRec
	Strs   []byte
}

// Str returns the NUL-terminated string at off in the object's string table.
func (o *BlockObject) Str(off uint32) string { return cstr(o.Strs, off) }

// Name is the object file name hijack was given.
func (o *BlockObject) Name() string { return o.Str(o.NameOff) }

func cstr(strs []byte, off uint32) string {
	if int64(off) >= int64(len(strs)) {
		return ""
	}
	s := strs[off:]
	for i, c := range s {
		if c == 0 {
			return string(s[:i])
		}
	}
	return string(s)
}

// BlockCount is the count of one block (its index in the object).
type BlockCount struct {
	Block uint32
	Count uint64
}

// BlockCounts flags.
const (
	// CountsFinal: the thread's last counts of this registration (the
	// thread exited, or the object was unloaded).
	CountsFinal = 1
)

// BlockCounts holds one thread's counters of one registration, as they
// were at Time: cumulative, the nonzero ones.
type BlockCounts struct {
	Serial uint64
	TID    uint32
	Flags  uint32 // Counts*
	Reg    uint32 // the BlockObject's
	Time   uint64
	Name   string       // thread name (prctl PR_GET_NAME) when written
	Counts []BlockCount // ascending Block
}

const (
	blocksFixed = 48
	countsFixed = 48
)

// AppendPayload appends the chunk payload of o.
func (o *BlockObject) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u32(o.Reg)
	e.u16(o.Version)
	e.u16(o.Flags)
	e.u64(o.Desc)
	e.u64(o.ID)
	e.u64(uint64(o.TPOff))
	e.u32(uint32(len(o.Blocks)))
	e.u32(uint32(len(o.Strs)))
	e.u32(o.NameOff)
	e.u32(o.Same)
	for i := range o.Blocks {
		e.b = o.Blocks[i].Append(e.b)
	}
	e.b = append(e.b, o.Strs...)
	return e.b
}

// DecodeBlockObject decodes a ChunkBlocks payload.
func DecodeBlockObject(p []byte) (*BlockObject, error) {
	d := dec{b: p}
	o := &BlockObject{Reg: d.u32(), Version: d.u16(), Flags: d.u16(), Desc: d.u64(), ID: d.u64(), TPOff: int64(d.u64())}
	nblocks := d.u32()
	nstrs := d.u32()
	o.NameOff = d.u32()
	o.Same = d.u32()
	if d.err != nil {
		return nil, d.err
	}
	if uint64(nblocks)*abi.BlockSize+uint64(nstrs) > uint64(len(p)-d.off) {
		return nil, ErrShort
	}
	o.Blocks = make([]BlockRec, nblocks)
	for i := range o.Blocks {
		o.Blocks[i], _ = abi.UnmarshalBlock(d.bytes(abi.BlockSize)) // (the length was checked above)
	}
	o.Strs = slices.Clone(d.bytes(int(nstrs)))
	return o, d.err
}

// AppendPayload appends the chunk payload of c; Counts must be in
// ascending order of Block.
func (c *BlockCounts) AppendPayload(dst []byte) []byte {
	e := enc{dst}
	e.u64(c.Serial)
	e.u32(c.TID)
	e.u32(c.Flags)
	e.u32(c.Reg)
	e.u32(uint32(len(c.Counts)))
	e.u64(c.Time)
	e.b = appendName(e.b, c.Name)
	var prev uint32
	for i, bc := range c.Counts {
		delta := bc.Block - prev
		if i == 0 {
			delta = bc.Block
		}
		e.uvarint(uint64(delta))
		e.uvarint(bc.Count)
		prev = bc.Block
	}
	return e.b
}

// DecodeBlockCounts decodes a ChunkCounts payload.
func DecodeBlockCounts(p []byte) (*BlockCounts, error) {
	d := dec{b: p}
	c := &BlockCounts{Serial: d.u64(), TID: d.u32(), Flags: d.u32(), Reg: d.u32()}
	n := d.u32()
	c.Time = d.u64()
	c.Name = d.name()
	if d.err != nil {
		return nil, d.err
	}
	// every pair takes at least 2 bytes
	if uint64(n)*2 > uint64(len(p)-d.off) {
		return nil, ErrShort
	}
	c.Counts = make([]BlockCount, n)
	var block uint64
	for i := range c.Counts {
		delta := d.uvarint()
		if i > 0 && delta == 0 {
			return nil, fmt.Errorf("block %d counted twice", block)
		}
		block += delta
		if block >= abi.MaxBlocks {
			return nil, fmt.Errorf("block index %d out of range", block)
		}
		c.Counts[i] = BlockCount{Block: uint32(block), Count: d.uvarint()}
	}
	return c, d.err
}

// BlockID names a block in a Trace: the registration that first
// registered its object (objects loaded again, with the same ID, count
// under the first) and its index.
type BlockID struct {
	Reg   uint32
	Index uint32
}

// BlockInfo is a resolved BlockID.
type BlockInfo struct {
	BlockID
	Object *BlockObject // nil: no BLOCKS chunk for the registration (a damaged trace)
	BlockRec
	Function string // "" if unknown
}

// Known reports whether the block was found in an object.
func (b *BlockInfo) Known() bool { return b.Object != nil }

// Where is "function+0xOFF" (the block's first instruction in the original
// object), or "?reg.index" for a block of an unknown object.
func (b *BlockInfo) Where() string {
	if b.Object == nil {
		return fmt.Sprintf("?%d.%d", b.Reg, b.Index)
	}
	return fmt.Sprintf("%s+%#x", b.Function, b.Off)
}

// Block resolves a block of Thread.Blocks.
func (t *Trace) Block(id BlockID) BlockInfo {
	b := BlockInfo{BlockID: id}
	o := t.blockObjs[id.Reg]
	if o == nil || id.Index >= uint32(len(o.Blocks)) {
		return b
	}
	b.Object = o
	b.BlockRec = o.Blocks[id.Index]
	b.Function = o.Str(b.Func)
	return b
}

// blockKey is a thread instance's counter of a registration's block.
type blockKey struct {
	serial uint64
	reg    uint32
	block  uint32
}

func (b *builder) blockObject(o *BlockObject) {
	if _, dup := b.t.blockObjs[o.Reg]; dup {
		return
	}
	if same := b.t.blockObjs[o.Same]; same != nil && o.Same != o.Reg && len(o.Blocks) == 0 && len(o.Strs) == 0 {
		o.Blocks, o.Strs = same.Blocks, same.Strs
	}
	b.t.blockObjs[o.Reg] = o
	b.t.BlockObjects = append(b.t.BlockObjects, o)
}

func (b *builder) blockCounts(c *BlockCounts) error {
	in, err := b.instance(c.Serial, c.TID)
	if err != nil {
		return err
	}
	if in.Name == "" {
		in.Name = c.Name
	}
	if b.counts == nil {
		b.counts = map[blockKey]uint64{}
	}
	for _, bc := range c.Counts {
		k := blockKey{c.Serial, c.Reg, bc.Block}
		b.counts[k] = max(b.counts[k], bc.Count)
	}
	return nil
}

// finishBlocks adds the counts up per TID, objects registered more than
// once (the same ID) under their first registration.
func (b *builder) finishBlocks() {
	t := b.t
	slices.SortFunc(t.BlockObjects, func(x, y *BlockObject) int { return cmp.Compare(x.Reg, y.Reg) })
	first := map[uint64]uint32{} // object ID -> first registration
	canon := map[uint32]uint32{}
	for _, o := range t.BlockObjects {
		if r, ok := first[o.ID]; ok && len(t.blockObjs[r].Blocks) == len(o.Blocks) {
			canon[o.Reg] = r
			continue
		}
		first[o.ID] = o.Reg
		canon[o.Reg] = o.Reg
	}
	for k, n := range b.counts {
		if n == 0 {
			continue
		}
		th := b.thread(b.tidOf[k.serial])
		if th.Blocks == nil {
			th.Blocks = map[BlockID]uint64{}
		}
		reg := k.reg
		if r, ok := canon[reg]; ok {
			reg = r
		}
		th.Blocks[BlockID{reg, k.block}] += n
		th.BlockExecs += n
	}
}

// HasBlocks reports whether the trace has block counts, or objects of the
// blockcount preset (whose blocks may all have counted nothing).
func (t *Trace) HasBlocks() bool {
	if len(t.BlockObjects) > 0 {
		return true
	}
	for _, th := range t.Threads {
		if len(th.Blocks) > 0 {
			return true
		}
	}
	return false
}

// BlockStat is a block's count in a thread.
type BlockStat struct {
	ID    BlockID
	Count uint64
}

// SortedBlocks returns the thread's blocks with their counts, the most
// executed first (ties: ascending BlockID).
func (th *Thread) SortedBlocks() []BlockStat {
	out := make([]BlockStat, 0, len(th.Blocks))
	for id, n := range th.Blocks {
		out = append(out, BlockStat{id, n})
	}
	SortBlockStats(out)
	return out
}

// SortBlockStats sorts by descending count, then ascending BlockID.
func SortBlockStats(s []BlockStat) {
	slices.SortFunc(s, func(x, y BlockStat) int {
		if c := cmp.Compare(y.Count, x.Count); c != 0 {
			return c
		}
		if c := cmp.Compare(x.ID.Reg, y.ID.Reg); c != 0 {
			return c
		}
		return cmp.Compare(x.ID.Index, y.ID.Index)
	})
}

// BlockTotals returns every block's count summed over the threads, the
// most executed first.
func (t *Trace) BlockTotals() []BlockStat {
	sum := map[BlockID]uint64{}
	for _, th := range t.Threads {
		for id, n := range th.Blocks {
			sum[id] += n
		}
	}
	out := make([]BlockStat, 0, len(sum))
	for id, n := range sum {
		out = append(out, BlockStat{id, n})
	}
	SortBlockStats(out)
	return out
}
