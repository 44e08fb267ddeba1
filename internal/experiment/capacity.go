package experiment

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// The capacity run: where a point's slowdown runs kept the shared cores
// (shared placement) busy all the time outside the pauses, what they
// allowed there is their capacity under pauses, and the really faster
// system's is higher: its co-located services queue at those cores and
// do less work per request than they do when the queue is at the target,
// as it is between pauses (movie: 554 µs per request in the truth at 0%
// idle, 690 in the slowdown runs). The capacity run measures that
// capacity with the queue where the faster system has it: the
// application unslowed, the shared cores held for a fixed share of every
// capacityPeriod, so that what is left of them is below what the target
// asks of them and they become the bottleneck. Two such runs give the
// line of the share they used against the throughput, and their capacity
// is where it reaches the whole of them (sharedCapacity; docs/method.md,
// "The shared cores' capacity").
//
// The figures below were measured on the 2-core development machine
// (docs/notes/plateau.md, "Capacity runs").
const (
	// capacityPeriod is how often a capacity run holds the shared cores.
	// Long holds cost less per hold than short ones: movie's services
	// unslowed, placed as slowpoke places them and driven by a bare load
	// generator, with the cores held 60% of the time, gave a throughput
	// over the share left 5% below the truth's capacity with 100 ms
	// periods, 10% with 20 ms and 12% with 5 ms.
	capacityPeriod = 100 * time.Millisecond
	// capacityKeepHigh is the share of the shared cores left free in the
	// first capacity run, as a fraction of the share the baseline kept
	// busy: below it, so that they bind although each request costs them
	// less once they queue (20-30% less on movie, 45% on social, where
	// the first run leaves them too much and the next ones less: each
	// capacityStep of the last). The run after the first that binds leaves
	// capacityStep of its share, so that the line through the two is
	// steep enough to read; at most capacityTries runs in all, with shares
	// within capacityMinKeep..capacityMaxKeep.
	capacityKeepHigh = 0.75
	capacityStep     = 0.6
	capacityTries    = 5
	capacityMinKeep  = 0.08
	capacityMaxKeep  = 0.8
	// capacityIdlePct: points whose slowdown runs left the shared cores
	// idle less than this share of the time (%) take the capacity run's
	// capacity; on movie, those at 1-2% idle were 9-11% low as measured,
	// as those at 0% were.
	capacityIdlePct = 5
	// capacityBelowBase: the run binds only where its throughput is
	// below the baseline's by more than this share.
	capacityBelowBase = 0.03
)

// capacityRun is one capacity run: its sample and the share of the time
// the shared cores were left free (0..1).
type capacityRun struct {
	s    *sample
	kept float64
	// bound says whether the shared cores bound the run: they idled less
	// than sharedBoundIdlePct of the time and the throughput was below
	// the baseline's.
	bound bool
}

// used is the share of the shared cores the run used (0 where they did
// not bind it): all of what the holds left them.
func (c capacityRun) used() float64 {
	if !c.bound {
		return 0
	}
	return c.kept
}

// wantsCapacity says whether a capacity run is worth making: shared
// placement, the cores method (so this process may hold the shared
// cores), the switch not off, a baseline that left the shared cores
// idle (otherwise it measured their capacity itself), and some point
// whose slowdown runs saturated them.
func (r *Runner) wantsCapacity(points []*measuredPoint) bool {
	if r.opts.Tuning.NoCapacityRun || r.method != pause.MethodCores || !r.d.Placement().SharedCores() ||
		len(r.d.Placement().HoldCores()) == 0 || len(r.base) == 0 || r.baseSaturated() {
		return false
	}
	for _, p := range points {
		if p.d > 0 && len(p.samples) > 0 && medianOf(p.samples, r.sharedIdlePct) < capacityIdlePct {
			return true
		}
	}
	return false
}

