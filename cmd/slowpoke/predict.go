package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/model"
)

// predictConfig is what predict and demo share.
type predictConfig struct {
	specPath  string
	target    string
	reduce    string
	batch     int
	conns     int
	autoConns bool
	warmup    time.Duration
	duration  time.Duration
	reps      int
	maxReps   int
	maxPause  time.Duration
	outDir    string
	printJSON bool
	extraPath []string
	validate  bool
	method    methodConfig
	// pinnedOnly skips the unpinned baseline of an application slowpoke
	// starts (--unpinned-baseline=false).
	pinnedOnly bool
}

func predictFlags(fs *flag.FlagSet, c *predictConfig) {
	fs.StringVar(&c.target, "target", "", "service to virtually speed up (required)")
	fs.StringVar(&c.reduce, "reduce", "0,10,...,90%", "reductions of the target's per-call cost: 0,10,...,90% | 10%,20% | 300us | 2x | 1->2")
	fs.IntVar(&c.batch, "batch", 0, "target calls per pause round (0: chosen per point so the target stays busy)")
	fs.Func("connections", "closed-loop connections, or auto for the smallest count that saturates (default: the spec's workload.connections)", func(v string) error {
		if v == "auto" {
			c.autoConns = true
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive number or auto")
		}
		c.conns = n
		return nil
	})
	fs.DurationVar(&c.warmup, "warmup", 0, "warm-up before each measurement (default: the spec's)")
	fs.DurationVar(&c.duration, "duration", 0, "measurement window (default: the spec's)")
	fs.IntVar(&c.reps, "reps", 3, "repetitions of the baseline and of every point")
	fs.IntVar(&c.maxReps, "max-reps", 6, "repeat points whose estimate is still noisy up to this many runs (at most --reps: no extra runs)")
	fs.DurationVar(&c.maxPause, "max-pause", controller.DefaultMaxPause, "hard cap on any single pause of a service")
	fs.StringVar(&c.outDir, "out", "", "output directory (default: slowpoke-out/<app>-<target>-<time>)")
	printJSONFlag(fs, &c.printJSON)
	fs.BoolFunc("unpinned-baseline", "also measure an application slowpoke starts unpinned, every service on every core, before its placement (default true; =false skips it)", func(v string) error {
		on, err := strconv.ParseBool(v)
		c.pinnedOnly = !on
		return err
	})
	methodFlags(fs, &c.method)
	kubeModeFlag(fs, &c.method)
}

func runPredict(args []string) int { return predictCommand("predict", args) }

func runValidate(args []string) int { return predictCommand("validate", args) }

func predictCommand(name string, args []string) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	c := predictConfig{validate: name == "validate", method: defaultMethod()}
	fs.StringVar(&c.specPath, "f", "", "application spec (YAML, see docs/spec.md) (required)")
	predictFlags(fs, &c)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke %s -f app.yaml --target SERVICE [--reduce LIST] [flags]\n\n", name)
		if c.validate {
			fmt.Fprintf(fs.Output(), "Like predict, and also measures the ground truth of every point: SERVICE is\n"+
				"restarted with its work really reduced through the spec's ground_truth knob.\n"+
				"Reports the error of every prediction, the RMSE and the largest error.\n\n")
		} else {
			fmt.Fprintf(fs.Output(), "Starts the application on this machine, measures it, and predicts its throughput\n"+
				"if SERVICE's per-call cost were reduced, by virtual speedup. Writes results.json,\n"+
				"report.html, plot.png and plot.svg to the output directory and prints a table.\n\n")
		}
		fs.PrintDefaults()
	}
	return runCommand(name, fs, args, []string{"f", "target"},
		func() error { return predict(c) })
}

