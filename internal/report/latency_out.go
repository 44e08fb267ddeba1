package report

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
)

// latencyColors are the reductions' colours in CDF plots (the baseline is
// black), cycled.
var latencyColors = []color.RGBA{
	{R: 0, G: 114, B: 178, A: 255},
	{R: 213, G: 94, B: 0, A: 255},
	{R: 0, G: 158, B: 115, A: 255},
	{R: 204, G: 121, B: 167, A: 255},
	{R: 230, G: 159, B: 0, A: 255},
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// LatencyPlotName is the file name of a request type's CDF plot.
func LatencyPlotName(request string) string {
	n := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(request), "-"), "-")
	if n == "" {
		n = "request"
	}
	return "cdf-" + n + ".svg"
}

// WriteLatencyPlots writes one CDF plot per request type of l to dir
// (LatencyPlotName) and returns their paths, in the order of l.Baseline.
func WriteLatencyPlots(dir string, l *Latency) ([]string, error) {
	var paths []string
	for _, b := range l.Baseline {
		p, err := newLatencyPlot(l, b.Request)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Request, err)
		}
		c := vgsvg.New(plotWidth, plotHeight)
		p.Draw(draw.New(c))
		path := filepath.Join(dir, LatencyPlotName(b.Request))
		if err := atomicfile.WriteFunc(path, 0o644, func(w io.Writer) error {
			_, err := c.WriteTo(w)
			return err
		}); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// newLatencyPlot draws the CDFs of one request type: the baseline (black),
