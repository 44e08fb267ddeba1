package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// poolsConfig is slowpoke pools' flags.
type poolsConfig struct {
	specPath  string
	sla       time.Duration
	services  string
	conns     int
	warmup    time.Duration
	duration  time.Duration
	step      time.Duration
	levels    string
	validate  bool
	reps      int
	apply     bool
	outDir    string
	printJSON bool
	extraPath []string
	// ready, when set, is told once --apply has set the sizes (tests).
	ready func()
	// onResult, when set, receives the results (bench pools).
	onResult func(*report.Pools)
}

func runPools(args []string) int {
	fs := flag.NewFlagSet("pools", flag.ContinueOnError)
	c := poolsConfig{step: experiment.DefaultPoolStep}
	fs.StringVar(&c.specPath, "f", "", "application spec (YAML, see docs/spec.md) (required)")
	fs.DurationVar(&c.sla, "sla", 0, "end-to-end response time every request should meet, e.g. 200ms (required)")
	fs.StringVar(&c.services, "services", "", "comma-separated services to tune (default: the critical ones, busy at least 60% of their cores)")
	fs.IntVar(&c.conns, "connections", 0, "closed-loop connections (default: the spec's workload.connections)")
	fs.DurationVar(&c.warmup, "warmup", 0, "warm-up before each measurement (default: the spec's)")
	fs.DurationVar(&c.duration, "duration", 0, "baseline and validation window (default: the spec's)")
	fs.DurationVar(&c.step, "step", c.step, "time at each pool size of the sweep (sampled every 100ms)")
	fs.StringVar(&c.levels, "levels", "", "pool sizes to sweep, increasing, e.g. 1,2,4,8,16 (default: 1, 2, 3, 4, 6, 9, 14, ... about 1.5 apart, up to the connections)")
	fs.BoolVar(&c.validate, "validate", false, "also measure the application with each recommended size, half and double it, and unlimited")
	fs.IntVar(&c.reps, "reps", 3, "validation runs of each size")
	fs.BoolVar(&c.apply, "apply", false, "set the recommended sizes live and keep the application running with them until Ctrl-C")
	fs.StringVar(&c.outDir, "out", "", "output directory (default: slowpoke-out/<app>-pools-<time>)")
	printJSONFlag(fs, &c.printJSON)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke pools -f app.yaml --sla 200ms [--validate] [--apply] [flags]\n\n"+
			"What pool size should each critical service run with? Starts the application,\n"+
			"finds the services that limit it, and for each sweeps the number of calls it\n"+
			"admits at a time (slowpoke's instrumentation queues the rest) while sampling its\n"+
			"concurrency and goodput (calls done within the SLA, less the time the services\n"+
			"before it take). The knee of goodput against concurrency is the recommended size.\n"+
			"Prints a table, and writes results.json, report.html and a plot per service to\nthe output "+
			"directory. See docs/pools.md.\n\n")
		fs.PrintDefaults()
	}
	return runCommand("pools", fs, args, []string{"f", "sla"}, func() error { return poolsMain(c) })
}

