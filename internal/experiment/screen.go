package experiment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/model"
)

// ScreenRuns is how many runs of the load Screen makes when nothing has to
// be measured again: a baseline (pre-profiling), one slowdown, a second
// baseline. Screening.More makes two: a slowdown and a baseline.
const ScreenRuns = 3

// screenCycles is how many request cycles a screening window should hold,
// as --connections auto asks of a measurement window (a cycle at most a
// tenth of it).
const screenCycles = 10

// cycleWindow is a request cycle (connections / throughput) at tput
// req/s, and the window that holds screenCycles of them, up to longest.
func cycleWindow(connections int, tput float64, longest time.Duration) (cycle, window time.Duration) {
	cycle = time.Duration(float64(connections) / tput * float64(time.Second))
	return cycle, min(longest, (screenCycles * cycle).Round(100*time.Millisecond))
}

// Screening is one service's screening, kept between the rounds of rank's
// screening pass so that a later round adds its runs to the same point.
type Screening struct {
	r      *Runner
	points []*measuredPoint
	rounds map[string][]string
	// template is the results as pre-profiling left them, before any
	// point was summarized.
	template report.Results
}

// Screen is the short measurement of rank's first pass
// (docs/method.md, "Screening, then confirmation"): pre-profiling, which
// is also a baseline, one slowdown run at the single reduction given, and
// a second baseline right after it. The point's prediction is judged
// against the two baselines measured on either side of its slowdown, so
// that a steady drift of the machine's speed cancels out, and the pair is
// a measurement of the run-to-run noise that the next services' intervals
// pool (Options.NoiseGroups): one slowdown run has no spread of its own.
// Repetitions and MaxRepetitions are not used: the point is measured once
// (again only where the shared cores bound its run or the target starved,
// as in Run). The results are predict's, with that one point; the
// Screening adds runs to it (More).
//
// Where the pre-profiling baseline shows that the other services set the
// throughput (OthersBindError), the screening ends there: the error,
// and the results with that baseline and no point.
//
// A window that holds fewer than screenCycles request cycles
// (connections / throughput, from pre-profiling) measures a transient:
// the slowdown runs and later baselines then get a window of that many
// cycles instead, up to longest (0: no longer).
func (r *Runner) Screen(ctx context.Context, longest time.Duration) (*Screening, *report.Results, error) {
	if len(r.opts.Reductions) != 1 {
		return nil, nil, errors.New("screening measures exactly one reduction")
	}
	if r.opts.Validate {
		return nil, nil, errors.New("screening does not validate")
	}
	if err := r.checkRun(); err != nil {
		return nil, nil, err
	}
	r.opts.Repetitions, r.opts.MaxRepetitions = 1, 1
	out := r.newResults()
	r.steps, r.start = ScreenRuns, time.Now()
	if err := r.preProfile(ctx, out); err != nil {
		return nil, nil, err
	}
	if err := r.othersBind(); err != nil {
		out.Baseline = r.baselineOf(r.base)
		return nil, out, err
	}
	if tput := r.base[0].res.Throughput; tput > 0 && longest > r.opts.Duration {
		cycle, want := cycleWindow(r.opts.Connections, tput, longest)
		if want > r.opts.Duration {
			r.progress("a request cycle takes %v at %.0f req/s: screening with %v windows instead of %v", cycle.Round(time.Millisecond), tput, want, r.opts.Duration)
			r.opts.Duration = want
			out.Settings.DurationS = want.Seconds()
		}
	}
	points, err := r.planPoints()
	if err != nil {
		return nil, nil, err
	}
	rounds := r.prof.neighbours
	if !r.opts.Tuning.GraphRounds {
		rounds = r.star()
	}
	sc := &Screening{r: r, points: points, rounds: rounds, template: *out}
	sc.template.Warnings = slices.Clone(out.Warnings)
	res, err := sc.measure(ctx, 0)
	if err != nil {
		return nil, nil, err
	}
	return sc, res, nil
}

