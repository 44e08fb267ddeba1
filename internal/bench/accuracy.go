package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
	Dir              string   // configs, logs, results
	ExtraPath        []string // where slowpoke-emu is found
	Seed             int64
	Full             bool     // all 108 configurations instead of the subset
	Only             []string // config names (or tags) to run; overrides Full
	Reduce           string   // default "20,40,...,80%"
	Reps             int
	MaxReps          int     // noisy points are repeated up to this many runs
	PrecisionPct     float64 // ... until their standard error is within this
	Batch            int
	Duration         time.Duration
	Warmup           time.Duration
	Progress         io.Writer         `json:"-"`
	Tuning           experiment.Tuning // the research switches
	FixedConnections bool              // use the configs' connection count instead of choosing one
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
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

func validateConfig(ctx context.Context, o AccuracyOptions, c suite.Config, reds []model.Reduction) (*report.Results, error) {
	specPath, err := suite.Write(filepath.Join(o.Dir, "configs"), c)
	if err != nil {
		return nil, err
	}
	s, err := spec.Load(specPath)
	if err != nil {
		return nil, err
	}
	d, err := local.Start(ctx, s, local.Options{Target: c.Target, Placement: o.Placement, LogDir: filepath.Join(o.Dir, "logs", c.Name), ExtraPath: o.ExtraPath})
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	var texts []string
	for _, r := range reds {
		texts = append(texts, r.Text)
	}
	r, err := experiment.New(d, experiment.Options{
		Target: c.Target, Reductions: reds, ReductionsText: texts, Repetitions: o.Reps, MaxRepetitions: o.MaxReps, PrecisionPct: o.PrecisionPct, Batch: o.Batch,
		Duration: o.Duration, Warmup: o.Warmup, SpecPath: specPath, Validate: true, Tuning: o.Tuning, AutoConnections: !o.FixedConnections,
		PauseMethod: o.PauseMethod, Progress: o.Progress,
	})
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
