package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"hijack/vptrace/owner"
	"hijack/vptrace/trace"
)

// pageView is what a thread did to a page while one owner held it: the
// whole page, or one of its parts when a block was freed and its pages
// reused by another (trace.Page.Parts).
type pageView struct {
	p                     *trace.Page
	region                *trace.Region
	events, reads, writes uint64
	first, last           uint64
	sites                 []trace.SiteCount
}

// views splits a page by owner over time (one view when it had one).
func views(p *trace.Page) []pageView {
	if len(p.Parts) == 0 {
		return []pageView{{p, p.Region, p.Events, p.Reads, p.Writes, p.First, p.Last, p.Sites}}
	}
	vs := make([]pageView, 0, len(p.Parts))
	for _, pp := range p.Parts {
		vs = append(vs, pageView{p, pp.Region, pp.Events, pp.Reads, pp.Writes, pp.First, pp.Last, pp.Sites})
	}
	slices.SortFunc(vs, func(a, b pageView) int { return cmp.Compare(a.first, b.first) })
	return vs
}

// topSite is the site with the most events in the view (0 if none).
func (v pageView) topSite() uint64 {
	var best trace.SiteCount
	for _, s := range v.sites {
		if s.Count > best.Count || (s.Count == best.Count && s.Site < best.Site) {
			best = s
		}
	}
	return best.Site
}

// resolver returns the owner resolver of a trace (made once per trace).
func (o *reportOpts) resolver(tr *trace.Trace) *owner.Resolver {
	if o.owners == nil {
		o.owners = map[*trace.Trace]*owner.Resolver{}
	}
	r := o.owners[tr]
	if r == nil {
		r = owner.New(tr)
		o.owners[tr] = r
	}
	return r
}

// ownerOf names a view's owner and segment. A trace without mappings
// (runtimes before format 1.3) names only what the instruction's operand
// told: a global by its symbol; the rest is unknown.
func ownerOf(res *owner.Resolver, v pageView, top trace.Site) (segment, name string) {
	if res.HasMaps() || v.region != nil {
		ow := res.Of(v.p.Page, v.region)
		return ow.Segment, ow.Name
	}
	ow := owner.OfInstruction(top.Known(), top.Seg, top.Symbol)
	return ow.Segment, ow.Name
}

// allocSite is one allocation site: every block (or mapping) one call
// site of one allocator returned.
type allocSite struct {
	Site      string `json:"site"`           // FUNC+0xOFF of the return address
	Line      string `json:"line,omitempty"` // file:line of the call, with DWARF
	Allocator string `json:"allocator"`
	Address   string `json:"address"` // the return address
	Objects   int    `json:"count"`   // blocks returned
	Bytes     uint64 `json:"bytes"`   // asked for, in all
	Pages     int    `json:"pages"`   // distinct pages of its blocks the threads touched
	Events    uint64 `json:"events"`
	FirstNS   uint64 `json:"first_ns"` // first allocation
	LastNS    uint64 `json:"last_ns"`  // last allocation

	pages map[uint64]bool
}

// allocSites totals a trace's heap blocks and mappings by allocation site
// (allocator and return address), the most events first.
func allocSites(tr *trace.Trace, res *owner.Resolver, o *reportOpts) []*allocSite {
	type key struct {
		alloc trace.AllocKind
		site  uint64
	}
	m := map[key]*allocSite{}
	get := func(g *trace.Region) *allocSite {
		k := key{g.Alloc, g.Site}
		s := m[k]
		if s == nil {
			s = &allocSite{Site: res.Site(g.Site), Line: res.Line(g.Site), Allocator: g.Alloc.String(),
				Address: fmt.Sprintf("%#x", g.Site), FirstNS: g.Born, LastNS: g.Born, pages: map[uint64]bool{}}
			m[k] = s
		}
		return s
	}
	for _, g := range tr.Regions {
		if g.Kind != trace.RegionHeap && g.Kind != trace.RegionMmap {
			continue
		}
		s := get(g)
		s.Objects++
		s.Bytes += g.Bytes()
		s.FirstNS, s.LastNS = min(s.FirstNS, g.Born), max(s.LastNS, g.Born)
	}
	for _, th := range o.threads(tr) {
		for _, p := range th.Pages {
			for _, v := range views(p) {
				if g := v.region; g != nil && (g.Kind == trace.RegionHeap || g.Kind == trace.RegionMmap) {
					s := get(g)
					s.Events += v.events
					s.pages[p.Page] = true
				}
			}
		}
	}
	out := make([]*allocSite, 0, len(m))
	for _, s := range m {
		s.Pages = len(s.pages)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *allocSite) int {
		return cmp.Or(cmp.Compare(b.Events, a.Events), cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Site, b.Site), cmp.Compare(a.Allocator, b.Allocator))
	})
	return out
}

