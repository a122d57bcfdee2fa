package tune

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"hijack/rules"
	vplot "hijack/vptrace/plot"
)

// Plot sizes in pixels.
const (
	plotW, plotH       = 800, 560
	summaryW, summaryH = 1400, 560
)

// Plots draws, in the spirit of the vptracer thesis's figures 5.6-5.11:
//
//	overhead.{svg,png}  slowdown against T, one line per H, with the
//	                    quartiles of the per-repetition ratios as error bars,
//	                    the exact reference and the uninstrumented build (1)
//	                    as horizontal lines;
//	accuracy.{svg,png}  recall (solid) and precision (dashed) against T,
//	                    one colour per H;
//	tune.{svg,png}      both side by side (the README figure).
//
// It returns the files written.
func Plots(dir string, rs []*Result, title string) ([]string, error) {
	var files []string
	for _, f := range []struct {
		name string
		w, h int
		grid func() [][]*gplot.Plot
	}{
		{"overhead", plotW, plotH, func() [][]*gplot.Plot { return [][]*gplot.Plot{{OverheadPlot(rs, title)}} }},
		{"accuracy", plotW, plotH, func() [][]*gplot.Plot { return [][]*gplot.Plot{{AccuracyPlot(rs, title)}} }},
		{"tune", summaryW, summaryH, func() [][]*gplot.Plot {
			return [][]*gplot.Plot{{OverheadPlot(rs, title), AccuracyPlot(rs, title)}}
		}},
	} {
		for _, ext := range []string{".svg", ".png"} {
			p := filepath.Join(dir, f.name+ext)
			if err := vplot.SaveGrid(p, f.w, f.h, f.grid()); err != nil {
				return files, fmt.Errorf("%s: %v", p, err)
			}
			files = append(files, p)
		}
	}
	return files, nil
}

// series groups the approximate configurations by H, ascending T.
func series(rs []*Result) (hs []int64, byH map[int64][]*Result, ref *Result) {
	byH = map[int64][]*Result{}
	for _, r := range rs {
		if r.Config.Exact {
			ref = r
			continue
		}
		h := r.Config.PageSize
		if _, ok := byH[h]; !ok {
			hs = append(hs, h)
		}
		byH[h] = append(byH[h], r)
	}
	slices.Sort(hs)
	for _, h := range hs {
		slices.SortFunc(byH[h], func(a, b *Result) int {
			return cmp.Compare(a.Config.Threshold, b.Config.Threshold)
		})
	}
	return hs, byH, ref
}

// jitter spreads the series of different H a little along T, so that
// equal values stay visible.
func jitter(i, n int) float64 {
	if n <= 1 {
		return 0
	}
	return (float64(i) - float64(n-1)/2) * 0.012
}

func newPlot(title, ylabel string, rs []*Result) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "threshold T (blocks with score >= T are instrumented)"
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = -0.05, 1.05
	p.Add(plotter.NewGrid())
	var ticks []gplot.Tick
	seen := map[float64]bool{}
	for _, r := range rs {
		if t := r.Config.Threshold; !r.Config.Exact && !seen[t] {
			seen[t] = true
			ticks = append(ticks, gplot.Tick{Value: t, Label: fmtFloat(t)})
		}
	}
	if len(ticks) > 0 {
		p.X.Tick.Marker = gplot.ConstantTicks(ticks)
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	return p
}

// xyErr is points with asymmetric Y errors.
type xyErr struct {
	plotter.XYs
	plotter.YErrors
}

