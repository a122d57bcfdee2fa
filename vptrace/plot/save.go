// Package plot draws hijack's figures with gonum.org/v1/plot: the page
// access heatmap of `hijack report --heatmap` and the helpers the tuning
// experiment (package tune) uses to write its plots. Output is PNG or SVG,
// chosen by the file name's extension.
package plot

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"hijack/internal/atomicfile"
)

// DPI of PNG output: sizes are given in pixels at this resolution (SVG
// output gets the same size in points * 96/72).
const DPI = 96

// Px is a length of n pixels at DPI.
func Px(n int) vg.Length { return vg.Length(n) * vg.Inch / DPI }

// Format returns "png" or "svg" from a file name, or an error naming the
// file.
func Format(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png", ".svg":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("%s: unknown image format %q (want .png or .svg)", path, ext)
	}
}

// Canvas is a drawing surface of a given format.
type Canvas struct {
	draw.Canvas
	w io.WriterTo
}

// NewCanvas returns a w x h pixel canvas for format "png" or "svg".
func NewCanvas(format string, w, h int) (*Canvas, error) {
	switch format {
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(Px(w), Px(h)), vgimg.UseDPI(DPI))
		return &Canvas{Canvas: draw.New(c), w: vgimg.PngCanvas{Canvas: c}}, nil
	case "svg":
		c := vgsvg.New(Px(w), Px(h))
		return &Canvas{Canvas: draw.New(c), w: c}, nil
	}
	return nil, fmt.Errorf("unknown image format %q (want png or svg)", format)
}

// WriteTo writes the image.
func (c *Canvas) WriteTo(w io.Writer) (int64, error) { return c.w.WriteTo(w) }

// Save writes the canvas to path, through a temporary file so that path is
// either complete or untouched.
func (c *Canvas) Save(path string) error {
	return atomicfile.Write(path, ".plot-*", func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

// SaveGrid draws plots in a grid (rows of columns, aligned axes) on a
// w x h pixel image and writes it to path (.png or .svg).
func SaveGrid(path string, w, h int, plots [][]*gplot.Plot) error {
	format, err := Format(path)
	if err != nil {
		return err
	}
	c, err := NewCanvas(format, w, h)
	if err != nil {
		return err
	}
	rows, cols := len(plots), 0
	for _, r := range plots {
		cols = max(cols, len(r))
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12),
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := gplot.Align(plots, tiles, c.Canvas)
	for i, r := range plots {
		for j, p := range r {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	return c.Save(path)
}
