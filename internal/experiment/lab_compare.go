//go:build lab

package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/model"
)

// Variant is one way of making the slowdown runs that Compare measures.
type Variant struct {
	Name   string
	Method pause.Method
	Batch  int // 0: chosen per point
	// PauseCap is the longest pause a chosen batch may make (0: the
	// default, 4 ms).
	PauseCap time.Duration
	// Tuning is the variant's research switches, whole: they replace the
	// run's (Options.Tuning), so a variant starts from the run's and
	// changes what it compares.
	Tuning Tuning
	// Trigger as in Options ("": auto).
	Trigger string
}

// Comparison is the outcome of Compare: every variant's points against the
// same ground truth.
type Comparison struct {
	App      string          `json:"app"`
	Target   string          `json:"target"`
	Baseline report.Baseline `json:"baseline"`
	C1       float64         `json:"c1"`
	U1US     float64         `json:"u1_us"`
	Methods  []MethodResult  `json:"methods"`
	Settings map[string]any  `json:"settings"`
}

// MethodResult is one method's points, their errors against the shared
// truth, and its RMSE.
type MethodResult struct {
	Method  string         `json:"method"`
	Points  []report.Point `json:"points"`
	RMSEPct float64        `json:"rmse_pct"`
	MaxPct  float64        `json:"max_abs_error_pct"`
	MeanPct float64        `json:"mean_error_pct"`
	// NominalRMSEPct is the RMSE with the nominal delay taken off every
	// run (report.PointDiagnostics.PredictedNominalRPS), from the same runs.
	NominalRMSEPct *float64 `json:"nominal_rmse_pct,omitempty"`
	// Coverage counts the points whose 90% interval held the truth.
	Coverage *report.Coverage `json:"interval_coverage,omitempty"`
}

// Compare measures the same points with several variants (pause methods,
// batch sizes) on one deployment, against one ground truth: every
// repetition measures a baseline, every point's slowdown run with every
// variant (in an order that rotates, so that drift favours none), and
// every point's ground truth. The truth is measured once for all
// variants, so that their errors are paired and their differences are
// not the truth's noise. opts is as for New (Validate is implied); the
// variants set PauseMethod, Batch, Trigger and Tuning.
func Compare(ctx context.Context, d backend.Backend, opts Options, variants []Variant) (*Comparison, error) {
	if len(variants) == 0 {
		return nil, errors.New("no variants to compare")
	}
	opts.Validate = true
	runners, err := variantRunners(d, opts, variants)
	if err != nil {
		return nil, err
	}
	c := &comparison{first: runners[0], runners: runners, variants: variants}
	o := c.first.opts
	perRep := 1 + len(o.Reductions)*(len(variants)+1)
	c.first.steps = o.Repetitions * perRep
	c.first.start = time.Now()
	if o.AutoConnections {
		n, err := c.first.chooseConnections(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range runners {
			r.opts.Connections = n
		}
	}
	if err := c.preProfile(ctx); err != nil {
		return nil, err
	}
	if err := c.planPoints(); err != nil {
		return nil, err
	}
	for rep := 0; rep < o.Repetitions; rep++ {
		if err := c.measureRepetition(ctx, rep); err != nil {
			return nil, err
		}
		if err := c.measureCapacity(ctx); err != nil {
			return nil, err
		}
	}
	return c.summarize(d), nil
}

// measureCapacity makes the capacity runs (capacity.go) after a
// repetition where any variant that makes them wants them, and gives
// them to every variant that takes them: they slow nothing, so one set
// serves all.
func (c *comparison) measureCapacity(ctx context.Context) error {
	for m, r := range c.runners {
		r.base = c.base
		var points []*measuredPoint
		for _, p := range c.points {
			points = append(points, &measuredPoint{pointRuns: p.runs[m], d: p.d})
		}
		if !r.wantsCapacity(points) {
			continue
		}
		c.first.steps++
		c.first.step++
		n := len(r.capRuns)
		if err := r.measureCapacity(ctx, points); err != nil {
			return err
		}
		for _, o := range c.runners {
			if o != r && !o.opts.Tuning.NoCapacityRun {
				o.capRuns = append(o.capRuns, r.capRuns[n:]...)
			}
		}
		return nil
	}
	return nil
}

// variantRunners makes one Runner per variant, every one of them able to
// share one ground truth: its target's calls are counted.
func variantRunners(d backend.Backend, opts Options, variants []Variant) ([]*Runner, error) {
	runners := make([]*Runner, len(variants))
	for i, v := range variants {
		o := opts
		o.PauseMethod, o.Batch, o.Tuning = v.Method, v.Batch, v.Tuning
		o.Trigger = v.Trigger
		r, err := New(d, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Name, err)
		}
		if err := r.resolveTrigger(); err != nil {
			return nil, fmt.Errorf("%s: %w", v.Name, err)
		}
		if !r.counted {
			// The shared truth is per call of the knob.
			return nil, fmt.Errorf("comparing methods needs the target's calls counted: %q is not instrumented", o.Target)
		}
		runners[i] = r
	}
	return runners, nil
}

