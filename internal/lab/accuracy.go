//go:build lab

package lab

import (
	"context"
	"fmt"
	"gonum.org/v1/gonum/stat"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/suite"
	"github.com/slowpoke-dev/slowpoke/model"
)

// AccuracyOptions configure the accuracy benchmark.
type AccuracyOptions struct {
	Dir          string   // configs, logs, results
	ExtraPath    []string // where slowpoke-emu is found
	Seed         int64
	Full         bool     // all 108 configurations instead of the subset
	Only         []string // config names (or tags) to run; overrides Full
	Reduce       string   // default "20,40,...,80%"
	Reps         int
	MaxReps      int     // noisy points are repeated up to this many runs
	PrecisionPct float64 // ... until their standard error is within this
	Batch        int
	Duration     time.Duration
	Warmup       time.Duration
	Progress     io.Writer         `json:"-"`
	Tuning       experiment.Tuning // the research switches
	// Variants, where given, measure every configuration's points with
	// each variant against one shared ground truth (experiment.Compare),
	// so that the variants' errors are paired; the totals are then per
	// variant (AccuracyResult.Variants).
	Variants         []experiment.Variant
	FixedConnections bool // use the configs' connection count instead of choosing one
	Placement        local.Mode
	PauseMethod      pause.Method
}

// AccuracyConfig is the outcome for one configuration.
type AccuracyConfig struct {
	Name       string          `json:"name"`
	Target     string          `json:"target"`
	Bottleneck bool            `json:"target_is_bottleneck"`
	Points     []report.Point  `json:"points"`
	RMSEPct    float64         `json:"rmse_pct"`
	MaxAbsPct  float64         `json:"max_abs_error_pct"`
	Seconds    float64         `json:"seconds"`
	Error      string          `json:"error,omitempty"`
	Results    *report.Results `json:"-"`
	// Comparison is the configuration's paired variants (with Variants).
	Comparison *experiment.Comparison `json:"comparison,omitempty"`
}

// VariantTotal is one variant's error over every configuration, paired
// with the first variant's point by point.
type VariantTotal struct {
	Name    string  `json:"name"`
	Points  int     `json:"points"`
	RMSEPct float64 `json:"rmse_pct"`
	MeanPct float64 `json:"mean_error_pct"`
	MaxPct  float64 `json:"max_abs_error_pct"`
	// DiffMeanPct and DiffSDPct: the mean and standard deviation over
	// the points of this variant's |error| minus the first variant's.
	DiffMeanPct float64 `json:"abs_error_diff_mean_pct"`
	DiffSDPct   float64 `json:"abs_error_diff_sd_pct"`
}

// AccuracyResult is the benchmark's output.
type AccuracyResult struct {
	Configs   []AccuracyConfig `json:"configs"`
	Points    int              `json:"points"`
	RMSEPct   float64          `json:"rmse_pct"`
	MaxAbsPct float64          `json:"max_abs_error_pct"`
	// NoiseRMSEPct is the RMSE that the points' own noise alone would
	// give: the root mean square of their std_err_pct. An RMSE near it
	// says the remaining error is run-to-run noise; well above it, bias.
	NoiseRMSEPct float64         `json:"noise_rmse_pct"`
	MeanErrorPct float64         `json:"mean_error_pct"` // signed: the bias
	Seconds      float64         `json:"seconds"`
	Settings     AccuracyOptions `json:"settings"`
	// Variants holds the paired totals, with AccuracyOptions.Variants.
	Variants []VariantTotal `json:"variants,omitempty"`
}

