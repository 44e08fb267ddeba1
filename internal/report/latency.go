package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// KindLatency marks the results.json of slowpoke latency.
const KindLatency = "latency"

// LatencyQuantiles are the probabilities (%) at which every distribution's
// quantiles are kept in results.json (Dist.QuantilesMS), enough to draw its
// CDF: every percent, and finer in the tail.
var LatencyQuantiles = func() []float64 {
	var q []float64
	for p := 0; p < 99; p++ {
		q = append(q, float64(p))
	}
	return append(q, 99, 99.5, 99.9, 100)
}()

// Latency is what slowpoke latency found: per request type, the latency
// distribution as measured (baseline), as predicted after each reduction of
// the target, and with validation as really measured after it.
type Latency struct {
	Version   int             `json:"version"`
	Kind      string          `json:"kind"` // KindLatency
	App       string          `json:"app"`
	Target    string          `json:"target"`
	CreatedAt time.Time       `json:"created_at"`
	Settings  LatencySettings `json:"settings"`
	// SaturationRPS is the throughput of the closed-loop run that found
	// the saturating rate; RateRPS the open-loop rate every run used.
	SaturationRPS float64 `json:"saturation_rps"`
	RateRPS       float64 `json:"rate_rps"`
	// TargetCostUS is the target's CPU time per call in the saturation
	// run, which percentages of --reduce are taken of; TargetCallsPerRequest
	// its calls per end-to-end request; CPUPerRequestUS the CPU time the
	// machine's cores spent per request (all services, the load generator
	// and the controllers), from which each prediction run's rate is
	// derived (docs/latency.md).
	TargetCostUS          float64 `json:"target_cost_us"`
	TargetCallsPerRequest float64 `json:"target_calls_per_request"`
	CPUPerRequestUS       float64 `json:"cpu_per_request_us"`
	// DurationS is each run's measurement window.
	DurationS float64 `json:"duration_s"`
	// BaselineBusyPct is how busy the cores were in the baseline runs,
	// % of their time (all the CPUs the services run on), averaged over
	// the repetitions; 0 where /proc/stat could not be read.
	BaselineBusyPct float64 `json:"baseline_busy_pct,omitzero"`
	// Baseline has one entry per request type of the workload.
	Baseline []LatencyDist `json:"baseline"`
	// Points has one entry per (request type, reduction).
	Points   []LatencyPoint `json:"points"`
	ElapsedS float64        `json:"elapsed_s"`
	Warnings []string       `json:"warnings,omitempty"`
}

// LatencySettings is how slowpoke latency ran.
type LatencySettings struct {
	SpecPath    string   `json:"spec_path"`
	Reductions  []string `json:"reductions"`        // as given
	Rate        float64  `json:"rate,omitempty"`    // --rate (0: a share of the saturating rate)
	RateShare   float64  `json:"rate_share"`        // that share
	Connections int      `json:"connections"`       // of the saturation run
	WarmupS     float64  `json:"warmup_s"`          // before every run
	MinRequests int      `json:"min_requests"`      // per request type and run
	Repetitions int      `json:"repetitions"`       // of every run, pooled
	Validate    bool     `json:"validate"`          // truth measured
	Duration    float64  `json:"duration,omitzero"` // --duration, s (0: sized from MinRequests)
}

// LatencyDist is one latency distribution of one request type.
type LatencyDist struct {
	Request string  `json:"request"`
	N       int     `json:"n"` // requests measured
	MeanMS  float64 `json:"mean_ms"`
	P50MS   float64 `json:"p50_ms"`
	P90MS   float64 `json:"p90_ms"`
	P99MS   float64 `json:"p99_ms"`
	// The 95% confidence intervals of the percentiles, distribution free
	// (from the order statistics): [low, high].
	P50CIMS [2]float64 `json:"p50_ci_ms"`
	P90CIMS [2]float64 `json:"p90_ci_ms"`
	P99CIMS [2]float64 `json:"p99_ci_ms"`
	// QuantilesMS are the quantiles at LatencyQuantiles, for CDF plots.
	QuantilesMS []float64 `json:"quantiles_ms"`
	// RunsP50MS is each repetition's p50 (the distribution pools them).
	RunsP50MS []float64 `json:"runs_p50_ms,omitempty"`
}

