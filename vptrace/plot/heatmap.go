package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"hijack/vptrace/trace"
)

// HeatmapOptions select what a heatmap shows.
type HeatmapOptions struct {
	TID  int64  // only this kernel thread id; -1: all threads
	Kind string // "all" (default), "reads" or "writes"
	// Bins is the number of time columns (0: automatic).
	Bins int
	// Rows bounds the number of page rows (0: automatic); regions larger
	// than their share are drawn with several pages per row.
	Rows int
	// Gap: pages further apart than this start a new region (0: 16).
	Gap uint64
	// Owner names what a page held (package owner); regions are labelled
	// by the owner with most of their events. Nil, or "" and "unknown"
	// for all of a region's pages: the variable or segment its sites name.
	Owner func(p *trace.Page) string
}

// Region is a run of touched pages (gaps of at most HeatmapOptions.Gap
// untouched pages inside) drawn as one band of rows.
type Region struct {
	Lo, Hi  uint64 // page numbers, inclusive
	Label   string // top variable, or segment and top function
	Row     int    // first row
	Rows    int    // rows it takes
	Events  float64
	Touched int // pages touched
}

// Heatmap is a page x time grid of event counts.
type Heatmap struct {
	Title   string
	Regions []Region
	Rows    int       // all rows, with one blank row between regions
	Bins    int       // time columns
	BinNS   float64   // width of a column, ns
	Counts  []float64 // Rows x Bins, row-major
	Max     float64
	Total   float64 // events drawn
}

// ErrNoEvents says that the selection has nothing to draw.
var ErrNoEvents = errors.New("no events to draw")

// NewHeatmap reads the trace file at path (tr is the same file, loaded)
// and bins the selected events by page and time. Aggregate chunks give a
// page's count over an interval with the time of its first and last event
// in it: the count is spread evenly over that span; raw chunks give every
// event's time.
func NewHeatmap(path string, tr *trace.Trace, o HeatmapOptions) (*Heatmap, error) {
	kind := strings.ToLower(o.Kind)
	switch kind {
	case "", "all":
		kind = "all"
	case "reads", "writes":
	default:
		return nil, fmt.Errorf("--kind %q: want reads, writes or all", o.Kind)
	}
	if o.Gap == 0 {
		o.Gap = 16
	}
	want := func(tid uint32) bool { return o.TID < 0 || int64(tid) == o.TID }
	// pages and their per-kind totals, from the loaded trace
	pageEv := map[uint64]float64{}
	var dur uint64
	for _, th := range tr.Threads {
		if !want(th.TID) {
			continue
		}
		dur = max(dur, th.Last)
		for _, p := range th.Pages {
			if n := float64(pick(kind, p.Events, p.Reads, p.Writes)); n > 0 {
				pageEv[p.Page] += n
			}
		}
	}
	if len(pageEv) == 0 {
		return nil, ErrNoEvents
	}
	h := &Heatmap{}
	h.regions(tr, pageEv, o)
	bins := o.Bins
	if bins <= 0 {
		// one column per clock tick (1 ms by default), at most 240
		res := uint64(1e6)
		if tr.Header != nil && tr.Header.ClockRes > 0 {
			res = uint64(tr.Header.ClockRes)
		}
		bins = int(min(240, max(1, dur/res)))
	}
	// the time axis ends with the selection's last event
	dur = max(dur+dur/(2*uint64(bins)), 1)
	h.Bins = bins
	h.BinNS = float64(dur) / float64(bins)
	h.Counts = make([]float64, h.Rows*h.Bins)
	row := h.rowOf()

	r, err := trace.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if !trace.PageChunk(c.Type) {
			continue
		}
		v, err := c.Decode()
		if err != nil {
			continue // the loader reported it
		}
		switch x := v.(type) {
		case *trace.Agg:
			if !want(x.TID) {
				continue
			}
			for i := range x.Pages {
				pa := &x.Pages[i]
				n := float64(pick(kind, pa.Events, pa.Reads, pa.Writes))
				if n == 0 {
					continue
				}
				h.spread(row(pa.Page), pa.First, pa.Last, n)
			}
		case *trace.Raw:
			if !want(x.TID) {
				continue
			}
			for _, e := range x.Events {
				if e.Site == 0 || e.Page1 == 0 {
					continue
				}
				k := tr.Site(e.Site).Kind
				if kind == "reads" && k&trace.KindRead == 0 || kind == "writes" && k&trace.KindWrite == 0 {
					continue
				}
				h.spread(row(e.Page1-1), e.Time, e.Time, 1)
			}
		}
	}
	for _, v := range h.Counts {
		h.Max = max(h.Max, v)
		h.Total += v
	}
	if h.Total == 0 {
		return nil, ErrNoEvents
	}
	return h, nil
}

