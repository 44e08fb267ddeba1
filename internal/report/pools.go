package report

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
	"github.com/slowpoke-dev/slowpoke/internal/pools"
)

// KindPools marks the results.json of slowpoke pools.
const KindPools = "pools"

// Pools is what slowpoke pools found: each critical service's recommended
// concurrency, and with validation how the application does with it.
type Pools struct {
	Version   int           `json:"version"`
	Kind      string        `json:"kind"` // KindPools
	App       string        `json:"app"`
	CreatedAt time.Time     `json:"created_at"`
	SLAMS     float64       `json:"sla_ms"`
	Settings  PoolsSettings `json:"settings"`
	// Baseline is the application as it runs before any change: every
	// limit as the spec sets it (none by default).
	Baseline PoolsLoad     `json:"baseline"`
	Services []PoolService `json:"services"`
	// AdviceS is the time from the start to the recommendations (start-up
	// of the services excluded); ElapsedS includes the validation.
	AdviceS  float64  `json:"advice_s"`
	ElapsedS float64  `json:"elapsed_s"`
	Warnings []string `json:"warnings,omitempty"`
}

// PoolsSettings is how the advisor ran.
type PoolsSettings struct {
	SpecPath    string   `json:"spec_path"`
	Connections int      `json:"connections"`
	WarmupS     float64  `json:"warmup_s"`
	DurationS   float64  `json:"duration_s"`
	StepS       float64  `json:"step_s"`                // time at each limit of the sweep
	Levels      []int    `json:"levels"`                // the limits swept
	SampleMS    float64  `json:"sample_ms"`             // sampling window
	Repetitions int      `json:"repetitions,omitempty"` // validation runs of each size
	Services    []string `json:"services,omitempty"`    // as asked with --services
}

// PoolsLoad is one measured window of the whole application.
type PoolsLoad struct {
	Throughput float64 `json:"throughput_rps"`
	// Goodput is the rate of requests answered within the SLA; Attainment
	// their share of all answers (%).
	Goodput       float64 `json:"goodput_rps"`
	AttainmentPct float64 `json:"sla_attainment_pct"`
	P50MS         float64 `json:"p50_ms"`
	P99MS         float64 `json:"p99_ms"`
}

// PoolService is one critical service's advice.
type PoolService struct {
	Service string `json:"service"`
	// Why it was tuned: "asked" (--services) or its CPU use.
	Reason          string  `json:"reason"`
	BusyPct         float64 `json:"busy_pct"` // CPU used in the baseline, % of its cores
	CallsPerRequest float64 `json:"calls_per_request"`
	// ThresholdMS is the response time within which the service's calls
	// count as good: the SLA minus UpstreamMS, the CPU time per call of
	// the services before it on the longest path from the entry.
	ThresholdMS float64  `json:"threshold_ms"`
	UpstreamMS  float64  `json:"upstream_ms"`
	Upstream    []string `json:"upstream,omitempty"`
	// Advice holds Recommended, the pool size: the most calls the service
	// should admit at a time; and the knee, the peak and the fit.
	pools.Advice
	Samples []pools.Sample `json:"samples"`
	// Plot is the goodput-versus-concurrency figure, relative to
	// results.json.
	Plot       string          `json:"plot,omitempty"`
	Validation *PoolValidation `json:"validation,omitempty"`
}

// PoolValidation is the application measured with the service's pool at
// the recommended size, half of it, double it and unlimited (the other
// critical services at their recommended sizes), Repetitions runs each,
// interleaved. Goodputs are end to end: requests answered within the SLA
// per second, the mean over runs.
type PoolValidation struct {
	RecommendedGoodput float64 `json:"recommended_goodput"`
	HalfGoodput        float64 `json:"half_goodput"`
	DoubleGoodput      float64 `json:"double_goodput"`
	UnlimitedGoodput   float64 `json:"unlimited_goodput"`
	// Sizes has every size tried, in the order above.
	Sizes []PoolTrial `json:"sizes"`
	// RecommendedShareOfBestPct is the recommended size's goodput as a
	// share of the best of recommended, half and double.
	RecommendedShareOfBestPct float64 `json:"recommended_share_of_best_pct"`
}