// LatencyPoint is the prediction for one request type after one reduction
// of the target, and with validation the truth.
type LatencyPoint struct {
	Request     string  `json:"request"`
	Reduction   string  `json:"reduction"` // as given
	ReductionUS float64 `json:"reduction_us"`
	// Predicted percentiles (ms): measured under the virtual speedup,
	// less each request's inserted delay.
	PredictedP50MS float64     `json:"predicted_p50_ms"`
	PredictedP90MS float64     `json:"predicted_p90_ms"`
	PredictedP99MS float64     `json:"predicted_p99_ms"`
	Predicted      LatencyDist `json:"predicted"`
	// MeanDelayMS is the mean delay inserted per request.
	MeanDelayMS float64 `json:"mean_delay_ms"`
	// RateRPS is the open-loop rate of the prediction run: the baseline's
	// less the share of the cores' CPU time the reduction would free, so
	// that the cores are as busy as with the target really faster.
	RateRPS float64 `json:"rate_rps"`
	// PredictedBusyPct is how busy the cores were in the prediction runs,
	// and TrueBusyPct (with validation) in the truth's, as
	// BaselineBusyPct: the load matching aims to make them equal.
	PredictedBusyPct float64 `json:"predicted_busy_pct,omitzero"`
	TrueBusyPct      float64 `json:"true_busy_pct,omitzero"`
	// MannWhitneyP is the p-value of a one-sided Mann-Whitney U test of
	// "the predicted latencies are lower than the baseline's"; Faster is
	// MannWhitneyP < 0.05.
	MannWhitneyP float64 `json:"mann_whitney_p"`
	Faster       bool    `json:"faster"`

	// With validation: the latencies with the target really reduced.
	TrueP50MS float64      `json:"true_p50_ms,omitzero"`
	TrueP90MS float64      `json:"true_p90_ms,omitzero"`
	TrueP99MS float64      `json:"true_p99_ms,omitzero"`
	True      *LatencyDist `json:"true,omitempty"`
	// Errors of the predicted percentiles against the true ones, % of
	// the truth; Within: p50 within ±5% and p99 within ±10%.
	ErrP50Pct float64 `json:"err_p50_pct,omitzero"`
	ErrP90Pct float64 `json:"err_p90_pct,omitzero"`
	ErrP99Pct float64 `json:"err_p99_pct,omitzero"`
	Within    bool    `json:"within,omitempty"`
	// TrueMannWhitneyP tests "the true latencies are lower than the
	// baseline's", to compare with the prediction's verdict (with
	// validation only).
	TrueMannWhitneyP *float64 `json:"true_mann_whitney_p,omitempty"`
	// Diagnostics holds the lab's research comparisons (slowpoke-lab
	// bench latency --compare, --holds, --stretch); absent otherwise.
	// Version 4 moved them here from the point's top level.
	Diagnostics *LatencyDiagnostics `json:"diagnostics,omitempty"`
}