// comparison is a Compare under way: the first variant's runner measures
// the baselines and the truths and prints the progress.
type comparison struct {
	first    *Runner
	runners  []*Runner // per variant
	variants []Variant
	prof     *profile
	base     []*sample
	points   []*variantPoint
}

// variantPoint is one reduction's slowdown runs with every variant, and
// its ground truths.
type variantPoint struct {
	d     time.Duration
	runs  []pointRuns // per variant
	truth []*sample
}

// preProfile runs the baseline that pre-profiles the target, the first
// baseline repetition.
func (c *comparison) preProfile(ctx context.Context) error {
	first := c.first
	first.step = 1
	first.progress("pre-profiling: baseline with %d connections", first.opts.Connections)
	pre, err := first.run(ctx, nil, nil, 2*first.opts.Warmup, true)
	if err != nil {
		return err
	}
	if c.prof, err = first.profile(pre); err != nil {
		return err
	}
	c.base = []*sample{pre}
	return nil
}

// planPoints resolves every reduction and chooses every variant's batch
// and pause for it, then gives every runner the profile.
func (c *comparison) planPoints() error {
	o, prof := c.first.opts, c.prof
	c.points = make([]*variantPoint, len(o.Reductions))
	for i, red := range o.Reductions {
		dSec, err := red.Resolve(prof.u1.Seconds())
		if err != nil {
			return err
		}
		dd := time.Duration(dSec * 1e9)
		p := &variantPoint{d: dd}
		for _, v := range c.variants {
			b := v.Batch
			if b == 0 {
				b = chooseBatch(dd, prof.u1, prof.q1, o.Connections, v.PauseCap)
			}
			pauseLen := model.PausePerRound(b, dd, prof.q1)
			if pauseLen > o.MaxPause {
				return fmt.Errorf("%s: reduction %s needs a pause of %v per round, over the hard cap %v", v.Name, red.Text, pauseLen, o.MaxPause)
			}
			p.runs = append(p.runs, pointRuns{sd: slowdown{batch: b, pause: pauseLen}})
		}
		c.points[i] = p
	}
	for _, r := range c.runners {
		r.prof = prof
	}
	return nil
}

// measureRepetition runs repetition rep: a baseline (the first is
// pre-profiling's), every point with every variant, every point's ground
// truth, and a restart of the target as started.
func (c *comparison) measureRepetition(ctx context.Context, rep int) error {
	first := c.first
	if rep > 0 {
		first.step++
		s, err := first.run(ctx, nil, nil, first.opts.Warmup, false)
		if err != nil {
			return err
		}
		c.base = append(c.base, s)
	}
	order := indices(len(c.points))
	if rep%2 == 1 {
		slices.Reverse(order)
	}
	return measureRepetition(order,
		func(i int) error { return c.measureVariants(ctx, rep, slices.Index(order, i), i) },
		func(i int) error { return c.measureTruth(ctx, rep, i) },
		func() error { return first.restartTarget(ctx, 0) })
}