// Accuracy runs slowpoke validate on synthetic configurations and reports
// the prediction error against ground truth.
func Accuracy(ctx context.Context, o AccuracyOptions) (*AccuracyResult, error) {
	if o.Reduce == "" {
		o.Reduce = "20,40,...,80%"
	}
	if o.Reps <= 0 {
		o.Reps = 2
	}
	reds, err := model.ParseReductions(o.Reduce)
	if err != nil {
		return nil, err
	}
	if err := o.Tuning.CheckPauseLead(); err != nil {
		return nil, err
	}
	all, err := suite.Suite(o.Seed)
	if err != nil {
		return nil, err
	}
	extras, err := suite.Extras(o.Seed)
	if err != nil {
		return nil, err
	}
	var configs []suite.Config
	switch {
	case len(o.Only) > 0:
		for _, c := range append(all, extras...) {
			if slices.Contains(o.Only, c.Name) || slices.ContainsFunc(c.Tags, func(t string) bool { return slices.Contains(o.Only, t) }) {
				configs = append(configs, c)
			}
		}
		if len(configs) == 0 {
			return nil, fmt.Errorf("no configuration named or tagged %s", strings.Join(o.Only, ", "))
		}
	case o.Full:
		configs = all
	default:
		configs = suite.Subset(all)
	}
	say := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	start := time.Now()
	out := &AccuracyResult{Settings: o}
	var sq, noiseSq, sum float64
	for i, c := range configs {
		say("== [%d/%d] %s (target %s, bottleneck %v) after %v", i+1, len(configs), c.Name, c.Target, c.TargetIsBottleneck, time.Since(start).Round(time.Second))
		ac := AccuracyConfig{Name: c.Name, Target: c.Target, Bottleneck: c.TargetIsBottleneck}
		t0 := time.Now()
		if len(o.Variants) > 0 {
			cmp, err := compareConfig(ctx, o, c, reds)
			ac.Seconds = time.Since(t0).Seconds()
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				ac.Error = err.Error()
				say("   failed: %v", err)
			} else {
				ac.Comparison = cmp
				for _, m := range cmp.Methods {
					say("   %-16s RMSE %.2f%%, mean %+.2f%%", m.Method, m.RMSEPct, m.MeanPct)
				}
			}
			out.Configs = append(out.Configs, ac)
			continue
		}
		res, err := validateConfig(ctx, o, c, reds)
		ac.Seconds = time.Since(t0).Seconds()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			ac.Error = err.Error()
			say("   failed: %v", err)
			out.Configs = append(out.Configs, ac)
			continue
		}
		ac.Results, ac.Points = res, res.Points
		var csq float64
		n := 0
		for _, p := range res.Points {
			if p.ErrorPct == nil {
				continue
			}
			e := *p.ErrorPct
			csq += e * e
			sq += e * e
			sum += e
			noiseSq += p.StdErrPct * p.StdErrPct
			n++
			out.Points++
			ac.MaxAbsPct = max(ac.MaxAbsPct, math.Abs(e))
			out.MaxAbsPct = max(out.MaxAbsPct, math.Abs(e))
		}
		if n > 0 {
			ac.RMSEPct = math.Sqrt(csq / float64(n))
		}
		say("   RMSE %.2f%%, max |error| %.2f%%", ac.RMSEPct, ac.MaxAbsPct)
		out.Configs = append(out.Configs, ac)
	}
	if out.Points > 0 {
		out.RMSEPct = math.Sqrt(sq / float64(out.Points))
		out.NoiseRMSEPct = math.Sqrt(noiseSq / float64(out.Points))
		out.MeanErrorPct = sum / float64(out.Points)
	}
	out.Variants = variantTotals(o.Variants, out.Configs)
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// variantTotals sums the paired variants' errors over the configurations.
func variantTotals(variants []experiment.Variant, configs []AccuracyConfig) []VariantTotal {
	if len(variants) == 0 {
		return nil
	}
	type acc struct {
		sq, sum, max float64
		diffs        []float64
		n            int
	}
	accs := make([]acc, len(variants))
	for _, c := range configs {
		if c.Comparison == nil || len(c.Comparison.Methods) != len(variants) {
			continue
		}
		first := c.Comparison.Methods[0].Points
		for i, m := range c.Comparison.Methods {
			for j, p := range m.Points {
				if p.ErrorPct == nil || j >= len(first) || first[j].ErrorPct == nil {
					continue
				}
				e := *p.ErrorPct
				a := &accs[i]
				a.sq, a.sum, a.n = a.sq+e*e, a.sum+e, a.n+1
				a.max = max(a.max, math.Abs(e))
				a.diffs = append(a.diffs, math.Abs(e)-math.Abs(*first[j].ErrorPct))
			}
		}
	}
	out := make([]VariantTotal, len(variants))
	for i, v := range variants {
		a := accs[i]
		out[i] = VariantTotal{Name: v.Name, Points: a.n, MaxPct: a.max}
		if a.n > 0 {
			out[i].RMSEPct, out[i].MeanPct = math.Sqrt(a.sq/float64(a.n)), a.sum/float64(a.n)
			out[i].DiffMeanPct = stat.Mean(a.diffs, nil)
			if len(a.diffs) > 1 {
				out[i].DiffSDPct = stat.StdDev(a.diffs, nil)
			}
		}
	}
	return out
}

