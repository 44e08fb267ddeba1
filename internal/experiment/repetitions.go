package experiment

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// measureRepetitions runs the Repetitions repetitions: a baseline (the
// first is pre-profiling's), then every point. With settled, each
// repetition after the first is made only if settled, asked with the
// results so far (settledBy), does not say they answer the question;
// done says it did.
func (r *Runner) measureRepetitions(ctx context.Context, points []*measuredPoint, rounds map[string][]string, out *report.Results, settled func(*report.Results) (bool, string)) (done bool, err error) {
	all := indices(len(points))
	for rep := 0; rep < r.opts.Repetitions; rep++ {
		if rep > 0 {
			if ok, why := r.settledBy(settled, out, points); ok {
				r.progress("rep %d: %s: not repeating the points", rep+1, why)
				return true, nil
			}
			r.step++
			if err := r.baseline(ctx, fmt.Sprintf("rep %d baseline", rep+1)); err != nil {
				return false, err
			}
		}
		if err := r.measureRepetition(ctx, rep, all, points, rounds); err != nil {
			return false, err
		}
	}
	return false, nil
}

// settledBy asks settled (nil: nothing is settled) whether the results
// so far, summarized quietly into a copy of out, answer the question.
func (r *Runner) settledBy(settled func(*report.Results) (bool, string), out *report.Results, points []*measuredPoint) (bool, string) {
	if settled == nil {
		return false, ""
	}
	so := *out
	so.Warnings, so.Points = slices.Clone(out.Warnings), slices.Clone(out.Points)
	progress := r.opts.Progress
	r.opts.Progress = nil
	r.summarize(&so, points)
	r.opts.Progress = progress
	return settled(&so)
}

// baseline measures a baseline run, adds it to the baselines and prints
// it as what.
func (r *Runner) baseline(ctx context.Context, what string) error {
	s, err := r.run(ctx, nil, nil, r.opts.Warmup, false)
	if err != nil {
		return err
	}
	r.base = append(r.base, s)
	r.progress("%s: %.0f req/s", what, s.res.Throughput)
	return nil
}

// repeatNoisy repeats the noisy points until their estimates are tight,
// up to MaxRepetitions. With settled, it first asks it, before each
// further repetition, whether the results so far (summarized into a copy
// of out, quietly) already answer the question asked, and then stops:
// rank's confirmation, whose verdict an interval wholly above or below
// the minimum gain settles however wide it is.
func (r *Runner) repeatNoisy(ctx context.Context, points []*measuredPoint, rounds map[string][]string, out *report.Results, settled func(*report.Results) (bool, string)) error {
	o := r.opts
	for rep := o.Repetitions; rep < o.MaxRepetitions; rep++ {
		var noisy []int
		var worst float64
		for i, p := range points {
			// A single run has no standard error yet (--reps 1).
			if se := stdErrPct(r.predictions(p.samples, p.d), throughputs(p.truth)); len(p.samples) < 2 || se > o.PrecisionPct {
				noisy = append(noisy, i)
				worst = max(worst, se)
			}
		}
		if len(noisy) == 0 {
			break
		}
		if ok, why := r.settledBy(settled, out, points); ok {
			r.progress("rep %d: %d of %d points have a standard error above %.1f%% (worst %.1f%%), but %s: not repeating them",
				rep+1, len(noisy), len(points), o.PrecisionPct, worst, why)
			break
		}
		perPoint := 1
		if o.Validate {
			perPoint = 2
		}
		r.steps += perPoint * len(noisy)
		r.progress("rep %d: %d of %d points have a standard error above %.1f%% (worst %.1f%%); repeating them",
			rep+1, len(noisy), len(points), o.PrecisionPct, worst)
		if err := r.measureRepetition(ctx, rep, noisy, points, rounds); err != nil {
			return err
		}
	}
	return nil
}

// measureRepetition runs one repetition of the given points: every
// slowdown, then every ground truth (one restart of the target each), in
// an order that alternates between repetitions so that drift does not
// favour either end of the curve.
func (r *Runner) measureRepetition(ctx context.Context, rep int, which []int, points []*measuredPoint, rounds map[string][]string) error {
	order := slices.Clone(which)
	if rep%2 == 1 {
		slices.Reverse(order)
	}
	var truth func(i int) error
	if r.opts.Validate {
		truth = func(i int) error { return r.measureTruth(ctx, rep, i, points[i]) }
	}
	return measureRepetition(order,
		func(i int) error { return r.measureSlowdown(ctx, rep, i, points[i], rounds) },
		truth,
		func() error { return r.restartTarget(ctx, 0) })
}

// measureRepetition is the loop of one repetition that predict, validate
// and latency share: every point of order predicted, then, where truth is
// not nil (validating), every point's ground truth (one restart of the
// target each) and restore (the target restarted as started). It stops at
// the first error.
func measureRepetition(order []int, predict, truth func(i int) error, restore func() error) error {
	for _, i := range order {
		if err := predict(i); err != nil {
			return err
		}
	}
	if truth == nil {
		return nil
	}
	for _, i := range order {
		if err := truth(i); err != nil {
			return err
		}
	}
	return restore()
}

// indices is 0, 1, ..., n-1.
func indices(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// measureSlowdown runs point i's slowdown once (twice where the shared
// cores bound its first run, or more where the target starved: slowRun)
// and prints its prediction.
func (r *Runner) measureSlowdown(ctx context.Context, rep, i int, p *measuredPoint, rounds map[string][]string) error {
	o := r.opts
	r.step++
	s, err := r.slowRun(ctx, &p.pointRuns, p.d, rounds, slowEvents{lengthened: func(short slowdown, s *sample) {
		r.steps++
		r.progress("rep %d %s: the shared cores, not %s, bound the run (%.0f req/s, pause %v every %d calls); measuring it with pauses of %v every %d calls",
			rep+1, o.Reductions[i].Text, o.Target, s.res.Throughput, short.pause.Round(time.Microsecond), short.batch, p.sd.pause.Round(time.Microsecond), p.sd.batch)
		r.step++
	}, shortened: func(was slowdown, s *sample) {
		r.steps++
		in, all, _ := r.starved(s)
		r.progress("rep %d %s: %s starved during the pauses (busy %.0f%% of them against %.0f%% of the run), so the prediction would be a lower bound; measuring it again with pauses of %v every %d calls (was %v every %d)",
			rep+1, o.Reductions[i].Text, o.Target, 100*in, 100*all, p.sd.pause.Round(time.Microsecond), p.sd.batch, was.pause.Round(time.Microsecond), was.batch)
		r.step++
	}})
	if err != nil {
		return err
	}
	pred, perr := r.predict(s, p.d)
	predText := fmt.Sprintf("%.0f req/s", pred)
	if perr != nil {
		predText = "infeasible"
	}
	r.progress("rep %d %s (d = %v, pause %v every %d calls): %.0f req/s -> predicted %s",
		rep+1, o.Reductions[i].Text, p.d.Round(time.Microsecond), p.sd.pause.Round(time.Microsecond), p.sd.batch, s.res.Throughput, predText)
	return nil
}

// measureTruth measures point i's ground truth once: the target restarted
// with its work really reduced.
func (r *Runner) measureTruth(ctx context.Context, rep, i int, p *measuredPoint) error {
	r.step++
	ts, err := r.truth(ctx, p.d)
	if err != nil {
		return err
	}
	p.truth = append(p.truth, ts)
	tput := ts.res.Throughput
	r.progress("rep %d %s ground truth (target's work really reduced by %s): %.0f req/s",
		rep+1, r.opts.Reductions[i].Text, r.truthText(p.d), tput)
	return nil
}