func predict(c predictConfig) error {
	s, err := spec.Load(c.specPath)
	if err != nil {
		return err
	}
	if err := s.CheckTarget(c.target); err != nil {
		return err
	}
	if c.validate {
		if err := checkCanValidate(s, c.target, c.specPath, "validate"); err != nil {
			return err
		}
	}
	reds, err := model.ParseReductions(c.reduce)
	if err != nil {
		return fmt.Errorf("--reduce: %w", err)
	}
	if err := checkRuns(c.reps, c.maxReps, c.warmup, c.duration); err != nil {
		return err
	}
	if c.batch < 0 {
		return fmt.Errorf("--batch must be 0 (chosen per point) or positive, got %d", c.batch)
	}
	if err := checkMaxPause(c.maxPause); err != nil {
		return err
	}
	if err := c.method.check(); err != nil {
		return err
	}
	if err := c.method.checkFor(s); err != nil {
		return err
	}
	if c.outDir == "" {
		c.outDir = filepath.Join("slowpoke-out", fmt.Sprintf("%s-%s-%s", s.Name, c.target, time.Now().Format("20060102-150405")))
	}
	deployed, err := measureAsDeployed(s, c)
	if err != nil {
		return err
	}
	// A service, a controller or the guard that dies ends the run, with
	// what died as the error.
	app, err := startSession(s, c.outDir, local.Options{
		Options: backend.Options{Target: c.target, MaxPause: c.maxPause}, Placement: c.method.mode(), ExtraPath: c.extraPath,
	}, c.method.kubeOptions(c.validate))
	if err != nil {
		return err
	}
	defer app.close()
	ctx, d, logf := app.ctx, app.d, app.logf
	if deployed == nil && !c.pinnedOnly {
		if deployed, err = measureUnpinned(app, s, c); err != nil {
			return app.explain(err)
		}
	}
	logf("placement: %s", describePlacement(d.Placement()))

	var texts []string
	for _, r := range reds {
		texts = append(texts, r.Text)
	}
	runner, err := experiment.New(d, experiment.Options{
		Target: c.target, Reductions: reds, ReductionsText: texts, Batch: c.batch, Connections: c.conns,
		Warmup: c.warmup, Duration: c.duration, Repetitions: c.reps, MaxRepetitions: c.maxReps, PrecisionPct: c.method.precision, MaxPause: c.maxPause,
		SpecPath: c.specPath, Progress: os.Stderr, Validate: c.validate, AutoConnections: c.autoConns,
		PauseMethod: c.method.pauseMethod(),
		Trigger:     c.method.trigger,
		Spans:       app.spans,
		AsDeployed:  deployed,
	})
	if err != nil {
		return err
	}
	res, err := runner.Run(ctx)
	if err != nil {
		return app.explain(err)
	}
	return writeOutputs(res, c.outDir, c.printJSON)
}

// deployedRuns is how many times an attached application is measured as
// it runs before slowpoke places anything.
const deployedRuns = 2

// measureAsDeployed measures an application whose every service is
// attached (it runs already, placed as its user placed it) before
// slowpoke pins anything, so that its results can say whether slowpoke's
// placement changed what binds; nil for an application slowpoke starts
// or one on Kubernetes.
func measureAsDeployed(s *spec.Spec, c predictConfig) (*report.Baseline, error) {
	if s.Kubernetes != nil || len(s.Services) == 0 {
		return nil, nil
	}
	for _, svc := range s.Services {
		if !svc.Attached() {
			return nil, nil
		}
	}
	fmt.Fprintf(os.Stderr, "measuring %q as it runs, before slowpoke places anything (%d runs)\n", s.Name, deployedRuns)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := experiment.MeasureAsDeployed(ctx, s, c.conns, c.warmup, c.duration, deployedRuns, attachedCPU(s))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "as deployed: %.0f req/s (runs %.0f)", b.RPS, b.Runs)
	if u := b.CPU; u != nil {
		fmt.Fprintf(os.Stderr, ", the machine's %d cores %.0f%% busy", u.Cores, u.BusyPct)
		if us, ok := u.ServicesUS[c.target]; ok {
			fmt.Fprintf(os.Stderr, ", %s %.0f µs of CPU per request", c.target, us)
		}
	}
	fmt.Fprintln(os.Stderr)
	return b, nil
}

// unpinner is a backend that can let the application it started run
// unpinned for a while (local.Deployment).
type unpinner interface {
	Unpinned(fn func() error) error
}