// startConfig writes configuration c's spec and starts it; opts holds
// what every experiment on it shares. The caller stops d.
func startConfig(ctx context.Context, o AccuracyOptions, c suite.Config, reds []model.Reduction) (d *local.Deployment, opts experiment.Options, err error) {
	specPath, err := suite.Write(filepath.Join(o.Dir, "configs"), c)
	if err != nil {
		return nil, opts, err
	}
	s, err := spec.Load(specPath)
	if err != nil {
		return nil, opts, err
	}
	d, err = local.Start(ctx, s, local.Options{Options: backend.Options{Target: c.Target}, Placement: o.Placement, LogDir: filepath.Join(o.Dir, "logs", c.Name), ExtraPath: o.ExtraPath})
	if err != nil {
		return nil, opts, err
	}
	var texts []string
	for _, r := range reds {
		texts = append(texts, r.Text)
	}
	return d, experiment.Options{
		Target: c.Target, Reductions: reds, ReductionsText: texts, Repetitions: o.Reps, Duration: o.Duration, Warmup: o.Warmup,
		SpecPath: specPath, Tuning: o.Tuning, AutoConnections: !o.FixedConnections, Progress: o.Progress,
	}, nil
}

// compareConfig measures one configuration's points with every variant
// against one ground truth.
func compareConfig(ctx context.Context, o AccuracyOptions, c suite.Config, reds []model.Reduction) (*experiment.Comparison, error) {
	d, opts, err := startConfig(ctx, o, c, reds)
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	return experiment.Compare(ctx, d, opts, o.Variants)
}

func validateConfig(ctx context.Context, o AccuracyOptions, c suite.Config, reds []model.Reduction) (*report.Results, error) {
	d, opts, err := startConfig(ctx, o, c, reds)
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	opts.MaxRepetitions, opts.PrecisionPct, opts.Batch, opts.Validate, opts.PauseMethod = o.MaxReps, o.PrecisionPct, o.Batch, true, o.PauseMethod
	r, err := experiment.New(d, opts)
	if err != nil {
		return nil, err
	}
	res, err := r.Run(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "results"), 0o755); err != nil {
		return nil, err
	}
	if err := report.WriteJSON(filepath.Join(o.Dir, "results", c.Name+".json"), res); err != nil {
		return nil, err
	}
	return res, nil
}

// WriteAccuracyTable prints one line per configuration and the totals.
func WriteAccuracyTable(w io.Writer, r *AccuracyResult) {
	if len(r.Variants) > 0 {
		writeVariantsTable(w, r)
		return
	}
	fmt.Fprintf(w, "%-34s %-10s %-5s %-44s %7s %7s\n", "configuration", "target", "bneck", "error ± standard error per point (%)", "RMSE", "max")
	for _, c := range r.Configs {
		if c.Error != "" {
			fmt.Fprintf(w, "%-34s %-10s %-5v failed: %s\n", c.Name, c.Target, c.Bottleneck, c.Error)
			continue
		}
		var errs []string
		for _, p := range c.Points {
			if p.ErrorPct != nil {
				errs = append(errs, fmt.Sprintf("%+.1f±%.1f", *p.ErrorPct, p.StdErrPct))
			} else {
				errs = append(errs, "n/a")
			}
		}
		fmt.Fprintf(w, "%-34s %-10s %-5v %-44s %6.2f%% %6.2f%%\n", c.Name, c.Target, c.Bottleneck, strings.Join(errs, " "), c.RMSEPct, c.MaxAbsPct)
	}
	fmt.Fprintf(w, "\n%d points over %d configurations: RMSE %.2f%%, max |error| %.2f%%, mean error %+.2f%%, %s\n",
		r.Points, len(r.Configs), r.RMSEPct, r.MaxAbsPct, r.MeanErrorPct, (time.Duration(r.Seconds) * time.Second).String())
	fmt.Fprintf(w, "noise alone (root mean square of the points' standard errors) would give an RMSE of %.2f%%\n", r.NoiseRMSEPct)
}

// writeVariantsTable prints every configuration's RMSE per variant and the
// paired totals.
func writeVariantsTable(w io.Writer, r *AccuracyResult) {
	fmt.Fprintf(w, "%-34s %-10s", "configuration", "target")
	for _, v := range r.Variants {
		fmt.Fprintf(w, " %16s", v.Name)
	}
	fmt.Fprintln(w)
	for _, c := range r.Configs {
		fmt.Fprintf(w, "%-34s %-10s", c.Name, c.Target)
		if c.Comparison == nil {
			fmt.Fprintf(w, " failed: %s\n", c.Error)
			continue
		}
		for _, m := range c.Comparison.Methods {
			fmt.Fprintf(w, " %15.2f%%", m.RMSEPct)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for i, v := range r.Variants {
		fmt.Fprintf(w, "%-16s %d points: RMSE %.2f%%, mean %+.2f%%, max |error| %.2f%%", v.Name, v.Points, v.RMSEPct, v.MeanPct, v.MaxPct)
		if i > 0 {
			fmt.Fprintf(w, "; |error| minus %s's, per point: %+.2f ± %.2f (sd)", r.Variants[0].Name, v.DiffMeanPct, v.DiffSDPct)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s\n", (time.Duration(r.Seconds) * time.Second).String())
}