// LatencyDiagnostics is a latency point's "diagnostics" in results.json
// (docs/results.md, "Latency"): other ways of predicting, measured
// beside the prediction, and their errors against the truth. Until
// version 4 these were fields of the point itself
// (LatencyPoint.UnmarshalJSON reads them there).
type LatencyDiagnostics struct {
	// Unmatched, from slowpoke bench latency --compare only: the
	// prediction run at the baseline's rate instead of the point's
	// RateRPS, with its errors against the truth (a research comparison).
	Unmatched          *LatencyDist `json:"unmatched,omitempty"`
	UnmatchedErrP50Pct float64      `json:"unmatched_err_p50_pct,omitzero"`
	UnmatchedErrP99Pct float64      `json:"unmatched_err_p99_pct,omitzero"`
	// Holds, from slowpoke bench latency --holds only: the prediction by
	// holding the other services' cores at every call of the target, on
	// a clock that leaves the holds out, and its errors against the truth.
	Holds        *LatencyDist `json:"holds,omitempty"`
	HoldsBusyPct float64      `json:"holds_busy_pct,omitzero"`
	// HoldsTargetBusyPct is the share of the holds' time the target ran:
	// the virtual speedup it got is that share of the reduction.
	HoldsTargetBusyPct float64 `json:"holds_target_busy_pct,omitzero"`
	HoldsErrP50Pct     float64 `json:"holds_err_p50_pct,omitzero"`
	HoldsErrP99Pct     float64 `json:"holds_err_p99_pct,omitzero"`
	// Stretched, from slowpoke bench latency --stretch only: the
	// prediction with the delay per call of the target multiplied by
	// Stretch, 1 + the target's time waiting for a core / its time running
	// in the prediction runs (mean over them), at the same rate.
	Stretch            float64      `json:"stretch,omitzero"`
	Stretched          *LatencyDist `json:"stretched,omitempty"`
	StretchedErrP50Pct float64      `json:"stretched_err_p50_pct,omitzero"`
	StretchedErrP99Pct float64      `json:"stretched_err_p99_pct,omitzero"`
	// HoldsBatched, from slowpoke bench latency --holds --holds-batch B
	// only: the same prediction by holds of B times the reduction every B
	// calls of the target.
	HoldsBatch                int          `json:"holds_batch,omitzero"`
	HoldsBatched              *LatencyDist `json:"holds_batched,omitempty"`
	HoldsBatchedBusyPct       float64      `json:"holds_batched_busy_pct,omitzero"`
	HoldsBatchedTargetBusyPct float64      `json:"holds_batched_target_busy_pct,omitzero"`
	HoldsBatchedErrP50Pct     float64      `json:"holds_batched_err_p50_pct,omitzero"`
	HoldsBatchedErrP99Pct     float64      `json:"holds_batched_err_p99_pct,omitzero"`
}

// UnmarshalJSON reads a latency point of any version: before version 4
// its diagnostics were fields of the point itself, and are read into
// Diagnostics from there.
func (p *LatencyPoint) UnmarshalJSON(data []byte) error {
	type plain LatencyPoint // without this method
	if err := json.Unmarshal(data, (*plain)(p)); err != nil {
		return err
	}
	if p.Diagnostics != nil {
		return nil
	}
	d, err := flatDiagnostics[LatencyDiagnostics](data)
	p.Diagnostics = d
	return err
}

// DefaultLatencyRequests is slowpoke latency's default --requests.
const DefaultLatencyRequests = 1500

// Accuracy bounds of a validated latency point.
const (
	LatencyP50BoundPct = 5
	LatencyP99BoundPct = 10
)

// WriteLatencyJSON writes l as results.json of kind latency.
func WriteLatencyJSON(path string, l *Latency) error {
	c := *l
	if c.Version == 0 {
		c.Version = Version
	}
	c.Kind = KindLatency
	return writeJSON(path, &c)
}

// ReadLatencyJSON reads a file written by WriteLatencyJSON.
func ReadLatencyJSON(path string) (*Latency, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := readJSON(path, &head); err != nil {
		return nil, err
	}
	if head.Kind != KindLatency {
		return nil, fmt.Errorf("%s: not the results of slowpoke latency (kind %q)", path, head.Kind)
	}
	var l Latency
	if err := readJSON(path, &l); err != nil {
		return nil, err
	}
	switch {
	case l.Kind != KindLatency:
		return nil, fmt.Errorf("%s: not the results of slowpoke latency (kind %q)", path, l.Kind)
	case l.Version > Version:
		return nil, newerVersion(path, l.Version)
	}
	return &l, nil
}

// Verdict is a Mann-Whitney p-value as shown: "yes (p=0.003)" below 0.05,
// "no (p=0.4)" otherwise; p-values too small to print are "p<1e-16".
func Verdict(p float64) string {
	v := "no"
	if p < 0.05 {
		v = "yes"
	}
	if p < 1e-16 {
		return v + " (p<1e-16)"
	}
	return fmt.Sprintf("%s (p=%.2g)", v, p)
}

