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

// newLatencyPage builds the page of a latency what-if: per request type a
// table and the CDF chart, the headline and the reproducing command.
func newLatencyPage(l *Latency) (*htmlPage, error) {
	human, iso := createdAt(l.CreatedAt)
	page := &htmlPage{Kind: KindLatency, Title: fmt.Sprintf("Latency of %s if %s were faster", l.App, l.Target),
		Created: human, CreatedISO: iso, Warnings: l.Warnings, NoGraph: true}
	hl := &htmlLatency{Rate: fmt.Sprintf("%s req/s (%.0f%% of the saturating %s req/s), %s a run",
		rps(l.RateRPS), l.RateRPS/l.SaturationRPS*100, rps(l.SaturationRPS), seconds(l.DurationS))}
	var heads []string
	var within, validated int
	for _, b := range l.Baseline {
		t, last, v, w := latencyTable(l, b)
		hl.Tables = append(hl.Tables, t)
		validated, within = validated+v, within+w
		if last != nil {
			heads = append(heads, fmt.Sprintf("%s: p50 %.2f → %.2f ms, p99 %.2f → %.2f ms", b.Request, b.P50MS, last.PredictedP50MS, b.P99MS, last.PredictedP99MS))
		}
		fig, err := latencyFigure(l, b.Request)
		if err != nil {
			return nil, err
		}
		page.Figures = append(page.Figures, fig)
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
	page.Settings = latencySettings(l)
	page.Command = reproduceLatency(l)
	return page, nil
}

// latencyTable is the table of the request type of b: its baseline, then
// each of its points' prediction and, where validated, truth. last is its
// last point (nil for none); validated counts its validated points and
// within those within the bounds.
func latencyTable(l *Latency, b LatencyDist) (t htmlLatencyTable, last *LatencyPoint, validated, within int) {
	t = htmlLatencyTable{Request: b.Request}
	t.Rows = append(t.Rows, htmlLatencyRow{Label: "baseline", P50: msWithCI(b.P50MS, b.P50CIMS), P90: msWithCI(b.P90MS, b.P90CIMS),
		P99: msWithCI(b.P99MS, b.P99CIMS), N: fmt.Sprint(b.N), Faster: "–", Err50: "–", Err90: "–", Err99: "–"})
	for i := range l.Points {
		pt := &l.Points[i]
		if pt.Request != b.Request {
			continue
		}
		last = pt
		v := pt.True != nil
		label := fmt.Sprintf("predicted −%s (%s µs per call)", pt.Reduction, trimFloat(math.Round(pt.ReductionUS)))
		t.Rows = append(t.Rows, htmlLatencyRow{Label: label, P50: msWithCI(pt.PredictedP50MS, pt.Predicted.P50CIMS), P90: msWithCI(pt.PredictedP90MS, pt.Predicted.P90CIMS),
			P99: msWithCI(pt.PredictedP99MS, pt.Predicted.P99CIMS), N: fmt.Sprint(pt.Predicted.N), Faster: Verdict(pt.MannWhitneyP),
			Err50: signedPctOrDash(pt.ErrP50Pct, v), Err90: signedPctOrDash(pt.ErrP90Pct, v), Err99: signedPctOrDash(pt.ErrP99Pct, v)})
		if !v {
			continue
		}
		validated++
		if pt.Within {
			within++
		}
		t.Rows = append(t.Rows, latencyTruthRow(pt))
	}
	return t, last, validated, within
}

// latencyTruthRow is the row of pt's truth (pt is validated).
func latencyTruthRow(pt *LatencyPoint) htmlLatencyRow {
	tv := "–"
	if pt.TrueMannWhitneyP != nil {
		tv = Verdict(*pt.TrueMannWhitneyP)
	}
	return htmlLatencyRow{Label: fmt.Sprintf("true −%s", pt.Reduction), P50: msWithCI(pt.True.P50MS, pt.True.P50CIMS),
		P90: msWithCI(pt.True.P90MS, pt.True.P90CIMS), P99: msWithCI(pt.True.P99MS, pt.True.P99CIMS), N: fmt.Sprint(pt.True.N), Faster: tv,
		Err50: "–", Err90: "–", Err99: "–"}
}

// msWithCI formats a latency with its confidence interval: "2.40 ms [2.35, 2.45]".
func msWithCI(v float64, ci [2]float64) string {
	return fmt.Sprintf("%.2f ms [%.2f, %.2f]", v, ci[0], ci[1])
}

// signedPctOrDash formats an error with its sign, "+2.9%", or "–" when
// there is none (!ok).
func signedPctOrDash(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%+.1f%%", v)
}

// latencyFigure is the CDF chart of request (newLatencyPlot), for inlining.
func latencyFigure(l *Latency, request string) (htmlFigure, error) {
	p, err := newLatencyPlot(l, request)
	if err != nil {
		return htmlFigure{}, err
	}
	svg, err := inlineSVG(p, fmt.Sprintf("Latency distribution of %s: baseline, predicted and true", request))
	if err != nil {
		return htmlFigure{}, err
	}
	return htmlFigure{Title: request, SVG: svg,
		Caption: "Cumulative distribution of latency up to the 99.9th percentile: the baseline (black), each prediction (solid) and its truth (dashed)."}, nil
}

// latencySettings lists the settings of a latency what-if, with how busy
// the cores were where that was measured.
func latencySettings(l *Latency) []htmlSetting {
	settings := []htmlSetting{
		{Name: "Spec", Value: l.Settings.SpecPath},
		{Name: "Target", Value: l.Target},
		{Name: "Reductions", Value: strings.Join(l.Settings.Reductions, ", ")},
		{Name: "Target's CPU per call", Value: fmt.Sprintf("%.0f µs", l.TargetCostUS)},
		{Name: "Requests per type and run", Value: fmt.Sprint(l.Settings.MinRequests)},
		{Name: "Repetitions", Value: fmt.Sprint(l.Settings.Repetitions)},
	}
	if b := coresBusy(l); b != "" {
		settings = append(settings, htmlSetting{Name: "Cores busy", Value: b})
	}
	return settings
}

// reproduceLatency is the command that repeats a latency what-if, with
// only the flags that differ from their defaults.
func reproduceLatency(l *Latency) string {
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
	return shellJoin(args)
}