// measureVariants runs point i, the k-th of its repetition, with every
// variant, starting from a variant that rotates with k and rep.
func (c *comparison) measureVariants(ctx context.Context, rep, k, i int) error {
	first, o, p := c.first, c.first.opts, c.points[i]
	for j := range c.variants {
		m := (j + k + rep) % len(c.variants)
		first.step++
		pr := &p.runs[m]
		s, err := c.runners[m].slowRun(ctx, pr, p.d, c.runners[m].star(), slowEvents{lengthened: func(_ slowdown, s *sample) {
			first.steps++
			first.progress("rep %d %s %-8s: bound by the shared cores (%.0f req/s); measuring it with pauses of %v every %d calls", rep+1, o.Reductions[i].Text, c.variants[m].Name, s.res.Throughput, pr.sd.pause.Round(time.Microsecond), pr.sd.batch)
			first.step++
		}, shortened: func(was slowdown, s *sample) {
			first.steps++
			first.progress("rep %d %s %-8s: the target starved during the pauses; measuring it with pauses of %v every %d calls (was %v every %d)", rep+1, o.Reductions[i].Text, c.variants[m].Name, pr.sd.pause.Round(time.Microsecond), pr.sd.batch, was.pause.Round(time.Microsecond), was.batch)
			first.step++
		}})
		if err != nil {
			return fmt.Errorf("%s: %w", c.variants[m].Name, err)
		}
		c.runners[m].base = c.base
		pred, _ := c.runners[m].predict(s, p.d)
		first.progress("rep %d %s %-8s: %.0f req/s -> predicted %.0f req/s", rep+1, o.Reductions[i].Text, c.variants[m].Name, s.res.Throughput, pred)
	}
	return nil
}

// measureTruth measures point i's ground truth once, for every variant.
func (c *comparison) measureTruth(ctx context.Context, rep, i int) error {
	first := c.first
	first.step++
	ts, err := first.truth(ctx, c.points[i].d)
	if err != nil {
		return err
	}
	c.points[i].truth = append(c.points[i].truth, ts)
	first.progress("rep %d %s ground truth: %.0f req/s", rep+1, first.opts.Reductions[i].Text, ts.res.Throughput)
	return nil
}

// summarize is every variant's points and errors against the shared
// truth.
func (c *comparison) summarize(d backend.Backend) *Comparison {
	first, o, prof := c.first, c.first.opts, c.prof
	out := &Comparison{App: first.spec.Name, Target: o.Target, C1: prof.c1, U1US: prof.u1.Seconds() * 1e6,
		Settings: map[string]any{"connections": o.Connections, "repetitions": o.Repetitions, "duration_s": o.Duration.Seconds(), "placement": string(d.Placement().Mode())}}
	for m, r := range c.runners {
		r.base = c.base
		if m == 0 {
			out.Baseline = r.baselineOf(c.base)
		}
		out.Methods = append(out.Methods, c.methodResult(m))
	}
	return out
}

// methodResult is variant m's points and their errors.
func (c *comparison) methodResult(m int) MethodResult {
	r := c.runners[m]
	mr := MethodResult{Method: c.variants[m].Name}
	var sq, sum float64
	n := 0
	for _, p := range c.points {
		mr.Points = append(mr.Points, r.point(p.d, &p.runs[m], p.truth))
	}
	report.LevelSharedBound(mr.Points)
	for _, pt := range mr.Points {
		if e := pt.ErrorPct; e != nil {
			sq += *e * *e
			sum += *e
			mr.MaxPct = max(mr.MaxPct, math.Abs(*e))
			n++
		}
	}
	if n > 0 {
		mr.RMSEPct, mr.MeanPct = math.Sqrt(sq/float64(n)), sum/float64(n)
	}
	mr.NominalRMSEPct = report.NominalRMSE(mr.Points)
	mr.Coverage = report.CoverageOf(mr.Points)
	return mr
}