// measureCapacity makes capacity runs for the points measured so far
// where wantsCapacity says so: the first with capacityKeepHigh of what
// the baseline used of the shared cores left free, then, until one binds,
// each with capacityStep of the last one's share (up to capacityTries in
// all), and then one more with capacityStep of the share that bound, so
// that two runs draw the line. A failure to hold the cores is reported
// and leaves the points as measured.
func (r *Runner) measureCapacity(ctx context.Context, points []*measuredPoint) error {
	if !r.wantsCapacity(points) {
		return nil
	}
	used := 1 - medianOf(r.base, r.sharedIdlePct)/100
	keep := min(capacityMaxKeep, max(capacityMinKeep, capacityKeepHigh*used))
	bound := 0
	for try := 0; try < capacityTries && bound < 2 && keep >= capacityMinKeep; try++ {
		c, err := r.runCapacity(ctx, keep)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.progress("warning: no capacity run for the shared cores (%v): the points they bound stay as measured", err)
			return nil
		}
		r.capRuns = append(r.capRuns, c)
		verdict := "they bound it"
		if c.bound {
			bound++
		} else {
			verdict = fmt.Sprintf("they did not bind it (idle %.1f%%)", r.sharedIdlePct(c.s))
		}
		r.progress("capacity run: %.0f req/s with the shared cores held %.0f%% of every %v: %s", c.s.res.Throughput, 100*(1-c.kept), capacityPeriod, verdict)
		keep *= capacityStep
	}
	if v := r.sharedCapacity(); v > 0 {
		switch rho := r.capacityInflation(); {
		case rho > 1:
			r.progress("the shared cores' capacity: %.0f req/s; their services' CPU per request was %.2fx in the baselines what it was in these runs, so a point is raised to it by at most that factor over what it measured", v, rho)
		case rho > 0:
			r.progress("the shared cores' capacity: %.0f req/s; their services' CPU per request was %.2fx in the baselines what it was in these runs, no more: no point is raised to it", v, rho)
		default:
			r.progress("the shared cores' capacity: %.0f req/s", v)
		}
	}
	return nil
}

// runCapacity measures one window unslowed with the shared cores held
// for (1-keep) of every capacityPeriod, each hold capped at its length
// (and at --max-pause, which shortens the period with it).
func (r *Runner) runCapacity(ctx context.Context, keep float64) (capacityRun, error) {
	period := capacityPeriod
	hold := time.Duration((1 - keep) * float64(period))
	if mp := r.opts.MaxPause; mp > 0 && hold > mp {
		period = time.Duration(float64(period) * float64(mp) / float64(hold))
		hold = mp
	}
	h, err := pause.NewHolder(r.d.Placement().HoldCores(), hold)
	if err != nil {
		return capacityRun{}, err
	}
	start := time.Now()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			h.Pause(hold)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	s, err := r.run(ctx, nil, nil, r.opts.Warmup, false)
	close(stop)
	<-done
	h.Close()
	elapsed := time.Since(start)
	if err != nil {
		return capacityRun{}, fmt.Errorf("capacity run: %w", err)
	}
	st := h.Stats()
	c := capacityRun{s: s, kept: 1 - float64(st.HeldCPU)/float64(elapsed)}
	c.bound = r.sharedIdlePct(s) < sharedBoundIdlePct && s.res.Throughput < (1-capacityBelowBase)*r.baseRPS()
	return c, nil
}

// capacityInflation is the shared services' CPU per request in the
// baselines (the median run), with the queue at the target, over theirs
// in the capacity runs that bound the shared cores (the median run),
// with the queue at them: the work per request that the slowdown runs'
// queue at the target adds, which the capacity runs' estimate corrects.
// 0 where either is unknown.
func (r *Runner) capacityInflation() float64 {
	var caps []float64
	for _, c := range r.capRuns {
		if c.used() > 0 {
			if v := r.othersCPU(c.s); v > 0 {
				caps = append(caps, v)
			}
		}
	}
	base := medianOf(r.base, r.othersCPU)
	if len(caps) == 0 || base <= 0 {
		return 0
	}
	return base / report.Median(caps)
}

// sharedCapacity is the shared cores' capacity from the capacity runs
// that they bound, 0 where there are none. Each such run used all the
// share k of them that the holds left free at its throughput X; what the
// services on them use is a cost per request and a cost per second, k =
// a·X + F (the controllers, the load generator and the runtimes work
// whatever the load: at lower throughput each request carries more of
// it), so the line through the runs reaches the whole of them, k = 1, at
// (1-F)/a. With a single run, or runs that give no rising line, X/k, which
// takes the cost per second as a cost per request and so is low.
func (r *Runner) sharedCapacity() float64 {
	var xs, ks []float64
	for _, c := range r.capRuns {
		if k := c.used(); k > 0 {
			xs, ks = append(xs, c.s.res.Throughput), append(ks, k)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	if len(xs) >= 2 && slices.Max(ks)-slices.Min(ks) > 0.05 {
		if f, a := stat.LinearRegression(xs, ks, nil, false); a > 0 && f < 1 {
			return (1 - f) / a
		}
	}
	var best float64
	for i := range xs {
		best = max(best, xs[i]/ks[i])
	}
	return best
}