// measureUnpinned measures an application slowpoke started, before its
// placement's pinning counts: every service, and the load, allowed on
// every core, as an application runs that nobody pinned (the user's own
// placement, as far as slowpoke can tell). nil where the backend cannot
// unpin (Kubernetes).
func measureUnpinned(app *session, s *spec.Spec, c predictConfig) (*report.Baseline, error) {
	u, ok := app.d.(unpinner)
	if !ok {
		return nil, nil
	}
	app.logf("measuring %q unpinned, every service on every core, before slowpoke's placement (%d runs)", s.Name, deployedRuns)
	cpu := servicesCPU(s, func(svc spec.Service) (time.Duration, error) { return app.d.CPUTime(svc.Name) })
	var b *report.Baseline
	err := u.Unpinned(func() (err error) {
		b, err = experiment.MeasureAsDeployed(app.ctx, s, c.conns, c.warmup, c.duration, deployedRuns, cpu)
		return err
	})
	if err != nil {
		return nil, err
	}
	b.Unpinned = true
	if b.CPU != nil {
		app.logf("unpinned: %.0f req/s (runs %.0f), the machine's %d cores %.0f%% busy", b.RPS, b.Runs, b.CPU.Cores, b.CPU.BusyPct)
	}
	return b, nil
}

// attachedCPU reads the CPU time so far of each attached service of s,
// its processes' and their children's; a service whose processes cannot
// be found is left out.
func attachedCPU(s *spec.Spec) func() map[string]time.Duration {
	counters := map[string]*attach.CPUCounter{}
	for _, svc := range s.Services {
		counters[svc.Name] = &attach.CPUCounter{}
	}
	return servicesCPU(s, func(svc spec.Service) (time.Duration, error) { return counters[svc.Name].ReadAttached(svc.Attach) })
}

// servicesCPU reads, by read, the CPU time so far of each service of s
// (experiment.MeasureAsDeployed's reader); a service read cannot read is
// left out.
func servicesCPU(s *spec.Spec, read func(spec.Service) (time.Duration, error)) func() map[string]time.Duration {
	return func() map[string]time.Duration {
		out := map[string]time.Duration{}
		for _, svc := range s.Services {
			if t, err := read(svc); err == nil {
				out[svc.Name] = t
			}
		}
		return out
	}
}

// writeOutputs writes a prediction's results.json, plots and report.html,
// prints its table, the files written and, with printJSON, results.json
// on one line (--print-json).
func writeOutputs(res *report.Results, dir string, printJSON bool) error {
	jsonPath := filepath.Join(dir, "results.json")
	pngPath, svgPath := filepath.Join(dir, "plot.png"), filepath.Join(dir, "plot.svg")
	htmlPath := filepath.Join(dir, "report.html")
	if err := report.WriteJSON(jsonPath, res); err != nil {
		return err
	}
	if err := report.Plot(res, pngPath, svgPath); err != nil {
		return err
	}
	if err := report.WriteHTML(htmlPath, res); err != nil {
		return err
	}
	fmt.Println()
	if err := report.WriteTable(os.Stdout, res); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s\n", strings.Join([]string{jsonPath, htmlPath, pngPath, svgPath}, "\n      "))
	if printJSON {
		return printResultsJSON(os.Stdout, jsonPath)
	}
	return nil
}

// describePlacement says which cores each part runs on, for the log.
func describePlacement(p local.Placement) string {
	switch p.Mode() {
	case backend.ModeCluster:
		return "the cluster's: each service in its pod, where the scheduler put it"
	case local.ModeShared:
		return fmt.Sprintf("%s on CPUs %v; other services, load and controllers on CPUs %v", p.Target, p.TargetCPUs, p.OtherCPUs)
	case local.ModeKeep:
		return fmt.Sprintf("keep: nothing pinned; every service stays on the cores it runs on (those slowpoke starts, and the load and the controllers, on CPUs %v)", p.OtherCPUs)
	}
	names := slices.Sorted(maps.Keys(p.Services))
	parts := []string{fmt.Sprintf("%s on CPUs %v", p.Target, p.TargetCPUs)}
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s on %v", n, p.Services[n]))
	}
	return fmt.Sprintf("dedicated: %s; load and controllers on CPUs %v", strings.Join(parts, ", "), p.OtherCPUs)
}

// checkCanValidate refuses flag (validate, --validate) on a target whose
// ground truth cannot be measured (spec.Service.CanValidate): it has no
// ground_truth in the spec at specPath, or slowpoke cannot restart it.
func checkCanValidate(s *spec.Spec, target, specPath, flag string) error {
	svc, _ := s.Service(target)
	if err := svc.CanValidate(); errors.Is(err, spec.ErrNoGroundTruth) {
		return fmt.Errorf("service %q has no ground_truth in %s: %s needs a way to really reduce its work (docs/spec.md)", target, specPath, flag)
	} else if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}
