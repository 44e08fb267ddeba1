package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/model"
)

// latencyConfig is slowpoke latency's flags.
type latencyConfig struct {
	specPath  string
	target    string
	reduce    string
	validate  bool
	rate      float64
	conns     int
	warmup    time.Duration
	duration  time.Duration
	requests  int
	reps      int
	outDir    string
	printJSON bool
	extraPath []string
	// onResult, when set, receives the results (bench latency).
	onResult func(*report.Latency)
	// compare also predicts at the baseline's rate (bench latency).
	compare bool
	// holds places the target on cores of its own and also predicts by
	// holding the other services' cores (bench latency --holds).
	holds bool
	// holdsBatch, above 1, also predicts by holds of that many times the
	// reduction every that many calls (bench latency --holds-batch).
	holdsBatch int
	// stretch also predicts with the delay per call stretched by the
	// target's wait for a core (bench latency --stretch).
	stretch bool
}

func runLatency(args []string) int {
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	c := latencyConfig{requests: experiment.DefaultMinRequests, reps: 1}
	fs.StringVar(&c.specPath, "f", "", "application spec (YAML, see docs/spec.md) (required)")
	fs.StringVar(&c.target, "target", "", "the service to speed up (required)")
	fs.StringVar(&c.reduce, "reduce", "50%", "reductions of the target's per-call cost: 50% | 20%,40% | 300us | 2x")
	fs.BoolVar(&c.validate, "validate", false, "also measure the truth: the target restarted with its work really reduced (the spec's ground_truth)")
	fs.Float64Var(&c.rate, "rate", 0, "open-loop rate, requests/s (default: half the saturating rate, measured first)")
	fs.IntVar(&c.requests, "requests", c.requests, "responses to measure per request type and run (at least 300; the default sizes the p99's confidence interval to about ±0.5 percentile points)")
	fs.IntVar(&c.reps, "reps", c.reps, "repetitions of every run, interleaved; their responses are pooled")
	fs.DurationVar(&c.duration, "duration", 0, "window of every run (default: long enough for --requests)")
	fs.IntVar(&c.conns, "connections", 0, "closed-loop connections of the saturation run (default: the spec's workload.connections)")
	fs.DurationVar(&c.warmup, "warmup", 0, "warm-up before every run (default: the spec's)")
	fs.StringVar(&c.outDir, "out", "", "output directory (default: slowpoke-out/<app>-<target>-latency-<time>)")
	printJSONFlag(fs, &c.printJSON)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke latency -f app.yaml --target SERVICE [--reduce LIST] [--validate] [flags]\n\n"+
			"What would the latency of each request type be if a service were faster?\n"+
			"Starts the application, measures its saturating rate, then loads it in open\n"+
			"loop at half that rate: as it is (baseline), and with the target virtually sped\n"+
			"up by each reduction (every other branch of a request waits for it, each\n"+
			"request's inserted delay is taken off its latency, and the rate is lowered to\n"+
			"keep the cores as busy as the faster target would). Prints p50, p90 and p99 per\n"+
			"request type with 95%% confidence intervals and a Mann-Whitney test of \"faster\";\n"+
			"writes results.json, report.html and a CDF plot per request type to the output\n"+
			"directory. See docs/latency.md.\n\n")
		fs.PrintDefaults()
	}
	return runCommand("latency", fs, args, []string{"f", "target"},
		func() error { return latencyMain(c) })
}

func latencyMain(c latencyConfig) error {
	s, err := spec.Load(c.specPath)
	if err != nil {
		return err
	}
	reds, texts, err := c.check(s)
	if err != nil {
		return err
	}
	if c.outDir == "" {
		c.outDir = filepath.Join("slowpoke-out", fmt.Sprintf("%s-%s-latency-%s", s.Name, c.target, time.Now().Format("20060102-150405")))
	}
	opts := local.Options{Options: backend.Options{MaxPause: controller.DefaultMaxPause}, ExtraPath: c.extraPath}
	if c.holds {
		opts.Target, opts.Placement = c.target, local.ModeShared
	}
	app, err := startSession(s, c.outDir, opts, kube.Options{})
	if err != nil {
		return err
	}
	defer app.close()
	out, err := experiment.PredictLatency(app.ctx, app.d, experiment.LatencyOptions{
		Target: c.target, Reductions: reds, ReductionsText: texts, Rate: c.rate, Connections: c.conns,
		Warmup: c.warmup, Duration: c.duration, MinRequests: c.requests, Repetitions: c.reps, Validate: c.validate, CompareUnmatched: c.compare,
		CompareHolds: c.holds, HoldsBatch: c.holdsBatch, CompareStretch: c.stretch, Progress: os.Stderr, SpecPath: c.specPath,
	})
	if err != nil {
		return app.explain(err)
	}
	plots, err := report.WriteLatencyPlots(c.outDir, out)
	if err != nil {
		return fmt.Errorf("CDF plots: %w", err)
	}
	if err := writeReport(c.outDir, func(p string) error { return report.WriteLatencyJSON(p, out) }, func(p string) error { return report.WriteLatencyHTML(p, out) },
		func(w io.Writer) error { return report.WriteLatencyTable(w, out) }, plots, c.printJSON); err != nil {
		return err
	}
	if c.onResult != nil {
		c.onResult(out)
	}
	return nil
}

// check refuses bad flags, and a spec latency cannot run on, before
// anything starts; it returns the reductions and their texts.
func (c latencyConfig) check(s *spec.Spec) ([]model.Reduction, []string, error) {
	if err := s.CheckTarget(c.target); err != nil {
		return nil, nil, err
	}
	if c.validate {
		if err := checkCanValidate(s, c.target, c.specPath, "--validate"); err != nil {
			return nil, nil, err
		}
	}
	reds, err := model.ParseReductions(c.reduce)
	if err != nil {
		return nil, nil, fmt.Errorf("--reduce: %w", err)
	}
	var texts []string
	for _, r := range reds {
		if r.Kind == model.Scale {
			return nil, nil, fmt.Errorf("--reduce %s: replicas are a throughput what-if; give a percentage or a time per call", r.Text)
		}
		texts = append(texts, r.Text)
	}
	switch {
	case !(c.rate >= 0) || math.IsInf(c.rate, 0):
		return nil, nil, fmt.Errorf("--rate must be > 0, got %v", c.rate)
	case c.rate > 0 && c.conns > 0:
		return nil, nil, errors.New("--connections sizes the saturation run, which --rate skips: give one of them")
	case c.requests < 300:
		return nil, nil, fmt.Errorf("--requests must be at least 300 for percentiles, got %d", c.requests)
	case c.reps < 1:
		return nil, nil, fmt.Errorf("--reps must be at least 1, got %d", c.reps)
	}
	if err := checkWindow(c.conns, c.warmup, c.duration); err != nil {
		return nil, nil, err
	}
	if s.Kubernetes != nil {
		// Refused before anything deploys, for the reason the backend
		// would give (kube.Deployment.SharedPath).
		return nil, nil, fmt.Errorf("slowpoke latency runs on local processes only, not yet on Kubernetes: %w; predict, validate, rank and pools run there", kube.ErrNoSharedFiles)
	}
	return reds, texts, nil
}