func pick(kind string, events, reads, writes uint64) uint64 {
	switch kind {
	case "reads":
		return reads
	case "writes":
		return writes
	}
	return events
}

// spread adds n events over the time span [first, last] of a row.
func (h *Heatmap) spread(row int, first, last uint64, n float64) {
	if row < 0 {
		return
	}
	b0 := h.bin(first)
	b1 := h.bin(last)
	if b0 == b1 || last <= first {
		h.Counts[row*h.Bins+b0] += n
		return
	}
	span := float64(last - first)
	for b := b0; b <= b1; b++ {
		lo := math.Max(float64(first), float64(b)*h.BinNS)
		hi := math.Min(float64(last), float64(b+1)*h.BinNS)
		if hi > lo {
			h.Counts[row*h.Bins+b] += n * (hi - lo) / span
		}
	}
}

func (h *Heatmap) bin(t uint64) int {
	b := int(float64(t) / h.BinNS)
	return min(max(b, 0), h.Bins-1)
}

// regions clusters the pages into regions, names them and lays out rows.
func (h *Heatmap) regions(tr *trace.Trace, pageEv map[uint64]float64, o HeatmapOptions) {
	pages := make([]uint64, 0, len(pageEv))
	for p := range pageEv {
		pages = append(pages, p)
	}
	slices.Sort(pages)
	var rs []Region
	for _, p := range pages {
		if n := len(rs); n > 0 && p-rs[n-1].Hi <= o.Gap+1 {
			rs[n-1].Hi = p
			rs[n-1].Touched++
			rs[n-1].Events += pageEv[p]
			continue
		}
		rs = append(rs, Region{Lo: p, Hi: p, Touched: 1, Events: pageEv[p]})
	}
	// rows: one per page when they fit, else a share per region (at
	// least one row), plus a blank row between regions
	maxRows := o.Rows
	if maxRows <= 0 {
		maxRows = 1200
	}
	var span uint64
	for _, r := range rs {
		span += r.Hi - r.Lo + 1
	}
	avail := max(maxRows-(len(rs)-1), len(rs))
	row := 0
	for i := range rs {
		n := rs[i].Hi - rs[i].Lo + 1
		rows := int(n)
		if span > uint64(avail) {
			rows = max(1, int(math.Round(float64(n)*float64(avail)/float64(span))))
		}
		rs[i].Row, rs[i].Rows = row, rows
		row += rows + 1
	}
	h.Rows = row - 1
	h.Regions = rs
	// labels: the variable with the most events on the region's pages,
	// else the segment and function of its busiest site
	byPage := map[uint64][]trace.SiteCount{}
	owners := map[uint64]map[string]uint64{} // page -> owner -> events
	for _, th := range tr.Threads {
		if o.TID >= 0 && int64(th.TID) != o.TID {
			continue
		}
		for _, p := range th.Pages {
			byPage[p.Page] = append(byPage[p.Page], p.Sites...)
			if o.Owner != nil {
				if name := o.Owner(p); name != "" && name != "unknown" {
					if owners[p.Page] == nil {
						owners[p.Page] = map[string]uint64{}
					}
					owners[p.Page][name] += p.Events
				}
			}
		}
	}
	for i := range h.Regions {
		r := &h.Regions[i]
		syms, funcs := map[string]uint64{}, map[string]uint64{}
		segs, own := map[string]uint64{}, map[string]uint64{}
		for p := r.Lo; p <= r.Hi; p++ {
			for name, n := range owners[p] {
				own[name] += n
			}
			for _, sc := range byPage[p] {
				s := tr.Site(sc.Site)
				if !s.Known() {
					continue
				}
				if s.Symbol != "" {
					syms[s.Symbol] += sc.Count
				}
				funcs[s.Function] += sc.Count
				segs[s.Seg.String()] += sc.Count
			}
		}
		size := bytesStr((r.Hi - r.Lo + 1) * trace.PageSize)
		switch {
		case len(own) > 0:
			r.Label = fmt.Sprintf("%s (%s)", top(own), size)
		case len(syms) > 0:
			r.Label = fmt.Sprintf("%s (%s)", top(syms), size)
		case len(segs) > 0:
			r.Label = fmt.Sprintf("[%s] %s (%s)", top(segs), top(funcs), size)
		default:
			r.Label = fmt.Sprintf("%#x (%s)", r.Lo<<trace.PageShift, size)
		}
	}
}