// othersBindBusy is the share of its own cores that a service may keep
// busy in its pre-profiling baseline, at most, for that baseline to end
// its screening where the shared cores were saturated (othersBind). A
// service busy most of the time may hold a queue, and a faster one moves
// it to the shared services, which then do less work per request (on
// OnlineBoutique, cart, its bottleneck, once had a screening baseline
// busy 83% of its core with the shared cores idle 0.0%); the services
// ruled out on boutique and the demo kept theirs busy 1-16%
// (docs/notes/rank-screening.md).
const othersBindBusy = 0.5

// OthersBindError is the error of a screening that ended after
// pre-profiling (Runner.Screen, errors.As): under shared placement, the
// service's own baseline, with it on cores of its own, left the shared
// cores idle less than 1% of the time while it kept its cores busy less
// than half of it. The other services then set the throughput: the
// requests wait at them, not at the target, and a faster target leaves
// their work, and the throughput, as they are. No slowdown run can show
// otherwise on this placement, so none is made.
type OthersBindError struct {
	Target        string
	SharedIdlePct float64 // the shared cores' idle time in the baseline, %
	TargetBusyPct float64 // the target's CPU time over its cores, %
}

func (e *OthersBindError) Error() string {
	return fmt.Sprintf("the shared cores bound its own baseline (idle %.1f%%) while %s kept its core busy %.0f%% of the time: the other services, not %s, set the throughput, and a faster %s leaves their work as it is",
		e.SharedIdlePct, e.Target, e.TargetBusyPct, e.Target, e.Target)
}

// othersBind is the OthersBindError of the target's pre-profiling
// baseline (the first of r.base), or nil where it does not apply: not
// shared placement, the target not pinned, the shared cores idle 1% or
// more, the target busy half of its cores or more, or Tuning.ScreenAll.
func (r *Runner) othersBind() error {
	pl := r.d.Placement()
	if r.opts.Tuning.ScreenAll || !pl.SharedCores() || len(pl.TargetCPUs) == 0 || len(r.base) == 0 || r.base[0].window <= 0 || r.prof == nil {
		return nil
	}
	s := r.base[0]
	idle, busy := r.sharedIdlePct(s), r.targetBusy(s)
	if idle >= sharedBoundIdlePct || busy >= othersBindBusy || s.res == nil || s.res.Throughput <= 0 {
		return nil
	}
	return &OthersBindError{Target: r.opts.Target, SharedIdlePct: idle, TargetBusyPct: 100 * busy}
}

// More measures the screened point once more and a baseline after it,
// and summarizes all the screening's runs so far, their noise pooled with
// noise (the other services' baselines; nil keeps those given before).
// The deployment must have the screening's target as its target again.
func (sc *Screening) More(ctx context.Context, noise [][]float64) (*report.Results, error) {
	r := sc.r
	if noise != nil {
		r.opts.NoiseGroups = noise
	}
	r.step, r.steps, r.start = 0, 2, time.Now()
	return sc.measure(ctx, len(sc.points[0].samples))
}

// measure runs the point's slowdown, then a baseline, and summarizes.
func (sc *Screening) measure(ctx context.Context, rep int) (*report.Results, error) {
	r := sc.r
	if err := r.measureSlowdown(ctx, rep, 0, sc.points[0], sc.rounds); err != nil {
		return nil, err
	}
	r.step++
	if err := r.baseline(ctx, "baseline after it"); err != nil {
		return nil, err
	}
	out := sc.template
	out.Warnings = slices.Clone(sc.template.Warnings)
	r.summarize(&out, sc.points)
	return &out, nil
}

// ConfirmOptions are the full measurement a Screening is continued into
// (Screening.Confirm): the reductions, windows and repetitions a Run of
// the same target would be given.
type ConfirmOptions struct {
	Reductions     []model.Reduction
	ReductionsText []string
	Warmup         time.Duration
	Duration       time.Duration
	Repetitions    int
	MaxRepetitions int
	// Settled, where set, is asked before each repetition after the
	// first whether the results so far already answer the question
	// (and, if so, why, in a clause); then no repetition is made, of
	// Repetitions or of noisy points. nil: Repetitions are made and
	// noisy points repeated up to MaxRepetitions, as in a Run.
	Settled func(*report.Results) (ok bool, why string)
}

