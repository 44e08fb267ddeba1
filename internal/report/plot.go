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

// errorBars is what a point's error bar spans: its 90% interval (up to
// its prediction for a lower bound), or its runs where it has none.
func errorBars(pt Point) []float64 {
	switch {
	case pt.Estimate == EstimateValue && pt.IntervalHighRPS > 0:
		return []float64{pt.IntervalLowRPS, pt.IntervalHighRPS}
	case pt.Estimate == EstimateLowerBound:
		return []float64{pt.IntervalLowRPS, pt.PredictedRPS}
	}
	return pt.PredictedRuns
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

// newPlot draws the throughput chart of r (see Plot).
func newPlot(r *Results) (*plot.Plot, error) {
	p := newFramedPlot(fmt.Sprintf("%s: what if %s were faster", r.App, r.Target),
		fmt.Sprintf("reduction of %s's CPU time per call (%%)", r.Target), "throughput (req/s)")
	topLeftLegend(p)
	c := throughputCurvesOf(r)
	base := r.Baseline.RPS
	hasBase := base > 0 && finite(base)
	ylo, yhi := c.yRange(base, hasBase)

	if hasBase {
		line, err := baselineLine(c.xlo, c.xhi, base)
		if err != nil {
			return nil, err
		}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("baseline (%.0f req/s)", base), line)
	}
	if err := addSeries(p, &c.predicted, "predicted (virtual speedup)", predictedColor, draw.CircleGlyph{}); err != nil {
		return nil, err
	}
	if err := addSeries(p, &c.truth, "true (really optimized)", trueColor, draw.TriangleGlyph{}); err != nil {
		return nil, err
	}
	if sc, err := addFlagged(p, c.flagged); err != nil {
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
	if err := addInfeasible(p, c.infeasible, ylo); err != nil {
		return nil, err
	}
	padX(p, c.xlo, c.xhi)
	return p, nil
}

// throughputCurves are what the throughput chart draws of r's points.
type throughputCurves struct {
	predicted, truth series
	flagged          plotter.XYs // feasible points with flags, at their prediction
	infeasible       plotter.XYs // points without a prediction, y still to place
	xlo, xhi         float64     // the reductions' range, 0 included
}

// throughputCurvesOf sorts r's points into the curves of the throughput
// chart, skipping those whose reduction is not finite.
func throughputCurvesOf(r *Results) *throughputCurves {
	c := &throughputCurves{}
	for _, pt := range sortedPoints(r) {
		x := pt.ReductionPct
		if !finite(x) {
			continue
		}
		c.xlo, c.xhi = min(c.xlo, x), max(c.xhi, x)
		if pt.Infeasible() || !finite(pt.PredictedRPS) {
			c.infeasible = append(c.infeasible, plotter.XY{X: x})
		} else {
			c.predicted.add(x, pt.PredictedRPS, errorBars(pt))
			if len(pt.Flags) > 0 {
				c.flagged = append(c.flagged, plotter.XY{X: x, Y: pt.PredictedRPS})
			}
		}
		if pt.TrueRPS != nil && *pt.TrueRPS > 0 && finite(*pt.TrueRPS) {
			c.truth.add(x, *pt.TrueRPS, pt.TrueRuns)
		}
	}
	return c
}

// yRange is the range of throughput the chart must show: the curves with
// their error bars and the baseline when there is one; 0..1 for nothing.
func (c *throughputCurves) yRange(base float64, hasBase bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	if hasBase {
		lo, hi = base, base
	}
	for _, s := range []*series{&c.predicted, &c.truth} {
		slo, shi := s.extent()
		lo, hi = min(lo, slo), max(hi, shi)
	}
	if lo > hi { // nothing to draw but axes
		lo, hi = 0, 1
	}
	return lo, hi
}

// addInfeasible marks the points without a prediction with squares just
// above the x axis, halfway between it and ylo, instead of plotting 0,
// which would squash the interesting range. It uses p.Y.Min, so it comes
// after the y axis is set.
func addInfeasible(p *plot.Plot, infeasible plotter.XYs, ylo float64) error {
	if len(infeasible) == 0 {
		return nil
	}
	y := p.Y.Min + (ylo-p.Y.Min)/2
	for i := range infeasible {
		infeasible[i].Y = y
	}
	sc, err := plotter.NewScatter(infeasible)
	if err != nil {
		return err
	}
	sc.Shape, sc.Color, sc.Radius = draw.BoxGlyph{}, flaggedColor, vg.Points(3)
	p.Add(sc)
	p.Legend.Add("infeasible (no prediction)", sc)
	return nil
}

// newFramedPlot is the frame the throughput, error and gain charts share:
// a title, axis labels, tick labels without trailing zeros and a light
// grid.
func newFramedPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)
	return p
}

// topLeftLegend puts p's legend in its top left corner, in small type.
func topLeftLegend(p *plot.Plot) {
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
}

// baselineLine is the dashed horizontal line at y from x1 to x2 that marks
// the baseline (or no change) in the charts.
func baselineLine(x1, x2, y float64) (*plotter.Line, error) {
	line, err := plotter.NewLine(plotter.XYs{{X: x1, Y: y}, {X: x2, Y: y}})
	if err != nil {
		return nil, err
	}
	line.Color = baselineColor
	line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	return line, nil
}

// padX sets p's x axis to lo..hi with a little room either side (a span
// of 1 when the range is empty).
func padX(p *plot.Plot, lo, hi float64) {
	span := hi - lo
	if span <= 0 {
		span = 1
	}
	p.X.Min = lo - 0.03*span
	p.X.Max = hi + 0.05*span
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

// addSeries draws s as a line through its points with their error bars,
// in colour c with glyph, and gives it a legend entry named name (none
// when name is empty); an empty series draws nothing.
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
	if name != "" {
		p.Legend.Add(name, line, points)
	}
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