func top(m map[string]uint64) string {
	best, bn := "", uint64(0)
	for k, n := range m {
		if n > bn || n == bn && k < best {
			best, bn = k, n
		}
	}
	return best
}

// rowOf returns the function mapping a page number to its row (-1 if it is
// in no region).
func (h *Heatmap) rowOf() func(uint64) int {
	rs := h.Regions
	return func(p uint64) int {
		i := sort.Search(len(rs), func(i int) bool { return rs[i].Hi >= p })
		if i == len(rs) || p < rs[i].Lo {
			return -1
		}
		r := &rs[i]
		n := r.Hi - r.Lo + 1
		return r.Row + int((p-r.Lo)*uint64(r.Rows)/n)
	}
}

func bytesStr(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// grid adapts the heatmap to plotter.GridXYZ: columns are time (in the
// unit of scale ns), rows are page rows; values log10(1 + count), NaN
// for nothing.
type grid struct {
	h     *Heatmap
	scale float64
}

func (g grid) Dims() (c, r int) { return g.h.Bins, g.h.Rows }
func (g grid) X(c int) float64  { return (float64(c) + 0.5) * g.h.BinNS / g.scale }
func (g grid) Y(r int) float64  { return float64(r) }
func (g grid) Z(c, r int) float64 {
	v := g.h.Counts[r*g.h.Bins+c]
	if v <= 0 {
		return math.NaN()
	}
	return math.Log10(1 + v)
}

// colour bar: two columns (a heatmap needs two to know its cell width),
// values from 0 to max
type barGrid struct {
	n   int
	max float64
}

func (g barGrid) Dims() (c, r int)   { return 2, g.n }
func (g barGrid) X(c int) float64    { return 0.25 + 0.5*float64(c) }
func (g barGrid) Y(r int) float64    { return (float64(r) + 0.5) * g.max / float64(g.n) }
func (g barGrid) Z(_, r int) float64 { return g.Y(r) }

// Viridis is the palette of the heatmap (dark: few events, yellow: many).
type Viridis struct{}

var viridisAnchors = []color.RGBA{
	{68, 1, 84, 255}, {72, 40, 120, 255}, {62, 74, 137, 255}, {49, 104, 142, 255}, {38, 130, 142, 255},
	{31, 158, 137, 255}, {53, 183, 121, 255}, {109, 205, 89, 255}, {180, 222, 44, 255}, {253, 231, 37, 255},
}

// Colors returns 256 colours interpolated between the anchors.
func (Viridis) Colors() []color.Color {
	const n = 256
	out := make([]color.Color, n)
	for i := range out {
		f := float64(i) / (n - 1) * float64(len(viridisAnchors)-1)
		k := min(int(f), len(viridisAnchors)-2)
		t := f - float64(k)
		a, b := viridisAnchors[k], viridisAnchors[k+1]
		mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + t*(float64(y)-float64(x)))) }
		out[i] = color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 255}
	}
	return out
}

