package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
)

const (
	plotWidth  = 6 * vg.Inch
	plotHeight = 4 * vg.Inch
	pngDPI     = 150
)

var (
	predictedColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	trueColor      = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	flaggedColor   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	baselineColor  = color.Gray{Y: 0x40}
	gridColor      = color.Gray{Y: 0xe0}
)

// Plot draws predicted throughput against reduction, with min..max error
// bars over the repetitions, the baseline, flagged and infeasible points
// marked, and the true throughput when present. It writes a PNG to pngPath
// and an SVG to svgPath; an empty path skips that format.
func Plot(r *Results, pngPath, svgPath string) error {
	if pngPath == "" && svgPath == "" {
		return nil
	}
	p, err := newPlot(r)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if pngPath != "" {
		c := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(pngDPI))
		p.Draw(draw.New(c))
		if err := atomicfile.WriteFunc(pngPath, 0o644, func(w io.Writer) error {
			_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
			return err
		}); err != nil {
			return err
		}
	}
	if svgPath != "" {
		c := vgsvg.New(plotWidth, plotHeight)
		p.Draw(draw.New(c))
		if err := atomicfile.WriteFunc(svgPath, 0o644, func(w io.Writer) error {
			_, err := c.WriteTo(w)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// series is a curve with asymmetric error bars.
type series struct {
	plotter.XYs
	plotter.YErrors
}

func (s *series) add(x, y float64, runs []float64) {
	lo, hi := y, y
	if rs := usable(runs); len(rs) > 0 {
		lo, hi = min(lo, slices.Min(rs)), max(hi, slices.Max(rs))
	}
	s.XYs = append(s.XYs, plotter.XY{X: x, Y: y})
	s.YErrors = append(s.YErrors, struct{ Low, High float64 }{y - lo, hi - y})
}

// extent returns the lowest and highest y including the error bars.
func (s *series) extent() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for i, xy := range s.XYs {
		lo = min(lo, xy.Y-s.YErrors[i].Low)
		hi = max(hi, xy.Y+s.YErrors[i].High)
	}
	return lo, hi
}

// usable drops runs that are no throughput at all: zeros (infeasible runs)
// and non-finite values, which would drag the axis down to 0 or break it.
func usable(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if x > 0 && finite(x) {
			out = append(out, x)
		}
	}
	return out
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func newPlot(r *Results) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: what if %s were faster", r.App, r.Target)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = fmt.Sprintf("reduction of %s's CPU time per call (%%)", r.Target)
	p.Y.Label.Text = "throughput (req/s)"
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)

	var predicted, truth series
	var flagged, infeasibleX plotter.XYs
	xlo, xhi := 0.0, 0.0
	for _, pt := range sortedPoints(r) {
		x := pt.ReductionPct
		if !finite(x) {
			continue
		}
		xlo, xhi = min(xlo, x), max(xhi, x)
		if pt.Infeasible() || !finite(pt.PredictedRPS) {
			infeasibleX = append(infeasibleX, plotter.XY{X: x})
		} else {
			predicted.add(x, pt.PredictedRPS, pt.PredictedRuns)
			if len(pt.Flags) > 0 {
				flagged = append(flagged, plotter.XY{X: x, Y: pt.PredictedRPS})
			}
		}
		if pt.TrueRPS != nil && *pt.TrueRPS > 0 && finite(*pt.TrueRPS) {
			truth.add(x, *pt.TrueRPS, pt.TrueRuns)
		}
	}

	ylo, yhi := math.Inf(1), math.Inf(-1)
	base := r.Baseline.RPS
	hasBase := base > 0 && finite(base)
	if hasBase {
		ylo, yhi = base, base
	}
	for _, s := range []*series{&predicted, &truth} {
		lo, hi := s.extent()
		ylo, yhi = min(ylo, lo), max(yhi, hi)
	}
	if ylo > yhi { // nothing to draw but axes
		ylo, yhi = 0, 1
	}

	if hasBase {
		line, err := plotter.NewLine(plotter.XYs{{X: xlo, Y: base}, {X: xhi, Y: base}})
		if err != nil {
			return nil, err
		}
		line.Color = baselineColor
		line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("baseline (%.0f req/s)", base), line)
	}
	if err := addSeries(p, &predicted, "predicted (virtual speedup)", predictedColor, draw.CircleGlyph{}); err != nil {
		return nil, err
	}
	if err := addSeries(p, &truth, "true (really optimized)", trueColor, draw.TriangleGlyph{}); err != nil {
		return nil, err
	}
	if sc, err := addFlagged(p, flagged); err != nil {
		return nil, err
	} else if sc != nil {
		p.Legend.Add("flagged (see table)", sc)
	}

	// Leave room at the top for the legend; start at 0 rather than below it.
	span := yhi - ylo
	if span <= 0 {
		span = max(math.Abs(yhi)*0.1, 1)
	}
	p.Y.Min = max(0, ylo-0.1*span)
	p.Y.Max = yhi + 0.35*span

	// Infeasible points have no throughput; mark them just above the x axis
	// instead of plotting 0, which would squash the interesting range.
	if len(infeasibleX) > 0 {
		y := p.Y.Min + (ylo-p.Y.Min)/2
		for i := range infeasibleX {
			infeasibleX[i].Y = y
		}
		sc, err := plotter.NewScatter(infeasibleX)
		if err != nil {
			return nil, err
		}
		sc.Shape, sc.Color, sc.Radius = draw.BoxGlyph{}, flaggedColor, vg.Points(3)
		p.Add(sc)
		p.Legend.Add("infeasible (no prediction)", sc)
	}

	xspan := xhi - xlo
	if xspan <= 0 {
		xspan = 1
	}
	p.X.Min = xlo - 0.03*xspan
	p.X.Max = xhi + 0.05*xspan
	return p, nil
}

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("1500", not "1500.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

func addSeries(p *plot.Plot, s *series, name string, c color.Color, glyph draw.GlyphDrawer) error {
	if len(s.XYs) == 0 {
		return nil
	}
	line, points, err := plotter.NewLinePoints(s.XYs)
	if err != nil {
		return err
	}
	line.Color = c
	points.Color, points.Shape, points.Radius = c, glyph, vg.Points(3)
	bars, err := plotter.NewYErrorBars(s)
	if err != nil {
		return err
	}
	bars.Color = c
	p.Add(bars, line, points)
	p.Legend.Add(name, line, points)
	return nil
}

// addFlagged marks the flagged points with crosses; nil when there are none.
func addFlagged(p *plot.Plot, flagged plotter.XYs) (*plotter.Scatter, error) {
	if len(flagged) == 0 {
		return nil, nil
	}
	sc, err := plotter.NewScatter(flagged)
	if err != nil {
		return nil, err
	}
	sc.Shape, sc.Color, sc.Radius = draw.CrossGlyph{}, flaggedColor, vg.Points(5)
	p.Add(sc)
	return sc, nil
}
