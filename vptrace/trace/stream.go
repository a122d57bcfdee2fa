package trace

import (
	"fmt"
	"io"
)

// Streaming: exports of large traces (hijack report --parquet) read the
// page events chunk by chunk (Open, Reader.Next) in bounded memory, and
// need beforehand what Load keeps besides the pages: the objects that
// resolve sites, the threads, the notes, and the regions that say which
// heap block, mapping, stack or TLS block owned a page at a time.

// LoadMeta reads everything of a trace file except its page events (the
// AGG and RAW chunks, whose payloads it does not decode): header, objects,
// threads, notes, end and status, allocation events and mappings, block
// counts. The Trace has no pages (Thread.Pages empty, page totals zero;
// Chunks counts the skipped chunks too), and threads known only from page
// events are missing; its Regions are built as Load builds them. A second
// read of the file (Open) can then stream the page events, each owned by
// RegionIndex().At(page, time).
func LoadMeta(path string) (*Trace, error) { return LoadMetaChild(path, nil) }

// LoadMetaChild is LoadMeta for the trace of a fork child whose parent's
// trace is parent (nil: none; LoadMeta's is enough): its regions include
// the parent's heap blocks and mappings alive at the fork, as LoadChild's.
func LoadMetaChild(path string, parent *Trace) (*Trace, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b := newBuilder(r.Header)
	if parent != nil && r.Header.Flags&HeaderForked != 0 {
		b.rb.inherit(parent.Regions, r.Header.OpenTime)
	}
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if PageChunk(c.Type) {
			b.t.Chunks[c.Type]++
			continue
		}
		bad, fatal := b.add(c)
		if fatal != nil {
			return nil, fmt.Errorf("%s: %w", path, fatal)
		}
		if bad != nil {
			b.t.Errors = append(b.t.Errors, bad.Error())
		}
	}
	b.t.Truncated = r.Truncated
	b.t.Damaged = r.Damaged
	b.t.Skipped = r.Skipped
	t := b.finish()
	t.Path = path
	return t, nil
}

// PageChunk reports whether chunks of type t hold page events (Decode
// returns an *Agg or a *Raw for them): what LoadMeta skips.
func PageChunk(t ChunkType) bool { return t == ChunkAgg || t == ChunkRaw || t == ChunkAggCols }

// RegionIndex answers which region owned a page at a time.
type RegionIndex struct{ x *regionIndex }

// RegionIndex indexes the trace's Regions (nil: the trace has none).
func (t *Trace) RegionIndex() *RegionIndex {
	if len(t.Regions) == 0 {
		return nil
	}
	return &RegionIndex{newRegionIndex(t.Regions)}
}

// At returns the region that owned page pg (a page number) at time ns, nil
// when none did: the owner Load gives the events of an AGG page record at
// its first time, or of a raw event at its time. A nil index has no
// regions.
func (x *RegionIndex) At(pg, ns uint64) *Region {
	if x == nil {
		return nil
	}
	return x.x.at(pg, ns)
}