// Save draws the heatmap on a w x h pixel image and writes it to path
// (.png or .svg).
func (h *Heatmap) Save(path string, w, hpx int) error {
	format, err := Format(path)
	if err != nil {
		return err
	}
	c, err := NewCanvas(format, w, hpx)
	if err != nil {
		return err
	}
	// time unit
	durNS := h.BinNS * float64(h.Bins)
	scale, unit := 1e6, "ms"
	if durNS >= 5e9 {
		scale, unit = 1e9, "s"
	}
	maxZ := math.Max(math.Log10(1+h.Max), 1e-9)

	p := gplot.New()
	p.Title.Text = h.Title
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.Text = "time since the trace start (" + unit + ")"
	p.Y.Label.Text = "pages, by region (lowest address at the bottom)"
	hm := plotter.NewHeatMap(grid{h, scale}, Viridis{})
	hm.Min, hm.Max = 0, maxZ
	hm.NaN = color.White
	hm.Underflow, hm.Overflow = color.White, viridisAnchors[len(viridisAnchors)-1]
	hm.Rasterized = true
	p.Add(hm)
	p.X.Min, p.X.Max = 0, durNS/scale
	p.Y.Min, p.Y.Max = -0.5, float64(h.Rows)-0.5
	p.Y.Tick.Marker = gplot.ConstantTicks(h.ticks(hpx))
	p.Y.Tick.Label.Font.Size = vg.Points(8)

	bar := gplot.New()
	bar.Title.Text = "events"
	bar.Title.TextStyle.Font.Size = vg.Points(10)
	bh := plotter.NewHeatMap(barGrid{256, maxZ}, Viridis{})
	bh.Min, bh.Max = 0, maxZ
	bh.Rasterized = true
	bar.Add(bh)
	bar.HideX()
	bar.Y.Min, bar.Y.Max = 0, maxZ
	bar.Y.Tick.Marker = gplot.ConstantTicks(logTicks(h.Max))
	bar.Y.Tick.Label.Font.Size = vg.Points(8)

	barW := Px(110)
	main := draw.Crop(c.Canvas, 0, -barW, 0, 0)
	side := draw.Crop(c.Canvas, c.Canvas.Max.X-c.Canvas.Min.X-barW+Px(10), -Px(30), Px(45), -Px(30))
	p.Draw(main)
	bar.Draw(side)
	return c.Save(path)
}

// ticks labels the regions at their centres, as many as fit without
// overlapping (the largest first), with unlabelled ticks at every region's
// edges.
func (h *Heatmap) ticks(hpx int) []gplot.Tick {
	var ts []gplot.Tick
	for _, r := range h.Regions {
		ts = append(ts, gplot.Tick{Value: float64(r.Row) - 0.5}, gplot.Tick{Value: float64(r.Row+r.Rows) - 0.5})
	}
	// rows per label: about 11 px of text on the plot's height
	minRows := float64(h.Rows) * 11 / math.Max(float64(hpx-110), 50)
	order := make([]int, len(h.Regions))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return h.Regions[order[a]].Rows > h.Regions[order[b]].Rows })
	var taken []float64
	for _, i := range order {
		r := h.Regions[i]
		c := float64(r.Row) + float64(r.Rows-1)/2
		ok := true
		for _, t := range taken {
			if math.Abs(t-c) < minRows {
				ok = false
				break
			}
		}
		if ok {
			taken = append(taken, c)
			ts = append(ts, gplot.Tick{Value: c, Label: clip(r.Label, 40)})
		}
	}
	return ts
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// logTicks labels the colour bar in events: 1, 10, 100, ... at their
// log10(1 + n) positions.
func logTicks(maxCount float64) []gplot.Tick {
	var ts []gplot.Tick
	for n := 1.0; n <= maxCount*1.0001; n *= 10 {
		label := fmt.Sprintf("%g", n)
		if n >= 1e6 {
			label = fmt.Sprintf("1e%d", int(math.Round(math.Log10(n))))
		}
		ts = append(ts, gplot.Tick{Value: math.Log10(1 + n), Label: label})
	}
	if len(ts) == 0 || math.Log10(1+maxCount)-ts[len(ts)-1].Value > 0.15*math.Log10(1+maxCount) {
		ts = append(ts, gplot.Tick{Value: math.Log10(1 + maxCount), Label: fmt.Sprintf("%.3g", maxCount)})
	}
	return ts
}