func parseLevels(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > spec.MaxPool {
			return nil, fmt.Errorf("--levels: %q is not a pool size (a whole number from 1 to %d)", f, spec.MaxPool)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("--levels: sizes must increase: %d after %d", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

func poolsMain(c poolsConfig) error {
	s, err := spec.Load(c.specPath)
	if err != nil {
		return err
	}
	services, levels, err := c.check(s)
	if err != nil {
		return err
	}
	if c.outDir == "" {
		c.outDir = filepath.Join("slowpoke-out", fmt.Sprintf("%s-pools-%s", s.Name, time.Now().Format("20060102-150405")))
	}
	app, err := startSession(s, c.outDir, local.Options{Options: backend.Options{MaxPause: controller.DefaultMaxPause}, ExtraPath: c.extraPath}, kube.Options{})
	if err != nil {
		return err
	}
	defer app.close()
	out, err := experiment.AdvisePools(app.ctx, app.d, experiment.PoolOptions{
		SLA: c.sla, Services: services, Connections: c.conns, Warmup: c.warmup, Duration: c.duration,
		Step: c.step, Levels: levels, Validate: c.validate, Repetitions: c.reps, Progress: os.Stderr, SpecPath: c.specPath,
	})
	if err != nil {
		return app.explain(err)
	}
	if err := writePools(c, out); err != nil {
		return err
	}
	if c.onResult != nil {
		c.onResult(out)
	}
	if !c.apply {
		return nil
	}
	return applyPools(app, c, s, out)
}

// check refuses bad flags before anything starts; it returns the services
// to size (nil: every critical one) and the pool sizes to sweep (nil: the
// default sweep).
func (c poolsConfig) check(s *spec.Spec) (services []string, levels []int, err error) {
	if strings.TrimSpace(c.services) != "" {
		if services, err = rankTargets(s, c.services); err != nil {
			return nil, nil, err
		}
	}
	if levels, err = parseLevels(c.levels); err != nil {
		return nil, nil, err
	}
	if levels != nil && len(levels) < 3 {
		return nil, nil, fmt.Errorf("--levels %s: sweep at least 3 pool sizes", c.levels)
	}
	if c.reps < 1 {
		return nil, nil, errors.New("--reps must be at least 1")
	}
	if c.sla <= 0 {
		return nil, nil, fmt.Errorf("--sla must be > 0, got %v", c.sla)
	}
	if err := checkWindow(c.conns, c.warmup, c.duration); err != nil {
		return nil, nil, err
	}
	if c.step < 10*experiment.PoolSample {
		return nil, nil, fmt.Errorf("--step must be at least %v (10 samples of %v), got %v", 10*experiment.PoolSample, experiment.PoolSample, c.step)
	}
	return services, levels, nil
}

// writePools writes each service's plot, results.json and report.html,
// and prints the table.
func writePools(c poolsConfig, out *report.Pools) error {
	var plots []string
	for i := range out.Services {
		svc := &out.Services[i]
		svc.Plot = report.PoolPlotName(svc.Service)
		plot := filepath.Join(c.outDir, svc.Plot)
		if err := report.PlotPool(plot, svc); err != nil {
			return fmt.Errorf("plot of %s: %w", svc.Service, err)
		}
		plots = append(plots, plot)
	}
	return writeReport(c.outDir, func(p string) error { return report.WritePoolsJSON(p, out) }, func(p string) error { return report.WritePoolsHTML(p, out) },
		func(w io.Writer) error { return report.WritePoolsTable(w, out) }, plots, c.printJSON)
}

// applyPools sets each service's recommended pool size in the running
// application (--apply) and keeps it running until Ctrl-C.
func applyPools(app *session, c poolsConfig, s *spec.Spec, out *report.Pools) error {
	var applied []string
	for _, svc := range out.Services {
		ds := app.d.Service(svc.Service)
		thr := time.Duration(svc.ThresholdMS * float64(time.Millisecond))
		if err := ds.Control.SetPool(wire.Pool{Limit: int64(svc.Recommended), ThresholdNS: int64(thr)}); err != nil {
			return fmt.Errorf("apply the pool of %s: %w", svc.Service, err)
		}
		applied = append(applied, fmt.Sprintf("%s=%d", svc.Service, svc.Recommended))
	}
	app.logf("applied pool sizes %s: the application keeps running at %s with them; Ctrl-C to stop", strings.Join(applied, ", "), s.Entry)
	app.logf("to keep them in every run, give each service its size in %s (pool: N; docs/spec.md)", c.specPath)
	if c.ready != nil {
		c.ready()
	}
	<-app.ctx.Done()
	if app.interrupted.Err() != nil {
		return nil // Ctrl-C ends an applied run
	}
	return app.d.Explain(context.Cause(app.ctx))
}
