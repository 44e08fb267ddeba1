package experiment

import (
	"context"
	"errors"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// ScreenRuns is how many runs of the load Screen makes when nothing has to
// be measured again: a baseline (pre-profiling), one slowdown, a second
// baseline.
const ScreenRuns = 3

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
// as in Run). The results are predict's, with that one point.
func (r *Runner) Screen(ctx context.Context) (*report.Results, error) {
	if len(r.opts.Reductions) != 1 {
		return nil, errors.New("screening measures exactly one reduction")
	}
	if r.opts.Validate {
		return nil, errors.New("screening does not validate")
	}
	if err := r.checkRun(); err != nil {
		return nil, err
	}
	r.opts.Repetitions, r.opts.MaxRepetitions = 1, 1
	out := r.newResults()
	r.steps, r.start = ScreenRuns, time.Now()
	if err := r.preProfile(ctx, out); err != nil {
		return nil, err
	}
	points, err := r.planPoints()
	if err != nil {
		return nil, err
	}
	rounds := r.prof.neighbours
	if !r.opts.Tuning.GraphRounds {
		rounds = r.star()
	}
	if err := r.measureSlowdown(ctx, 0, 0, points[0], rounds); err != nil {
		return nil, err
	}
	r.step++
	s, err := r.run(ctx, nil, nil, r.opts.Warmup, false)
	if err != nil {
		return nil, err
	}
	r.base = append(r.base, s)
	r.progress("closing baseline: %.0f req/s", s.res.Throughput)
	r.summarize(out, points)
	return out, nil
}