// PoolTrial is one pool size measured.
type PoolTrial struct {
	Label string      `json:"label"` // recommended, half, double, unlimited
	Size  int         `json:"size"`  // 0: unlimited
	Runs  []PoolsLoad `json:"runs"`
	Mean  PoolsLoad   `json:"mean"`
	// GoodputStdErrPct is the standard error of the mean goodput, % of it.
	GoodputStdErrPct float64 `json:"goodput_stderr_pct"`
}

// MeanLoad averages runs field by field.
func MeanLoad(runs []PoolsLoad) PoolsLoad {
	var m PoolsLoad
	if len(runs) == 0 {
		return m
	}
	for _, r := range runs {
		m.Throughput += r.Throughput
		m.Goodput += r.Goodput
		m.AttainmentPct += r.AttainmentPct
		m.P50MS += r.P50MS
		m.P99MS += r.P99MS
	}
	n := float64(len(runs))
	m.Throughput /= n
	m.Goodput /= n
	m.AttainmentPct /= n
	m.P50MS /= n
	m.P99MS /= n
	return m
}

// WritePoolsJSON writes p as results.json of kind pools.
func WritePoolsJSON(path string, p *Pools) error {
	c := *p
	if c.Version == 0 {
		c.Version = Version
	}
	c.Kind = KindPools
	return writeJSON(path, &c)
}

// ReadPoolsJSON reads a file written by WritePoolsJSON.
func ReadPoolsJSON(path string) (*Pools, error) {
	var p Pools
	if err := readJSON(path, &p); err != nil {
		return nil, err
	}
	switch {
	case p.Kind != KindPools:
		return nil, fmt.Errorf("%s: not the results of slowpoke pools (kind %q)", path, p.Kind)
	case p.Version > Version:
		return nil, newerVersion(path, p.Version)
	}
	return &p, nil
}

// WritePoolsTable prints the advice, and the validation where there is one.
func WritePoolsTable(w io.Writer, p *Pools) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "%s: pool sizes for an SLA of %s (baseline %s req/s, %s within the SLA, %.1f%% attainment)\n\n",
		p.App, trimFloat(p.SLAMS)+"ms", trimFloat(math.Round(p.Baseline.Throughput)), trimFloat(math.Round(p.Baseline.Goodput))+" req/s", p.Baseline.AttainmentPct)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "service\trecommended\tknee\tpeak\tgoodput at knee\tpeak goodput\tthreshold\tbusy\twhy")
	for _, s := range p.Services {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.0f/s\t%.0f/s\t%sms\t%.0f%%\t%s\n", s.Service, s.Recommended, s.Knee, s.Peak,
			s.KneeGoodput, s.PeakGoodput, trimFloat(math.Round(s.ThresholdMS*10)/10), s.BusyPct, s.Reason)
	}
	tw.Flush()
	for _, s := range p.Services {
		v := s.Validation
		if v == nil {
			continue
		}
		fmt.Fprintf(ew, "\nvalidation of %s (%d runs each, the application end to end):\n", s.Service, p.Settings.Repetitions)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "size\tpool\tgoodput (req/s within SLA)\tthroughput\tSLA attainment\tp50\tp99")
		for _, t := range v.Sizes {
			size := "unlimited"
			if t.Size > 0 {
				size = fmt.Sprint(t.Size)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f ± %.1f%%\t%.0f\t%.1f%%\t%.1fms\t%.1fms\n", t.Label, size, t.Mean.Goodput, t.GoodputStdErrPct,
				t.Mean.Throughput, t.Mean.AttainmentPct, t.Mean.P50MS, t.Mean.P99MS)
		}
		tw.Flush()
		fmt.Fprintf(ew, "recommended: %.1f%% of the best of recommended, half and double\n", v.RecommendedShareOfBestPct)
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(ew, "warning: %s\n", warn)
	}
	return ew.err
}