// WriteLatencyTable prints the baseline and every point, with the truth
// and errors where validated.
func WriteLatencyTable(w io.Writer, l *Latency) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "%s: latency if %s were faster (open loop at %s req/s, %s of the saturating %s req/s; %s per run)\n\n",
		l.App, l.Target, trimFloat(math.Round(l.RateRPS)), fmt.Sprintf("%.0f%%", l.RateRPS/l.SaturationRPS*100),
		trimFloat(math.Round(l.SaturationRPS)), fmt.Sprintf("%.1fs", l.DurationS))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	validated := len(l.Points) > 0 && l.Points[0].True != nil
	head := "request\treduction\tp50 ms\tp90 ms\tp99 ms\tfaster (p)"
	if validated {
		head += "\ttrue p50\ttrue p90\ttrue p99\terr p50\terr p90\terr p99"
	}
	fmt.Fprintln(tw, head)
	ci := func(v float64, c [2]float64) string {
		return fmt.Sprintf("%.2f [%.2f, %.2f]", v, c[0], c[1])
	}
	for _, b := range l.Baseline {
		row := fmt.Sprintf("%s\tbaseline\t%s\t%s\t%s\t", b.Request, ci(b.P50MS, b.P50CIMS), ci(b.P90MS, b.P90CIMS), ci(b.P99MS, b.P99CIMS))
		if validated {
			row += "\t\t\t\t\t\t"
		}
		fmt.Fprintln(tw, row)
		for _, p := range l.Points {
			if p.Request != b.Request {
				continue
			}
			row := fmt.Sprintf("%s\t%s (%sus)\t%s\t%s\t%s\t%s", p.Request, p.Reduction, trimFloat(math.Round(p.ReductionUS)),
				ci(p.PredictedP50MS, p.Predicted.P50CIMS), ci(p.PredictedP90MS, p.Predicted.P90CIMS), ci(p.PredictedP99MS, p.Predicted.P99CIMS), Verdict(p.MannWhitneyP))
			if validated && p.True != nil {
				row += fmt.Sprintf("\t%.2f\t%.2f\t%.2f\t%+.1f%%\t%+.1f%%\t%+.1f%%", p.TrueP50MS, p.TrueP90MS, p.TrueP99MS, p.ErrP50Pct, p.ErrP90Pct, p.ErrP99Pct)
			}
			fmt.Fprintln(tw, row)
		}
	}
	tw.Flush()
	if b := coresBusy(l); b != "" {
		fmt.Fprintf(ew, "\ncores busy: %s\n", b)
	}
	if validated {
		var in, n int
		for _, p := range l.Points {
			if p.True != nil {
				n++
				if p.Within {
					in++
				}
			}
		}
		fmt.Fprintf(ew, "\n%d of %d predictions within ±%d%% at p50 and ±%d%% at p99\n", in, n, LatencyP50BoundPct, LatencyP99BoundPct)
	}
	for _, wn := range l.Warnings {
		fmt.Fprintf(ew, "warning: %s\n", wn)
	}
	return ew.err
}

// coresBusy says how busy the cores were in the baseline runs and in each
// reduction's prediction (at its rate) and truth runs, or "" where that was
// not measured.
func coresBusy(l *Latency) string {
	if l.BaselineBusyPct <= 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "baseline %.0f%%", l.BaselineBusyPct)
	seen := map[string]bool{}
	for _, p := range l.Points {
		if seen[p.Reduction] || p.PredictedBusyPct <= 0 {
			continue
		}
		seen[p.Reduction] = true
		fmt.Fprintf(&b, "; %s: %.0f%% predicting at %s req/s", p.Reduction, p.PredictedBusyPct, trimFloat(math.Round(p.RateRPS)))
		if p.TrueBusyPct > 0 {
			fmt.Fprintf(&b, ", %.0f%% in the truth", p.TrueBusyPct)
		}
	}
	return b.String()
}