// reportAllocSites prints the "by allocation site" table of a trace.
func reportAllocSites(w io.Writer, tr *trace.Trace, res *owner.Resolver, o *reportOpts) {
	if tr.AllocEvents == 0 {
		return
	}
	sites := allocSites(tr, res, o)
	fmt.Fprintf(w, "\nby allocation site (%d sites, %d allocation events", len(sites), tr.AllocEvents)
	if tr.AllocsLost > 0 {
		fmt.Fprintf(w, ", %d LOST", tr.AllocsLost)
	}
	fmt.Fprintln(w, "):")
	fmt.Fprintf(w, "  %-44s %8s %10s %8s %10s  %s\n", "allocator@site", "objects", "bytes", "pages", "events", "line")
	for _, s := range limit(sites, o.top) {
		fmt.Fprintf(w, "  %-44s %8d %10s %8d %10d  %s\n", s.Allocator+"@"+s.Site, s.Objects, bytesStr(s.Bytes), s.Pages, s.Events, s.Line)
	}
}

// wholeView is the whole page, under its main owner (the one with most of
// its events).
func wholeView(p *trace.Page) pageView {
	return pageView{p, p.Region, p.Events, p.Reads, p.Writes, p.First, p.Last, p.Sites}
}

// ownerGroups totals a thread's events by page owner, the most events
// first.
func ownerGroups(tr *trace.Trace, res *owner.Resolver, th *trace.Thread, o *reportOpts) []group {
	m := map[string]*group{}
	pages := map[string]map[uint64]bool{}
	for _, p := range th.Pages {
		for _, v := range views(p) {
			_, name := ownerOf(res, v, o.site(tr, v.topSite()))
			g := m[name]
			if g == nil {
				g = &group{Name: name}
				m[name] = g
				pages[name] = map[uint64]bool{}
			}
			g.Events += v.events
			g.Reads += v.reads
			g.Writes += v.writes
			pages[name][p.Page] = true
		}
	}
	out := make([]group, 0, len(m))
	for name, g := range m {
		g.Pages = len(pages[name])
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b group) int { return cmp.Or(cmp.Compare(b.Events, a.Events), cmp.Compare(a.Name, b.Name)) })
	return out
}

// name demangles a C++ function or variable name for display (cached:
// reports ask for the same names over and over).
func (o *reportOpts) name(s string) string {
	if !strings.HasPrefix(s, "_Z") {
		return s
	}
	if o.names == nil {
		o.names = map[string]string{}
	}
	d, ok := o.names[s]
	if !ok {
		d = owner.Demangle(s)
		o.names[s] = d
	}
	return d
}

// site resolves a site address with its function and variable demangled.
func (o *reportOpts) site(tr *trace.Trace, addr uint64) trace.Site {
	s := tr.Site(addr)
	s.Function, s.Symbol = o.name(s.Function), o.name(s.Symbol)
	return s
}

// withParents reloads the traces of fork children whose parent's trace is
// among traces, so that their pages of blocks the parent allocated before
// the fork are named (trace.LoadChild). A parent is the trace of the
// child's PPID on the same clock (a fork child keeps its parent's trace
// start) opened last before the fork; parents are resolved first.
func withParents(traces []*trace.Trace) ([]*trace.Trace, error) {
	order := make([]int, len(traces))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(traces[a].Header.OpenTime, traces[b].Header.OpenTime)
	})
	out := slices.Clone(traces)
	for _, i := range order {
		c := out[i]
		h := c.Header
		if h.Flags&trace.HeaderForked == 0 {
			continue
		}
		var parent *trace.Trace
		for _, j := range order {
			p := out[j]
			if j != i && p.Header.PID == h.PPID && p.Header.StartMono == h.StartMono && p.Header.OpenTime <= h.OpenTime &&
				(parent == nil || p.Header.OpenTime >= parent.Header.OpenTime) {
				parent = p
			}
		}
		if parent == nil || len(parent.Regions) == 0 {
			continue
		}
		re, err := trace.LoadChild(c.Path, parent)
		if err != nil {
			return nil, err
		}
		out[i] = re
	}
	return out, nil
}