// Confirm measures the screened service in full by continuing its
// screening rather than starting over (docs/method.md, "Screening, then
// confirmation"): pre-profiling's profile is kept, and so are the pauses
// the screening settled on at the screened reduction (the long pauses
// where the shared cores bound its first run, the shorter batch where
// the target starved), so that neither the pre-profile nor a first run
// that is then dropped is made again. Every run is the confirmation's
// own, with o's windows: the screening's shorter windows measured the
// demo's baselines faster than full ones, and their slowdown runs
// widened boutique's intervals (the figures: docs/notes/rank-screening.md),
// so neither mixes with full runs. The runs are a Run's: o.Repetitions
// times a baseline and every point, noisy points repeated up to
// o.MaxRepetitions. The results say what was kept
// (report.Settings.Carried); o.Settled can end the repetitions after the
// first.
// The deployment must have the screening's
// target as its target again. Confirm is for a full measurement without
// ground truth (rank's confirmation); the screening's pooled noise
// (NoiseGroups) is not used.
func (sc *Screening) Confirm(ctx context.Context, o ConfirmOptions) (*report.Results, error) {
	r := sc.r
	if len(o.Reductions) == 0 || len(o.Reductions) != len(o.ReductionsText) {
		return nil, errors.New("confirm: the reductions and their texts differ in number, or none was given")
	}
	if o.Repetitions < 1 {
		o.Repetitions = 1
	}
	screened := r.opts.Reductions[0]
	carried := report.Carried{DurationS: r.opts.Duration.Seconds()}
	r.opts.Reductions, r.opts.ReductionsText = o.Reductions, o.ReductionsText
	if o.Warmup > 0 {
		r.opts.Warmup = o.Warmup
	}
	if o.Duration > 0 {
		r.opts.Duration = max(r.opts.Duration, o.Duration)
	}
	r.opts.Repetitions, r.opts.MaxRepetitions = o.Repetitions, max(o.Repetitions, o.MaxRepetitions)
	r.opts.NoiseGroups = nil
	points, err := r.planPoints()
	if err != nil {
		return nil, err
	}
	for i, red := range o.Reductions {
		if red.Kind == screened.Kind && red.Value == screened.Value && red.From == screened.From && points[i].d == sc.points[0].d {
			was := sc.points[0].pointRuns
			points[i].pointRuns = pointRuns{sd: was.sd, long: was.long, shortenedFrom: was.shortenedFrom}
			carried.Reduction = red.Text
			break
		}
	}
	out := sc.template
	out.Warnings = slices.Clone(sc.template.Warnings)
	out.Settings.Reductions = slices.Clone(o.ReductionsText)
	out.Settings.WarmupS, out.Settings.DurationS = r.opts.Warmup.Seconds(), r.opts.Duration.Seconds()
	out.Settings.Repetitions, out.Settings.MaxRepetitions = r.opts.Repetitions, r.opts.MaxRepetitions
	out.Settings.Carried = &carried

	// The repetitions, each a baseline and every point, as in Run but
	// with the first baseline an ordinary one: the profile is known.
	r.base = nil
	r.step, r.steps, r.start = 1, o.Repetitions*(1+len(points)), time.Now()
	if err := r.baseline(ctx, "baseline (the screening's profile and pauses kept)"); err != nil {
		return nil, err
	}
	rounds := sc.rounds
	done, err := r.measureRepetitions(ctx, points, rounds, &out, o.Settled)
	if err != nil {
		return nil, err
	}
	if !done {
		if err := r.repeatNoisy(ctx, points, rounds, &out, o.Settled); err != nil {
			return nil, err
		}
	}
	r.summarize(&out, points)
	return &out, nil
}