// PlotPool draws a service's goodput against concurrency: the samples, the
// fitted curve and the knee, as SVG.
func PlotPool(path string, s *PoolService) error {
	p, err := newPoolPlot(s)
	if err != nil {
		return err
	}
	c := vgsvg.New(plotWidth, plotHeight)
	p.Draw(draw.New(c))
	return atomicfile.WriteFunc(path, 0o644, func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

func newPoolPlot(s *PoolService) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: goodput against concurrency", s.Service)
	p.X.Label.Text = "calls in flight (mean over each sample)"
	p.Y.Label.Text = fmt.Sprintf("good calls/s (within %sms)", trimFloat(math.Round(s.ThresholdMS*10)/10))
	pts := make(plotter.XYs, 0, len(s.Samples))
	for _, q := range s.Samples {
		pts = append(pts, plotter.XY{X: q.Concurrency, Y: q.Goodput})
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Radius = vg.Points(1.5)
	sc.GlyphStyle.Color = color.RGBA{R: 120, G: 120, B: 120, A: 255}
	curve := make(plotter.XYs, 0, len(s.Curve))
	for _, q := range s.Curve {
		curve = append(curve, plotter.XY{X: q.Concurrency, Y: q.Goodput})
	}
	line, err := plotter.NewLine(curve)
	if err != nil {
		return nil, err
	}
	line.Color = color.RGBA{B: 200, A: 255}
	line.Width = vg.Points(1.5)
	knee, err := plotter.NewScatter(plotter.XYs{{X: s.Knee, Y: s.KneeGoodput}})
	if err != nil {
		return nil, err
	}
	knee.GlyphStyle.Shape = draw.CrossGlyph{}
	knee.GlyphStyle.Radius = vg.Points(6)
	knee.GlyphStyle.Color = color.RGBA{R: 220, A: 255}
	p.Add(sc, line, knee, plotter.NewGrid())
	p.Legend.Add("samples (100 ms)", sc)
	p.Legend.Add(fmt.Sprintf("fit (degree %d)", s.Degree), line)
	p.Legend.Add(fmt.Sprintf("knee: %.1f in flight (pool %d)", s.Knee, s.Recommended), knee)
	p.Legend.Top = true
	return p, nil
}

// PoolPlotName is the file name of a service's plot.
func PoolPlotName(service string) string {
	return "pool-" + strings.ReplaceAll(service, "/", "_") + ".svg"
}

// WritePoolsHTML writes the results of slowpoke pools to path as a
// self-contained HTML page, atomically. p is not modified.
func WritePoolsHTML(path string, p *Pools) error {
	if p == nil {
		return errors.New("report: no pool advice to write as HTML")
	}
	page, err := newPoolsPage(p)
	if err != nil {
		return err
	}
	return writeHTMLPage(path, page)
}

// htmlPools is the pools page's own part.
type htmlPools struct {
	SLA         string
	Baseline    htmlPoolLoad
	Rows        []htmlPoolRow
	Validations []htmlPoolValidation
}

type htmlPoolRow struct {
	Service, Recommended, Knee, Peak, KneeGoodput, PeakGoodput, Threshold, Upstream, Busy, Reason string
}

type htmlPoolLoad struct {
	Label, Size, Goodput, StdErr, Throughput, Attainment, P50, P99 string
}

type htmlPoolValidation struct {
	Service string
	Runs    int
	Rows    []htmlPoolLoad
	Share   string
}

func poolLoadRow(label, size string, l PoolsLoad, stderr string) htmlPoolLoad {
	return htmlPoolLoad{Label: label, Size: size, Goodput: rps(l.Goodput), StdErr: stderr, Throughput: rps(l.Throughput),
		Attainment: fmt.Sprintf("%.1f%%", l.AttainmentPct), P50: fmt.Sprintf("%.1f ms", l.P50MS), P99: fmt.Sprintf("%.1f ms", l.P99MS)}
}

func newPoolsPage(p *Pools) (*htmlPage, error) {
	human, iso := createdAt(p.CreatedAt)
	page := &htmlPage{Kind: KindPools, Title: fmt.Sprintf("Pool sizes for %s", p.App), Created: human, CreatedISO: iso,
		Warnings: p.Warnings, NoGraph: true}
	hp := &htmlPools{SLA: trimFloat(p.SLAMS) + " ms", Baseline: poolLoadRow("baseline", "as started", p.Baseline, "–")}
	var heads []string
	for i := range p.Services {
		s := &p.Services[i]
		hp.Rows = append(hp.Rows, htmlPoolRow{Service: s.Service, Recommended: fmt.Sprint(s.Recommended),
			Knee: fmt.Sprintf("%.1f", s.Knee), Peak: fmt.Sprintf("%.1f", s.Peak),
			KneeGoodput: rps(s.KneeGoodput), PeakGoodput: rps(s.PeakGoodput),
			Threshold: fmt.Sprintf("%.1f ms", s.ThresholdMS), Upstream: orDash(strings.Join(s.Upstream, " → ")),
			Busy: fmt.Sprintf("%.0f%%", s.BusyPct), Reason: s.Reason})
		head := fmt.Sprintf("%s: at most %d calls at once", s.Service, s.Recommended)
		if v := s.Validation; v != nil {
			head += fmt.Sprintf(" (%s req/s within the SLA, against %s unlimited)", rps(v.RecommendedGoodput), rps(v.UnlimitedGoodput))
			hv := htmlPoolValidation{Service: s.Service, Runs: p.Settings.Repetitions, Share: fmt.Sprintf("%.1f%%", v.RecommendedShareOfBestPct)}
			for _, t := range v.Sizes {
				size := "unlimited"
				if t.Size > 0 {
					size = fmt.Sprint(t.Size)
				}
				hv.Rows = append(hv.Rows, poolLoadRow(t.Label, size, t.Mean, fmt.Sprintf("± %.1f%%", t.GoodputStdErrPct)))
			}
			hp.Validations = append(hp.Validations, hv)
		}
		heads = append(heads, head)
		plt, err := newPoolPlot(s)
		if err != nil {
			return nil, err
		}
		svg, err := inlineSVG(plt, fmt.Sprintf("Goodput of %s against its concurrency, with the fit and the knee", s.Service))
		if err != nil {
			return nil, err
		}
		page.Figures = append(page.Figures, htmlFigure{Title: s.Service, SVG: svg,
			Caption: fmt.Sprintf("%s: every 100 ms sample of the sweep (grey), the polynomial fit (blue), and the knee (red), at %.1f calls in flight, which the limits swept map to a pool of %d.", s.Service, s.Knee, s.Recommended)})
	}
	if len(heads) == 0 {
		page.Headline = "No service was tuned."
	} else {
		page.Headline = "Pool sizes for an SLA of " + hp.SLA + ": " + strings.Join(heads, "; ") + "."
	}
	page.Notes = append(page.Notes, "A pool size is the most calls a service should run at once; slowpoke's instrumentation queues the rest, first in first out. Set it as the service's worker pool, or as the connection pools of its callers.")
	page.Pools = hp
	st := p.Settings
	page.Settings = []htmlSetting{
		{"Spec", orDash(st.SpecPath)}, {"SLA", hp.SLA}, {"Connections", fmt.Sprint(st.Connections)},
		{"Warm-up, window", fmt.Sprintf("%s, %s", seconds(st.WarmupS), seconds(st.DurationS))},
		{"Sweep", fmt.Sprintf("sizes %v, %s each, sampled every %s ms", st.Levels, seconds(st.StepS), trimFloat(st.SampleMS))},
		{"Time to the advice", seconds(p.AdviceS)}, {"Time in all", seconds(p.ElapsedS)},
	}
	if st.Repetitions > 0 {
		page.Settings = append(page.Settings, htmlSetting{"Validation runs per size", fmt.Sprint(st.Repetitions)})
	}
	args := []string{"slowpoke", "pools", "-f", orPlaceholder(st.SpecPath, "app.yaml"), "--sla", trimFloat(p.SLAMS) + "ms"}
	if len(st.Services) > 0 {
		args = append(args, "--services", strings.Join(st.Services, ","))
	}
	levels := make([]string, len(st.Levels))
	for i, l := range st.Levels {
		levels[i] = fmt.Sprint(l)
	}
	args = append(args, "--connections", fmt.Sprint(st.Connections), "--warmup", seconds(st.WarmupS), "--duration", seconds(st.DurationS),
		"--step", seconds(st.StepS), "--levels", strings.Join(levels, ","))
	if st.Repetitions > 0 {
		args = append(args, "--validate", "--reps", fmt.Sprint(st.Repetitions))
	}
	page.Command = shellJoin(args)
	page.CommandNote = "Every setting is given, so that the command repeats this run even if the spec's workload has changed since."
	return page, nil
}
