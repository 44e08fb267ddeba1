package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/model"
)

// rankConfig is slowpoke rank's flags.
type rankConfig struct {
	specPath  string
	reduce    string
	services  string
	conns     int
	warmup    time.Duration
	duration  time.Duration
	reps      int
	maxReps   int
	minGain   float64
	maxPause  time.Duration
	outDir    string
	printJSON bool
	extraPath []string
	method    methodConfig
	// screen ranks in two passes, a short screening of every service
	// and the full measurement of the candidates (--screen=false: every
	// service in full, as before); screenDuration is the screening's
	// window (0: half the measurement window), seed its order's (0: from
	// the clock). budget stops the ranking before a step expected to end
	// past it (0: none). bound screens only the services whose share of
	// the CPU, in a census run before the screening, allows a gain above
	// --min-gain (--bound=false: every service).
	screen         bool
	bound          bool
	screenDuration time.Duration
	seed           uint64
	budget         time.Duration
	// freshConfirm measures each candidate's confirmation from the start
	// instead of continuing its screening (a research switch, for
	// comparison: rankResearchFlags).
	freshConfirm bool
	// screenAll screens every service past its first baseline, also
	// where that baseline found the other services setting the
	// throughput (experiment.Tuning.ScreenAll; a research switch).
	screenAll bool
}

// rankResearchFlags adds rank's research switches to its flags; only the
// lab's build (lab_rank.go) sets it.
var rankResearchFlags func(fs *flag.FlagSet, c *rankConfig)

// Rank's defaults keep a 9-service application at two reductions within
// about 10 minutes on a 2-core machine: two repetitions, a third only for
// points still noisier than --precision. A gain counts from --min-gain,
// 5% by default: where services share cores, predictions were measured
// off by 3-11% RMSE (docs/method.md), and a smaller predicted gain is
// within that error.
const (
	rankReps    = 2
	rankMaxReps = 3
)

func runRank(args []string) int {
	fs := flag.NewFlagSet("rank", flag.ContinueOnError)
	c := rankConfig{reduce: "25,50%", reps: rankReps, maxReps: rankMaxReps, minGain: 5, maxPause: controller.DefaultMaxPause, method: defaultMethod(), screen: true, bound: true}
	fs.StringVar(&c.specPath, "f", "", "application spec (YAML, see docs/spec.md) (required)")
	fs.StringVar(&c.reduce, "reduce", c.reduce, "reductions of each service's per-call cost: 25,50% | 300us | 2x")
	fs.StringVar(&c.services, "services", "", "comma-separated services to rank (default: every service)")
	fs.IntVar(&c.conns, "connections", 0, "closed-loop connections (default: the spec's workload.connections)")
	fs.DurationVar(&c.warmup, "warmup", 0, "warm-up before each measurement (default: the spec's)")
	fs.DurationVar(&c.duration, "duration", 0, "measurement window (default: the spec's)")
	fs.IntVar(&c.reps, "reps", c.reps, "repetitions of every service's baseline and points (a confirmation makes those after the first only while its verdict or its place is open)")
	fs.IntVar(&c.maxReps, "max-reps", c.maxReps, "repeat points whose estimate is still noisy up to this many runs")
	fs.Float64Var(&c.minGain, "min-gain", c.minGain, "smallest predicted gain (%) that counts, at the largest reduction; a gain must also exceed twice its standard error")
	fs.DurationVar(&c.maxPause, "max-pause", c.maxPause, "hard cap on any single pause of a service")
	fs.StringVar(&c.outDir, "out", "", "output directory (default: slowpoke-out/<app>-rank-<time>)")
	fs.BoolVar(&c.screen, "screen", c.screen, "screen every service with one short run at the largest reduction, then measure in full only those whose interval does not rule out a gain above --min-gain (false: every service in full)")
	fs.BoolVar(&c.bound, "bound", c.bound, "before the screening, measure every service's share of the application's CPU in one run and screen only those whose share allows a gain above --min-gain (false: screen every service; a full ranking, --screen=false, makes no census)")
	fs.DurationVar(&c.screenDuration, "screen-duration", 0, "measurement window of the screening runs (default: half of --duration, at least 1s)")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the screening's random order (default: from the clock; results.json records it)")
	fs.DurationVar(&c.budget, "budget", 0, "time budget of the whole ranking: no screening or confirmation starts that is expected to end past it, and what was measured is written, marked partial (default: none)")
	printJSONFlag(fs, &c.printJSON)
	methodFlags(fs, &c.method)
	kubeModeFlag(fs, &c.method)
	if rankResearchFlags != nil {
		rankResearchFlags(fs, &c)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke rank -f app.yaml [--reduce LIST] [--services a,b,...] [flags]\n\n"+
			"Which service is worth optimizing? Starts the application once and makes every\n"+
			"service (or the listed ones) the target in turn, without restarting anything,\n"+
			"predicting the application's throughput if that service were cheaper per call.\n"+
			"Prints the services ranked by predicted gain at the largest reduction, and writes\n"+
			"results.json and report.html to the output directory.\n\n")
		fs.PrintDefaults()
	}
	return runCommand("rank", fs, args, []string{"f"}, func() error { return rank(c) })
}