// OverheadPlot draws the slowdown against T, one line per H.
func OverheadPlot(rs []*Result, workload string) *gplot.Plot {
	p := newPlot("Overhead: "+workload, "slowdown (median instrumented / median uninstrumented)", rs)
	hs, byH, ref := series(rs)
	ymax := 1.0
	for i, h := range hs {
		var pts xyErr
		for _, r := range byH[h] {
			s := r.Slowdown()
			if math.IsNaN(s) || math.IsInf(s, 0) {
				continue
			}
			q1, q3 := r.SlowdownQuartiles()
			lo, hi := 0.0, 0.0
			if !math.IsNaN(q1) && !math.IsNaN(q3) {
				lo, hi = math.Max(s-q1, 0), math.Max(q3-s, 0)
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: r.Config.Threshold + jitter(i, len(hs)), Y: s})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{lo, hi})
			ymax = math.Max(ymax, s+hi)
		}
		if len(pts.XYs) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			continue
		}
		style(l, sc, i, false)
		p.Add(l, sc)
		if eb, err := plotter.NewYErrorBars(pts); err == nil {
			eb.LineStyle.Color = plotutil.Color(i)
			p.Add(eb)
		}
		p.Legend.Add("H = "+rules.FormatSize(h), l, sc)
	}
	if ref != nil {
		if s := ref.Slowdown(); !math.IsNaN(s) && !math.IsInf(s, 0) {
			hl := hline(s, color.RGBA{R: 160, G: 0, B: 0, A: 255}, []vg.Length{vg.Points(6), vg.Points(3)})
			p.Add(hl)
			p.Legend.Add(fmt.Sprintf("exact reference (x%.2f)", s), hl)
			ymax = math.Max(ymax, s)
		}
	}
	base := hline(1, color.Gray{Y: 90}, []vg.Length{vg.Points(2), vg.Points(2)})
	p.Add(base)
	p.Legend.Add("uninstrumented", base)
	p.Y.Min = 0
	p.Y.Max = ymax * 1.25
	return p
}

// AccuracyPlot draws recall (solid) and precision (dashed) against T, one
// colour per H.
func AccuracyPlot(rs []*Result, workload string) *gplot.Plot {
	ylabel := "(thread, page) pairs vs. the exact reference"
	compared, unstable := 0, 0
	for _, r := range rs {
		compared += r.Compared()
		unstable += r.Unstable()
	}
	switch {
	case unstable > 0 && compared == 0:
		ylabel += " (none comparable: see the warning)"
	case unstable > 0:
		ylabel += fmt.Sprintf(" (%d runs not comparable, left out)", unstable)
	}
	p := newPlot("Accuracy: "+workload, ylabel, rs)
	hs, byH, ref := series(rs)
	for i, h := range hs {
		for k, what := range []string{"recall", "precision"} {
			var pts plotter.XYs
			for _, r := range byH[h] {
				v := Median(r.Comparable(r.Recall))
				if k == 1 {
					v = Median(r.Comparable(r.Precision))
				}
				if math.IsNaN(v) {
					continue
				}
				pts = append(pts, plotter.XY{X: r.Config.Threshold + jitter(i, len(hs)), Y: v})
			}
			if len(pts) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				continue
			}
			style(l, sc, i, k == 1)
			p.Add(l, sc)
			p.Legend.Add(fmt.Sprintf("%s, H = %s", what, rules.FormatSize(h)), l, sc)
		}
	}
	if ref != nil {
		if v := Median(ref.Comparable(ref.Recall)); !math.IsNaN(v) {
			hl := hline(v, color.Gray{Y: 90}, []vg.Length{vg.Points(2), vg.Points(2)})
			p.Add(hl)
			p.Legend.Add(fmt.Sprintf("run-to-run floor (recall %.3f)", v), hl)
		}
	}
	p.Y.Min, p.Y.Max = 0, 1.35 // room for the legend above the data
	p.Y.Tick.Marker = gplot.ConstantTicks([]gplot.Tick{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"},
		{Value: 0.5, Label: "0.5"}, {Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}})
	return p
}

func style(l *plotter.Line, sc *plotter.Scatter, i int, dashed bool) {
	c := plotutil.Color(i)
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	sc.Color = c
	sc.Shape = plotutil.Shape(i)
	sc.Radius = vg.Points(3)
	if dashed {
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(2)
	}
}

// hline is a horizontal line across the plot at y.
func hline(y float64, c color.Color, dashes []vg.Length) *plotter.Function {
	f := plotter.NewFunction(func(float64) float64 { return y })
	f.Color = c
	f.Width = vg.Points(1)
	f.Dashes = dashes
	return f
}