// each reduction's prediction (solid) and truth (dashed, same colour).
func newLatencyPlot(l *Latency, request string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: latency if %s were faster", request, l.Target)
	p.X.Label.Text = "latency (ms)"
	p.Y.Label.Text = "requests (%)"
	p.Y.Min, p.Y.Max = 0, 100
	add := func(d LatencyDist, c color.Color, dashed bool, label string) error {
		if len(d.QuantilesMS) != len(LatencyQuantiles) {
			return errors.New("a distribution has no quantiles")
		}
		pts := make(plotter.XYs, len(LatencyQuantiles))
		for i, q := range LatencyQuantiles {
			pts[i] = plotter.XY{X: d.QuantilesMS[i], Y: q}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = c
		line.Width = vg.Points(1.5)
		if dashed {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line)
		p.Legend.Add(label, line)
		return nil
	}
	for _, b := range l.Baseline {
		if b.Request == request {
			if err := add(b, color.Black, false, "baseline"); err != nil {
				return nil, err
			}
		}
	}
	k := 0
	for _, pt := range l.Points {
		if pt.Request != request {
			continue
		}
		c := latencyColors[k%len(latencyColors)]
		k++
		red := fmt.Sprintf("−%s (%sus)", pt.Reduction, trimFloat(math.Round(pt.ReductionUS)))
		if err := add(pt.Predicted, c, false, "predicted "+red); err != nil {
			return nil, err
		}
		if pt.True != nil {
			if err := add(*pt.True, c, true, "true "+red); err != nil {
				return nil, err
			}
		}
	}
	// The tail beyond p99.9 would squash the rest: the x axis ends there.
	i999 := len(LatencyQuantiles) - 2
	var xmax float64
	for _, b := range l.Baseline {
		if b.Request == request {
			xmax = max(xmax, b.QuantilesMS[i999])
		}
	}
	for _, pt := range l.Points {
		if pt.Request == request {
			xmax = max(xmax, pt.Predicted.QuantilesMS[i999])
			if pt.True != nil {
				xmax = max(xmax, pt.True.QuantilesMS[i999])
			}
		}
	}
	p.X.Min, p.X.Max = 0, xmax*1.05
	p.Add(plotter.NewGrid())
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.YOffs = vg.Points(20)
	return p, nil
}

// htmlLatency is the latency page's own part.
type htmlLatency struct {
	Rate   string
	Tables []htmlLatencyTable
}

type htmlLatencyTable struct {
	Request string
	Rows    []htmlLatencyRow
}

type htmlLatencyRow struct {
	Label, P50, P90, P99, N, Faster, Err50, Err90, Err99 string
}

// WriteLatencyHTML writes the results of slowpoke latency to path as a
// self-contained HTML page, atomically.
func WriteLatencyHTML(path string, l *Latency) error {
	if l == nil {
		return errors.New("report: no latency results to write as HTML")
	}
	page, err := newLatencyPage(l)
	if err != nil {
		return err
	}
	return writeHTMLPage(path, page)
}

func newLatencyPage(l *Latency) (*htmlPage, error) {
	human, iso := createdAt(l.CreatedAt)
	page := &htmlPage{Kind: KindLatency, Title: fmt.Sprintf("Latency of %s if %s were faster", l.App, l.Target),
		Created: human, CreatedISO: iso, Warnings: l.Warnings, NoGraph: true}
	ms := func(v float64, ci [2]float64) string { return fmt.Sprintf("%.2f ms [%.2f, %.2f]", v, ci[0], ci[1]) }
	pct := func(v float64, ok bool) string {
		if !ok {
			return "–"
		}
		return fmt.Sprintf("%+.1f%%", v)
	}
	hl := &htmlLatency{Rate: fmt.Sprintf("%s req/s (%.0f%% of the saturating %s req/s), %s a run",
		rps(l.RateRPS), l.RateRPS/l.SaturationRPS*100, rps(l.SaturationRPS), seconds(l.DurationS))}
	var heads []string
	var within, validated int
	for _, b := range l.Baseline {
		t := htmlLatencyTable{Request: b.Request}
		t.Rows = append(t.Rows, htmlLatencyRow{Label: "baseline", P50: ms(b.P50MS, b.P50CIMS), P90: ms(b.P90MS, b.P90CIMS),
			P99: ms(b.P99MS, b.P99CIMS), N: fmt.Sprint(b.N), Faster: "–", Err50: "–", Err90: "–", Err99: "–"})
		var last *LatencyPoint
		for i := range l.Points {
			pt := &l.Points[i]
			if pt.Request != b.Request {
				continue
			}
			last = pt
			verdict := Verdict(pt.MannWhitneyP)
			v := pt.True != nil
			label := fmt.Sprintf("predicted −%s (%s µs per call)", pt.Reduction, trimFloat(math.Round(pt.ReductionUS)))
			t.Rows = append(t.Rows, htmlLatencyRow{Label: label, P50: ms(pt.PredictedP50MS, pt.Predicted.P50CIMS), P90: ms(pt.PredictedP90MS, pt.Predicted.P90CIMS),
				P99: ms(pt.PredictedP99MS, pt.Predicted.P99CIMS), N: fmt.Sprint(pt.Predicted.N), Faster: verdict,
				Err50: pct(pt.ErrP50Pct, v), Err90: pct(pt.ErrP90Pct, v), Err99: pct(pt.ErrP99Pct, v)})
			if v {
				validated++
				if pt.Within {
					within++
				}
				tv := "–"
				if pt.TrueMannWhitneyP != nil {
					tv = Verdict(*pt.TrueMannWhitneyP)
				}
				t.Rows = append(t.Rows, htmlLatencyRow{Label: fmt.Sprintf("true −%s", pt.Reduction), P50: ms(pt.True.P50MS, pt.True.P50CIMS),
					P90: ms(pt.True.P90MS, pt.True.P90CIMS), P99: ms(pt.True.P99MS, pt.True.P99CIMS), N: fmt.Sprint(pt.True.N), Faster: tv,
					Err50: "–", Err90: "–", Err99: "–"})
			}
		}
		hl.Tables = append(hl.Tables, t)
		if last != nil {
			heads = append(heads, fmt.Sprintf("%s: p50 %.2f → %.2f ms, p99 %.2f → %.2f ms", b.Request, b.P50MS, last.PredictedP50MS, b.P99MS, last.PredictedP99MS))
		}
		p, err := newLatencyPlot(l, b.Request)
		if err != nil {
			return nil, err
		}
		svg, err := inlineSVG(p, fmt.Sprintf("Latency distribution of %s: baseline, predicted and true", b.Request))
		if err != nil {
			return nil, err
		}
		page.Figures = append(page.Figures, htmlFigure{Title: b.Request, SVG: svg,
			Caption: "Cumulative distribution of latency up to the 99.9th percentile: the baseline (black), each prediction (solid) and its truth (dashed)."})
	}
	page.Latency = hl
	if len(l.Points) > 0 {
		page.Headline = fmt.Sprintf("With %s %s cheaper per call: %s.", l.Target, l.Points[len(l.Points)-1].Reduction, strings.Join(heads, "; "))
	} else {
		page.Headline = "No prediction was made."
	}
	if validated > 0 {
		page.Notes = append(page.Notes, fmt.Sprintf("%d of %d predictions within ±%d%% at p50 and ±%d%% at p99 of the truth.", within, validated, LatencyP50BoundPct, LatencyP99BoundPct))
	}
	page.Settings = []htmlSetting{
		{Name: "Spec", Value: l.Settings.SpecPath},
		{Name: "Target", Value: l.Target},
		{Name: "Reductions", Value: strings.Join(l.Settings.Reductions, ", ")},
		{Name: "Target's CPU per call", Value: fmt.Sprintf("%.0f µs", l.TargetCostUS)},
		{Name: "Requests per type and run", Value: fmt.Sprint(l.Settings.MinRequests)},
		{Name: "Repetitions", Value: fmt.Sprint(l.Settings.Repetitions)},
	}
	if b := coresBusy(l); b != "" {
		page.Settings = append(page.Settings, htmlSetting{Name: "Cores busy", Value: b})
	}
	args := []string{"slowpoke", "latency", "-f", l.Settings.SpecPath, "--target", l.Target, "--reduce", strings.Join(l.Settings.Reductions, ",")}
	if l.Settings.Validate {
		args = append(args, "--validate")
	}
	if l.Settings.Rate > 0 {
		args = append(args, "--rate", trimFloat(l.Settings.Rate))
	}
	if l.Settings.Duration > 0 {
		args = append(args, "--duration", fmt.Sprintf("%gs", l.Settings.Duration))
	}
	if l.Settings.Repetitions > 1 {
		args = append(args, "--reps", fmt.Sprint(l.Settings.Repetitions))
	}
	if n := l.Settings.MinRequests; n > 0 && n != DefaultLatencyRequests {
		args = append(args, "--requests", fmt.Sprint(n))
	}
	page.Command = shellJoin(args)
	return page, nil
}