// rankTargets returns the services to rank: the listed ones, checked
// against the spec, or every service in spec order.
func rankTargets(s *spec.Spec, list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		var all []string
		for _, svc := range s.Services {
			all = append(all, svc.Name)
		}
		return all, nil
	}
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if _, ok := s.Service(name); !ok {
			return nil, fmt.Errorf("--services: unknown service %q; services of %q: %s", name, s.Name, strings.Join(s.ServiceNames(), ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--services: no service named")
	}
	return out, nil
}

func rank(c rankConfig) error {
	start := time.Now()
	s, err := spec.Load(c.specPath)
	if err != nil {
		return err
	}
	targets, reds, err := c.check(s)
	if err != nil {
		return err
	}
	if c.outDir == "" {
		c.outDir = filepath.Join("slowpoke-out", fmt.Sprintf("%s-rank-%s", s.Name, time.Now().Format("20060102-150405")))
	}
	app, err := startSession(s, c.outDir, local.Options{
		Options: backend.Options{Target: targets[0], MaxPause: c.maxPause}, Placement: c.method.mode(), ExtraPath: c.extraPath,
	}, c.method.kubeOptions(false))
	if err != nil {
		return err
	}
	var closeOnce sync.Once
	closeApp := func() { closeOnce.Do(app.close) }
	defer closeApp()
	out, interrupted, err := rankAll(app, c, s, targets, reds, start)
	if err != nil {
		return err
	}
	if interrupted {
		// Safety first: every pause stopped and the application stopped
		// (or given back as it was) before the partial ranking is written.
		closeApp()
	}
	out.ElapsedS = time.Since(start).Seconds()
	if err := writeReport(c.outDir, func(p string) error { return report.WriteRankJSON(p, out) }, func(p string) error { return report.WriteRankHTML(p, out) },
		func(w io.Writer) error { return report.WriteRankTable(w, out) }, nil, c.printJSON); err != nil {
		return err
	}
	if interrupted {
		return fmt.Errorf("interrupted: %w (the ranking so far is written, marked partial)", context.Canceled)
	}
	return nil
}

// check refuses bad flags before anything starts; it returns the services
// to rank and the reductions.
func (c rankConfig) check(s *spec.Spec) ([]string, []model.Reduction, error) {
	targets, err := rankTargets(s, c.services)
	if err != nil {
		return nil, nil, err
	}
	reds, err := model.ParseReductions(c.reduce)
	if err != nil {
		return nil, nil, fmt.Errorf("--reduce: %w", err)
	}
	if err := checkRuns(c.reps, c.maxReps, c.warmup, c.duration); err != nil {
		return nil, nil, err
	}
	if !(c.minGain >= 0 && c.minGain < 100) {
		return nil, nil, fmt.Errorf("--min-gain must be a gain in [0, 100) per cent, got %v", c.minGain)
	}
	if err := checkMaxPause(c.maxPause); err != nil {
		return nil, nil, err
	}
	if err := c.method.check(); err != nil {
		return nil, nil, err
	}
	if err := c.method.checkFor(s); err != nil {
		return nil, nil, err
	}
	if c.budget < 0 || c.screenDuration < 0 {
		return nil, nil, fmt.Errorf("--budget and --screen-duration must not be negative")
	}
	return targets, reds, nil
}

// rankAll ranks the targets, screening them first unless --screen=false,
// judges their gains and orders the ranking. A target that fails is
// ranked as failed (and the ranking marked incomplete), one that used
// almost no CPU as skipped. Ctrl-C or SIGTERM, or the budget, ends it
// early with the ranking so far, marked partial (interrupted: by a
// signal); the death of a service or a controller ends it with an error.
func rankAll(app *session, c rankConfig, s *spec.Spec, targets []string, reds []model.Reduction, start time.Time) (out *report.Rank, interrupted bool, err error) {
	var texts []string
	for _, r := range reds {
		texts = append(texts, r.Text)
	}
	out = &report.Rank{App: s.Name, CreatedAt: time.Now().UTC(), Reductions: texts, MinGainPct: c.minGain, BudgetS: c.budget.Seconds()}
	if strings.TrimSpace(c.services) != "" {
		out.Services = targets
	}
	if c.screen {
		interrupted, err = rankScreened(app, c, out, targets, reds, texts, start)
	} else {
		interrupted, err = rankEach(app, c, out, targets, reds, texts, start)
	}
	if err != nil {
		return nil, false, err
	}
	out.Order()
	out.Warnings = append(out.Warnings, rankWarnings(out.Entries)...)
	if text := out.PartialText(); text != "" {
		app.logf("%s", text)
	}
	if text := out.IncompleteText(); text != "" {
		app.logf("%s", text)
	}
	return out, interrupted, nil
}

// rankEach measures every target in full in turn (--screen=false).
func rankEach(app *session, c rankConfig, out *report.Rank, targets []string, reds []model.Reduction, texts []string, start time.Time) (interrupted bool, err error) {
	prog := &rankProgress{start: time.Now(), targets: len(targets)}
	for i, name := range targets {
		if !fitsBudget(time.Since(start), meanOf(prog.finished), c.budget) {
			out.Partial, out.PartialReason = true, fmt.Sprintf("the budget of %v ran out", c.budget)
			for _, n := range targets[i:] {
				out.Entries = append(out.Entries, notReached(n, "the budget ran out first"))
			}
			return false, nil
		}
		prog.begin(i, name)
		e := report.RankEntry{Service: name}
		res, err := rankOne(app.ctx, app, c, name, reds, texts, prog.prefix)
		switch {
		case err == nil:
			e.Results = res
		case app.ctx.Err() != nil:
			if app.interrupted.Err() == nil {
				return false, app.explain(err)
			}
			out.Partial, out.PartialReason = true, "interrupted while measuring "+name
			for _, n := range targets[i:] {
				out.Entries = append(out.Entries, notReached(n, "the ranking was interrupted first"))
			}
			return true, nil
		case errors.Is(err, experiment.ErrNotCalled):
			e.Verdict, e.Reason = report.VerdictNotCalled, "the workload does not call it"
		case errors.Is(err, experiment.ErrNoCPU):
			e.Verdict, e.Reason = report.VerdictSkipped, errText(err)
		default:
			e.Verdict, e.Reason = report.VerdictFailed, errText(err)
		}
		report.Judge(&e, c.minGain)
		prog.end()
		switch e.Verdict {
		case report.VerdictGain, report.VerdictNoGain:
			app.logf("%s %s: %+.1f%% ± %.1f at %s (%s)", prog.prefix(0, 0), name, e.GainPct, e.GainStdErrPct, texts[len(texts)-1], e.Verdict)
		default:
			app.logf("%s %s: %s: %s", prog.prefix(0, 0), name, e.Verdict, e.Reason)
		}
		out.Entries = append(out.Entries, e)
	}
	return false, nil
}

// rankOne makes name the target and runs its full experiment, its
// progress lines prefixed by prefix.
func rankOne(ctx context.Context, app *session, c rankConfig, name string, reds []model.Reduction, texts []string, prefix func(step, steps int) string) (*report.Results, error) {
	if err := app.d.Retarget(name); err != nil {
		return nil, err
	}
	runner, err := experiment.New(app.d, experiment.Options{
		Target: name, Reductions: reds, ReductionsText: texts, Connections: c.conns,
		Warmup: c.warmup, Duration: c.duration, Repetitions: c.reps, MaxRepetitions: c.maxReps, PrecisionPct: c.method.precision, MaxPause: c.maxPause,
		SpecPath: c.specPath, Progress: os.Stderr, ProgressPrefix: prefix,
		PauseMethod: c.method.pauseMethod(),
		Trigger:     c.method.trigger,
		Spans:       app.spans,
	})
	if err != nil {
		return nil, err
	}
	return runner.Run(ctx)
}

// rankProgress says where a ranking is: which service of how many, and
// how long the whole profile has left, from the time the services done so
// far took (or, for the first, from its own runs so far).
type rankProgress struct {
	start    time.Time
	targets  int
	i        int
	name     string
	begun    time.Time
	finished []time.Duration
}

func (p *rankProgress) begin(i int, name string) { p.i, p.name, p.begun = i, name, time.Now() }

func (p *rankProgress) end() { p.finished = append(p.finished, time.Since(p.begun)) }

// prefix is the experiment's ProgressPrefix: step of steps within the
// current service; 0, 0 for a line of rank's own.
func (p *rankProgress) prefix(step, steps int) string {
	elapsed := time.Since(p.start)
	left := p.targets - len(p.finished) // services not finished, this one included
	var eta time.Duration
	switch {
	case len(p.finished) > 0:
		var sum time.Duration
		for _, d := range p.finished {
			sum += d
		}
		per := sum / time.Duration(len(p.finished))
		eta = per * time.Duration(left)
		if step > 1 && steps > 0 && len(p.finished) < p.targets { // this service's share done
			eta -= per * time.Duration(step-1) / time.Duration(steps)
		}
	case step > 1 && steps > 0:
		per := time.Since(p.begun) / time.Duration(step-1) * time.Duration(steps)
		eta = per*time.Duration(left) - time.Since(p.begun)
	}
	etaText := ""
	if eta > 0 {
		etaText = ", about " + eta.Round(time.Second).String() + " left"
	}
	service := fmt.Sprintf("%s %d/%d", p.name, min(p.i+1, p.targets), p.targets)
	if step > 0 {
		service += fmt.Sprintf(" run %d/%d", step, steps)
	}
	return fmt.Sprintf("[%s, %s%s] ", service, elapsed.Round(time.Second), etaText)
}

// rankWarnings gathers the warnings of the services' experiments, each
// once: a warning every experiment gave stands alone, one that only some
// gave names them ("cart, catalog: ..."), since it may concern their runs
// only (a baseline that varied while that service was the target).
func rankWarnings(entries []report.RankEntry) []string {
	var texts []string
	by := map[string][]string{}
	ran := 0
	for _, e := range entries {
		if e.Results == nil {
			continue
		}
		ran++
		for _, w := range e.Results.Warnings {
			if by[w] == nil {
				texts = append(texts, w)
			}
			if !slices.Contains(by[w], e.Service) {
				by[w] = append(by[w], e.Service)
			}
		}
	}
	out := make([]string, 0, len(texts))
	for _, w := range texts {
		if len(by[w]) == ran {
			out = append(out, w)
			continue
		}
		out = append(out, strings.Join(by[w], ", ")+": "+w)
	}
	return out
}
