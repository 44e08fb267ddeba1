package experiment

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/aclements/go-moremath/stats"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/model"
)

// truth measures the application with the target's work really reduced by
// d: the target is restarted with its ground-truth knob set.
func (r *Runner) truth(ctx context.Context, d time.Duration) (*sample, error) {
	if err := r.restartTarget(ctx, d); err != nil {
		return nil, err
	}
	return r.run(ctx, nil, nil, r.opts.Warmup, false)
}

// restartTarget restarts the target with its work reduced by the model's
// d: per call, or, where its calls are not counted, per request, which is
// d / c1 per call with c1 learned by calibrateTruth.
func (r *Runner) restartTarget(ctx context.Context, d time.Duration) error {
	return r.restartRaw(ctx, r.truthPerCall(d))
}

// truthPerCall is how much the ground truth of the model's d removes per
// call of the target.
func (r *Runner) truthPerCall(d time.Duration) time.Duration {
	if !r.counted && r.truthC1 > 0 {
		return time.Duration(float64(d) / r.truthC1)
	}
	return d
}

// checkTruthRange refuses, before any point is measured, a reduction whose
// ground truth would take the knob below zero where its unmodified value
// is above zero (work that is not there cannot be removed, and the truth
// would silently be a smaller reduction).
func (r *Runner) checkTruthRange(text string, d time.Duration) error {
	svc, _ := r.spec.Service(r.opts.Target)
	gt := svc.GroundTruth
	if gt == nil || gt.BaseUS <= 0 {
		return nil
	}
	if per := r.truthPerCall(d); per.Seconds()*1e6 > gt.BaseUS*(1+1e-9) {
		return fmt.Errorf("validate: reduction %s removes %v per call from %s, more than its ground-truth knob holds (%s=%g µs), so its truth cannot be measured: give reductions up to %g µs per call",
			text, per.Round(time.Microsecond), r.opts.Target, gt.Env, gt.BaseUS, gt.BaseUS)
	}
	return nil
}

// restartRaw restarts the target with its ground-truth knob lowered by d
// per call.
func (r *Runner) restartRaw(ctx context.Context, d time.Duration) error {
	svc, _ := r.spec.Service(r.opts.Target)
	gt := svc.GroundTruth
	if err := r.d.Restart(ctx, r.opts.Target, map[string]string{gt.Env: gt.Value(d.Seconds() * 1e6)}); err != nil {
		return fmt.Errorf("restart %s with its work reduced by %v: %w", r.opts.Target, d, err)
	}
	return nil
}

// chooseBatch picks the batch size: as large as possible (fewer signals) up
// to maxAutoBatch, within two limits.
//
//   - Queue: during a pause of B d / q1 the target, whose real cost per call
//     is still u1, works off about B d / u1 queued calls; keep that under a
//     quarter of the connections (its queue can be no deeper than that), or
//     the target starves and idles as if it had its original cost.
//   - Pause length: every round costs the paused services' cores signals
//     and wake-ups, and long pauses make every other service alternate
//     between stopped and flat out, which costs throughput the model does
//     not account for. Over the synthetic subset on the 2-core machine
//     (about 140 points), pauses of 1-3 ms gave a mean error of -1.4% to
//     -2.4%, pauses of 5-11 ms +3.7% to +4.7%; on the demo at an 80%
//     reduction pauses of 10, 40 and 100 ms measured 1.6%, 6% and 10%
//     below the ideal slowdown throughput. Pauses are kept to about
//     maxAutoPause, and chooseConnections keeps enough connections for it
//     (queueFloor).
//
// A cap above sharedBoundPause (a comparison of longer pauses for
// shared-bound points) raises the queue share and the largest batch in
// proportion, since with the usual ones no batch reaches it.
func chooseBatch(d, u1 time.Duration, q1 float64, connections int, pauseCap time.Duration) int {
	if pauseCap <= 0 {
		pauseCap = maxAutoPause
	}
	scale := max(1, float64(pauseCap)/float64(sharedBoundPause))
	most := int(maxAutoBatch * scale)
	if d <= 0 || u1 <= 0 {
		return most
	}
	b := int(queueShareBatch * scale * float64(connections) * float64(u1) / float64(d))
	b = min(b, int(float64(pauseCap)*q1/float64(d)))
	return max(1, min(most, b))
}

// pointRuns is one reduction's slowdown: how its runs pause, and the runs
// made so.
type pointRuns struct {
	sd      slowdown
	samples []*sample
	long    bool // lengthened: measured with sharedBoundPause since its first run
	// shortenedFrom is the batch the point was chosen with where its
	// target starved and it was measured again with shorter pauses
	// (repairStarved); 0 otherwise.
	shortenedFrom int
}

// maxStarvedRepairs is how many times a point whose target starved is
// measured again with half the batch (and so half the pause) before its
// runs are kept as they are (a lower bound).
const maxStarvedRepairs = 2

// starved says whether the target starved during s's pauses: it was busy
// during them less than starvedRatio of its busy share over the window.
// in and all are those shares.
func (r *Runner) starved(s *sample) (in, all float64, yes bool) {
	tgt := s.rounds[r.opts.Target]
	if tgt == nil || tgt.PauseWindowNS <= 0 || s.window <= 0 {
		return 0, 0, false
	}
	in = float64(tgt.PauseBusyNS) / float64(tgt.PauseWindowNS) / r.prof.q1
	all = r.targetBusy(s)
	return in, all, in > 0 && in < starvedRatio*all
}

// shorten halves a point's batch, and so its pauses, where its first run
// s starved the target and the batch was chosen (not --batch, not long
// pauses, which starve it by design): with shorter pauses the target's
// queue lasts through them. It reports whether it did; s must then be
// dropped and the point measured again.
func (r *Runner) shorten(pr *pointRuns, d time.Duration, s *sample) bool {
	if d <= 0 || pr.long || len(pr.samples) > 0 || r.opts.Batch != 0 || r.opts.Tuning.NoStarvedRepair || pr.sd.batch <= 1 {
		return false
	}
	if pr.shortenedFrom > 0 && pr.sd.batch*(1<<maxStarvedRepairs) <= pr.shortenedFrom {
		return false
	}
	if _, _, yes := r.starved(s); !yes {
		return false
	}
	if pr.shortenedFrom == 0 {
		pr.shortenedFrom = pr.sd.batch
	}
	b := pr.sd.batch / 2
	pr.sd = slowdown{batch: b, pause: model.PausePerRound(b, d, r.prof.q1)}
	return true
}

// lengthen switches a point to long pauses when its first run s was bound
// by the shared cores rather than by the target, under the cores method
// and a chosen batch; it reports whether it did, and then s must be
// dropped. Under short pauses the co-located services switch more per
// request than in the really faster system and such points come out low
// (hotel at d = 1 ms on 2 cores: -19% with 4 ms pauses, -5% with 64 ms);
// the target's queue, which the short pauses protect, does not matter
// there, since the target does not set the throughput.
func (r *Runner) lengthen(pr *pointRuns, d time.Duration, s *sample) bool {
	if pr.long || len(pr.samples) > 0 || r.opts.Batch != 0 || r.opts.Tuning.ShortPausesOnly ||
		r.method != pause.MethodCores || !r.sharedBound(r.sharedIdlePct(s), r.targetBusy(s)) {
		return false
	}
	long := sharedBoundPause
	if r.opts.Tuning.LongPauseCap > 0 {
		long = r.opts.Tuning.LongPauseCap
	}
	b := chooseBatch(d, r.prof.u1, r.prof.q1, r.opts.Connections, long)
	pause := model.PausePerRound(b, d, r.prof.q1)
	if b <= pr.sd.batch || pause > r.opts.MaxPause {
		return false
	}
	pr.sd, pr.long = slowdown{batch: b, pause: pause}, true
	return true
}

// slowEvents are what slowRun reports as it decides how a point pauses.
type slowEvents struct {
	// lengthened: the first run s was bound by the shared cores; it is
	// dropped and made again with long pauses.
	lengthened func(was slowdown, s *sample)
	// shortened: the target starved during s's pauses; s is dropped and
	// made again with half the batch.
	shortened func(was slowdown, s *sample)
}

// slowRun makes one slowdown run of the point pr for reduction d and keeps
// it.
//
// A first run that lengthens the point is reported to ev.lengthened,
// with the pauses it was made with, dropped, and made again with the
// long pauses. (Long pauses from the first run where the baseline before
// it was already bound by the shared cores saved that run, but on
// boutique its one such screening of cart ran at 70% of the baseline,
// against 80-88% for its lengthened runs, and ruled the bottleneck out:
// docs/notes/rank-screening.md.)
//
// A first run whose target starved is reported to ev.shortened, dropped,
// and made again with half the batch, up to maxStarvedRepairs times.
func (r *Runner) slowRun(ctx context.Context, pr *pointRuns, d time.Duration, neighbours map[string][]string, ev slowEvents) (*sample, error) {
	s, err := r.run(ctx, &pr.sd, neighbours, r.opts.Warmup, false)
	if err != nil {
		return nil, err
	}
	if short := pr.sd; r.lengthen(pr, d, s) {
		ev.lengthened(short, s)
		if s, err = r.run(ctx, &pr.sd, neighbours, r.opts.Warmup, false); err != nil {
			return nil, err
		}
	}
	for was := pr.sd; r.shorten(pr, d, s); was = pr.sd {
		ev.shortened(was, s)
		if s, err = r.run(ctx, &pr.sd, neighbours, r.opts.Warmup, false); err != nil {
			return nil, err
		}
	}
	pr.samples = append(pr.samples, s)
	return s, nil
}

func (r *Runner) baselineOf(samples []*sample) report.Baseline {
	var b report.Baseline
	var p50, p99 []float64
	for _, s := range samples {
		b.Runs = append(b.Runs, s.res.Throughput)
		b.Errors += s.res.Errors
		b.Non2xx += s.res.Non2xx
		p50 = append(p50, float64(s.res.Latency.P50)/1e6)
		p99 = append(p99, float64(s.res.Latency.P99)/1e6)
	}
	b.RPS = report.Median(b.Runs)
	b.SpreadPct = report.SpreadPct(b.Runs)
	b.P50MS, b.P99MS = report.Median(p50), report.Median(p99)
	b.OthersCPUUS = medianOf(samples, r.othersCPU)
	b.PausedWorkUS = medianOf(samples, r.pausedWork)
	b.ControllersCPUUS = medianOf(samples, r.controllersCPU)
	b.SharedIdlePct = medianOf(samples, r.sharedIdlePct)
	return b
}

// pausedWork is the busy time (µs) of the paused services' cores per
// completed request in the sample's window, summed over the cores, the
// pauses themselves (a holder's spinning) left out: the services', the
// load generator's and the controllers' work there, the kernel's included.
func (r *Runner) pausedWork(s *sample) float64 {
	n := s.responses()
	cores := len(r.d.Placement().PausedCPUs())
	if n == 0 || cores == 0 || s.window <= 0 {
		return 0
	}
	busy := s.window*time.Duration(cores) - s.idle - r.held(s)
	return busy.Seconds() * 1e6 / float64(n)
}

// held is the CPU the cores method's holding threads took in the sample's
// window, summed over the held cores: the pauses themselves. (The
// controllers report it per core.)
func (r *Runner) held(s *sample) time.Duration {
	for _, a := range s.after {
		if b := s.before[a.Service]; b != nil && a.PauseHeldCPUNS > 0 {
			return time.Duration(a.PauseHeldCPUNS-b.PauseHeldCPUNS) * time.Duration(len(r.d.Placement().HoldCores()))
		}
	}
	return 0
}

// othersCPU is the CPU time (µs) of all services but the target per
// completed request in the sample's window.
func (r *Runner) othersCPU(s *sample) float64 {
	n := s.responses()
	if n == 0 {
		return 0
	}
	var total time.Duration
	for name := range s.after {
		if name != r.opts.Target {
			_, cpu := s.delta(name)
			total += cpu
		}
	}
	return total.Seconds() * 1e6 / float64(n)
}

// sharedIdlePct is the share (%) of the window the paused services' cores
// were idle.
func (r *Runner) sharedIdlePct(s *sample) float64 {
	n := len(r.d.Placement().PausedCPUs())
	if s.window <= 0 || n == 0 {
		return 0
	}
	return 100 * float64(s.idle) / float64(s.window) / float64(n)
}

// targetBusy is the target's CPU use in the sample's window, as a share
// of its cores (0..1).
func (r *Runner) targetBusy(s *sample) float64 {
	if s.window <= 0 {
		return 0
	}
	_, cpu := s.delta(r.opts.Target)
	return float64(cpu) / float64(s.window) / r.prof.q1
}

// sharedBound says whether the shared cores, not the target, set a
// slowdown's throughput: under shared placement, they were idle less than
// sharedBoundIdlePct of the time while the target was busy less than
// sharedBoundTargetBusy of its cores.
func (r *Runner) sharedBound(idlePct, targetBusy float64) bool {
	return r.d.Placement().SharedCores() && targetBusy > 0 &&
		targetBusy < sharedBoundTargetBusy && idlePct < sharedBoundIdlePct
}

// controllersCPU is the CPU time (µs) all controllers used per completed
// request in the sample's window, less what they used while their own
// service was stopped: the part that competes with running services.
func (r *Runner) controllersCPU(s *sample) float64 {
	n := s.responses()
	if n == 0 {
		return 0
	}
	var total int64
	for name, a := range s.after {
		b := s.before[name]
		if b == nil {
			continue
		}
		total += (a.ControllerCPUNS - b.ControllerCPUNS) - (a.ControllerCPUStoppedNS - b.ControllerCPUStoppedNS)
	}
	// A holder's spinning is the pause itself.
	total -= int64(r.held(s))
	return float64(total) / 1e3 / float64(n)
}

// roundOverhead is the time per request (seconds) that a slowdown run
// spends on the paused services' cores for work the optimized system does
// not do, above the baseline's (median), spread over those cores (meant
// for shared cores; under dedicated placement only a rough stand-in for
// the busiest service's share, not yet measured):
//
//   - with OverheadCorrection, the controllers' CPU per request outside
//     stops: every round wakes every controller to receive it, to stop its
//     service at the lead and to continue it;
//   - unless NoGrowthCorrection, the paused services' own CPU per request:
//     stopped and continued every few milliseconds, they do more work per
//     request than when they run undisturbed (3-8% more at 80% on 10 of
//     the 12 subset configurations; docs/method.md);
//   - unless NoIdleCorrection, under shared placement with held cores,
//     where the paused services bound the run (the target busy on less
//     than targetBindsBusy of its cores), the shared cores' idle time per
//     request (idleCorrection).
//
// A run without pauses (a 0% point) has nothing to correct; taking noise
// off it would only bias it, since growth below zero is not added back.
func (r *Runner) roundOverhead(s *sample) float64 {
	return r.overheadFor(s, r.pool()) + r.idleCorrection(s)
}

// idleCorrection is the time per request (seconds, per shared core) that
// the shared cores idled outside the holds in s's window, where the
// paused services bound the run, under shared placement with held cores
// (the holds are busy time there, so what idles is outside them): a
// pause ends and the requests it held back are still on their way
// through the target, so the cores that set the run's pace wait for
// work. The optimized system has no pauses, and where those cores bind
// it they do not idle (0-1% in the ground truths of the demo's 80%
// point); where the target binds it instead, the target's demand caps
// the prediction (model.PredictCorrected's cap). 0 where it does not
// apply: other placements and methods (dedicated placement takes the
// busiest service's idle time as the interval's high end instead, see
// idleFree; keep placement's pool takes off the idling beyond the
// baseline's), a target busy on targetBindsBusy of its cores or more
// (the shared cores then idled waiting for it, as they would in the
// optimized system), a baseline that neither the target nor the shared
// cores bound (baseBound: something else sets the pace, and the idle
// time may be its), a run without pauses, and NoIdleCorrection.
func (r *Runner) idleCorrection(s *sample) float64 {
	if r.opts.Tuning.NoIdleCorrection || r.d == nil || r.method != pause.MethodCores ||
		s.slowdown == nil || s.slowdown.pause <= 0 || s.window <= 0 {
		return 0
	}
	pl := r.d.Placement()
	if pl.Keep || !pl.SharedCores() || r.targetBusy(s) >= targetBindsBusy || !r.baseBound() {
		return 0
	}
	n, k := s.responses(), len(pl.PausedCPUs())
	if n == 0 || k == 0 {
		return 0
	}
	return s.idle.Seconds() / float64(n) / float64(k)
}

// idleBaseTargetBusy is the target's CPU use, as a share of its cores,
// from which baseBound takes it to bind the baseline: a binding target
// in a closed loop still idles a little between requests (88-97% busy in
// the demo's baselines and target-bound points on the 2-core host).
const idleBaseTargetBusy = 0.8

// baseBound says whether the baseline (median over its runs) was bound
// by what the model knows: the target, busy on idleBaseTargetBusy of its
// cores or more, or the shared cores, idle under sharedBoundIdlePct.
func (r *Runner) baseBound() bool {
	return len(r.base) > 0 && (medianOf(r.base, r.targetBusy) >= idleBaseTargetBusy || medianOf(r.base, r.sharedIdlePct) < sharedBoundIdlePct)
}

// appliedOverhead is what roundOverhead took off s's time per request
// (seconds), in its prediction with what it inserted (in), after the
// optimized target's demand capped it (model.PredictCorrected): a run the
// target nearly bound may idle its shared cores half the time, and the cap
// takes off only what the target allows.
func (r *Runner) appliedOverhead(s *sample, in inserted) float64 {
	delay, _ := r.delayUsed(s, in)
	plain, err := r.predictWith(s, in, delay, true)
	if err != nil {
		return 0
	}
	corrected, err := r.predictWith(s, in, delay, false)
	if err != nil {
		return 0
	}
	return max(0, 1/plain-1/corrected)
}

// overheadFor is roundOverhead with the cores read as one pool (keep
// placement, see Runner.pool) or not.
func (r *Runner) overheadFor(s *sample, pool bool) float64 {
	if len(r.base) == 0 || s.slowdown == nil || s.slowdown.pause <= 0 {
		return 0
	}
	var extra float64
	// Under dedicated placement the controllers run on the load
	// generator's cores, not on the services'.
	if r.opts.Tuning.OverheadCorrection && r.d.Placement().SharedCores() {
		extra += max(0, r.controllersCPU(s)-medianOf(r.base, r.controllersCPU))
	}
	if !r.opts.Tuning.NoGrowthCorrection {
		growth := r.othersCPU
		if r.method == pause.MethodCores || pool {
			// The held cores stop everything on them: what grows is all
			// the work there, the load generator's and the controllers'
			// with the services'.
			// In the pool (keep placement) every process shares the
			// cores, and all the work that grows there is the pauses'.
			growth = r.pausedWork
		}
		extra += max(0, growth(s)-medianOf(r.base, growth))
	}
	if pool {
		// The pool's idle time beyond the baseline's: a target alone
		// during a freeze that cannot fill every core.
		extra += 1e6 * max(0, idlePerRequest(s)-medianOf(r.base, idlePerRequest))
	}
	return extra / 1e6 / float64(max(1, len(r.d.Placement().PausedCPUs())))
}

// targetDemandOver is the target's CPU time per completed request divided
// by cores (seconds).
func (r *Runner) targetDemandOver(s *sample, cores float64) float64 {
	n := s.responses()
	if n == 0 {
		return 0
	}
	_, cpu := s.delta(r.opts.Target)
	return cpu.Seconds() / float64(n) / cores
}

// predict is one slowdown run's prediction for reduction d, its rounds'
// own overhead removed, with the delay per request that delayUsed
// chooses.
func (r *Runner) predict(s *sample, d time.Duration) (float64, error) {
	in := r.insertedDelay(s, d)
	delay, _ := r.delayUsed(s, in)
	return r.predictWith(s, in, delay, false)
}

// predictions is the prediction of every slowdown run, 0 for a run whose
// prediction is infeasible.
func (r *Runner) predictions(samples []*sample, d time.Duration) []float64 {
	preds := make([]float64, len(samples))
	for i, s := range samples {
		preds[i], _ = r.predict(s, d)
	}
	return preds
}

// point summarises the runs of one reduction: its slowdown samples and, for
// validate, its ground-truth runs (nil otherwise).
func (r *Runner) point(d time.Duration, pr *pointRuns, truthRuns []*sample) report.Point {
	truth := throughputs(truthRuns)
	p := report.Point{
		ReductionPct: model.PercentOf(d.Seconds(), r.prof.u1.Seconds()),
		ReductionUS:  d.Seconds() * 1e6,
		Batch:        pr.sd.batch,
		Diagnostics: &report.PointDiagnostics{
			PausePerRoundUS: float64(pr.sd.pause) / 1e3,
			LongPauses:      pr.long,
		},
	}
	if pr.shortenedFrom > pr.sd.batch {
		p.Diagnostics.ShortenedFromBatch = pr.shortenedFrom
	}
	flags := map[string]bool{}
	// With signals every paused service's controller counts its own
	// pauses; with a group method the target's controller pauses them all.
	group := r.method == pause.MethodCgroup || r.method == pause.MethodCores
	p.PredictedRuns = r.predictions(pr.samples, d)
	ins := make([]inserted, len(pr.samples))
	for i, s := range pr.samples {
		ins[i] = r.insertedDelay(s, d)
	}
	r.delaySummary(&p, pr.samples, ins, d)
	flags[report.FlagInfeasible] = slices.Contains(p.PredictedRuns, 0)
	t := r.tallyRuns(&p, pr.samples, group, flags)
	r.summarizeRuns(&p, pr.samples, ins, t, group, flags[report.FlagInfeasible])
	bound := d > 0 && r.sharedBound(p.Diagnostics.SharedIdlePct, p.Diagnostics.TargetBusyOverall)
	flagPauses(&p, t, d, pr.long && bound, flags)
	p.StdErrPct = stdErrPct(p.PredictedRuns, truth)
	flags[report.FlagNoisy] = p.StdErrPct > noisyStdErrPct
	r.mechanismCost(&p, d, flags)
	if p.Diagnostics.HeldCPUPct > 0 && p.Diagnostics.HeldCPUPct < holdLeakPct {
		flags[report.FlagHoldLeak] = true
	}
	// Where the shared cores, not the target, bound the slowdown runs,
	// the prediction is their capacity as measured under pauses, which
	// the really faster system exceeds: the co-located services switch
	// less per request there (docs/notes/pause-methods.md). Long pauses
	// narrow the gap without closing it.
	flags[report.FlagSharedBound] = bound
	r.interval(&p, pr.samples, ins, d, flags)
	if truth != nil {
		r.addTruth(&p, truth, truthRuns)
	}
	p.Flags = setFlags(flags)
	return p
}

// roundTally adds up what the controllers counted in one point's
// slowdown runs.
type roundTally struct {
	// busyIn and busyAll are the target's busy share during pauses and
	// over the window, delays the slowest round delay (µs), lateMin and
	// lateMax the earliest and latest mean stop lateness (µs) of the
	// paused services, one of each per run.
	busyIn, busyAll, delays, lateMin, lateMax []float64
	requested, actual, heldCPU                int64 // pause time, ns, over the runs
	received, late                            uint64
}

// tallyRuns adds up the point's slowdown runs: their throughputs, errors
// and rounds in p, what the controllers counted in the tally, and the
// flags for errors and unreachable neighbours.
func (r *Runner) tallyRuns(p *report.Point, samples []*sample, group bool, flags map[string]bool) *roundTally {
	t := &roundTally{}
	for _, s := range samples {
		p.SlowdownRuns = append(p.SlowdownRuns, s.res.Throughput)
		p.Errors += s.res.Errors
		p.Non2xx += s.res.Non2xx
		if total := s.res.Completed + s.res.Errors + s.res.Non2xx; total > 0 && float64(s.res.Errors+s.res.Non2xx) > errorShare*float64(total) {
			flags[report.FlagErrors] = true
		}
		tgt := s.rounds[r.opts.Target]
		if tgt == nil {
			continue
		}
		p.Diagnostics.Rounds += tgt.RoundsStarted
		if tgt.PauseWindowNS > 0 {
			t.busyIn = append(t.busyIn, float64(tgt.PauseBusyNS)/float64(tgt.PauseWindowNS)/r.prof.q1)
		}
		if s.window > 0 {
			t.busyAll = append(t.busyAll, r.targetBusy(s))
		}
		if group {
			t.requested += tgt.PauseRequestedNS
			t.actual += tgt.PauseActualNS
			t.heldCPU += tgt.PauseHeldCPUNS
			continue
		}
		r.tallyPaused(t, s, tgt, flags)
	}
	return t
}

// tallyPaused adds up what the paused services' controllers counted in
// one run by signals.
func (r *Runner) tallyPaused(t *roundTally, s *sample, tgt *wire.Stats, flags map[string]bool) {
	var delay, lmax int64
	lmin := int64(math.MaxInt64)
	for name, st := range s.rounds {
		if name == r.opts.Target {
			continue
		}
		delay = max(delay, st.DelayMeanNS)
		if st.StopsDue > 0 {
			lmin, lmax = min(lmin, st.StopLateMeanNS), max(lmax, st.StopLateMeanNS)
		}
		t.requested += st.PauseRequestedNS
		t.actual += st.PauseActualNS
		t.received += st.RoundsReceived
		t.late += st.RoundsLate
		if st.ForwardErrors > 0 || (!r.opts.Tuning.Uncoordinated && st.RoundsReceived < tgt.RoundsStarted) {
			flags[report.FlagNeighbourUnreachable] = true
		}
	}
	t.delays = append(t.delays, float64(delay)/1e3)
	if lmin <= lmax {
		t.lateMin, t.lateMax = append(t.lateMin, float64(lmin)/1e3), append(t.lateMax, float64(lmax)/1e3)
	}
	if tgt.ForwardErrors > 0 {
		flags[report.FlagNeighbourUnreachable] = true
	}
}

// summarizeRuns sets p's throughput, prediction and pauses, and the
// medians of what the runs cost, from the runs, what each inserted (ins)
// and their tally.
func (r *Runner) summarizeRuns(p *report.Point, samples []*sample, ins []inserted, t *roundTally, group, infeasible bool) {
	p.SlowdownRPS = report.Median(p.SlowdownRuns)
	if infeasible {
		// A prediction from some runs only would be biased upwards.
		p.PredictedRPS = 0
	} else {
		p.PredictedRPS = report.Median(p.PredictedRuns)
		p.SpreadPct = report.SpreadPct(p.PredictedRuns)
	}
	nOthers := float64(max(1, len(r.d.Services())-1))
	if group {
		nOthers = 1
		if t.actual > 0 && r.method == pause.MethodCores {
			p.Diagnostics.HeldCPUPct = 100 * float64(t.heldCPU) / float64(t.actual)
		}
	}
	p.Diagnostics.PauseRequestedMS = float64(t.requested) / 1e6 / nOthers / float64(len(samples))
	p.Diagnostics.PauseActualMS = float64(t.actual) / 1e6 / nOthers / float64(len(samples))
	p.Diagnostics.OthersCPUUS = medianOf(samples, r.othersCPU)
	p.Diagnostics.PausedWorkUS = medianOf(samples, r.pausedWork)
	p.Diagnostics.ControllersCPUUS = medianOf(samples, r.controllersCPU)
	applied := make([]float64, len(samples))
	for i, s := range samples {
		applied[i] = r.appliedOverhead(s, ins[i])
	}
	p.OverheadUS = 1e6 * report.Median(applied)
	p.Diagnostics.SharedIdlePct = medianOf(samples, r.sharedIdlePct)
	p.Diagnostics.RoundDelayUS = report.Median(t.delays)
	p.Diagnostics.StopLateMinUS, p.Diagnostics.StopLateMaxUS = report.Median(t.lateMin), report.Median(t.lateMax)
	if t.received > 0 {
		p.Diagnostics.LateRoundsPct = 100 * float64(t.late) / float64(t.received)
	}
	p.Diagnostics.TargetBusyInPause = report.Median(t.busyIn)
	p.Diagnostics.TargetBusyOverall = report.Median(t.busyAll)
}

// flagPauses flags a starved target (unless starved by design: long
// pauses where the shared cores bound the runs), pauses shorter than asked
// and stops that start late.
func flagPauses(p *report.Point, t *roundTally, d time.Duration, longAndBound bool, flags map[string]bool) {
	// Long pauses starve the target by design; that matters only where it,
	// not the shared cores, sets the throughput.
	if d > 0 && p.Diagnostics.TargetBusyInPause > 0 && p.Diagnostics.TargetBusyInPause < starvedRatio*p.Diagnostics.TargetBusyOverall && !longAndBound {
		flags[report.FlagTargetStarved] = true
	}
	if t.requested > 0 && float64(t.actual) < pauseShortfall*float64(t.requested) {
		flags[report.FlagPauseShortfall] = true
	}
	// Stops that start more than half a pause late leave the services
	// that share cores running while their peers are stopped: the
	// controllers are short of CPU (seen on tree43 on 2 cores, with
	// predictions well low: docs/results.md, "stops-late").
	if p.Diagnostics.PausePerRoundUS > 0 && p.Diagnostics.StopLateMaxUS > stopsLateShare*p.Diagnostics.PausePerRoundUS {
		flags[report.FlagStopsLate] = true
	}
}

// mechanismCost sets how far pausing's own cost moves p's prediction,
// and flags it where that is beyond the point's noise.
func (r *Runner) mechanismCost(p *report.Point, d time.Duration, flags map[string]bool) {
	// What pausing cost the paused cores beyond the pauses moves the
	// prediction by about that cost times the predicted throughput: the
	// part the growth correction takes off, which is an estimate, and the
	// controllers' work, which nothing takes off.
	if d > 0 && p.PredictedRPS > 0 {
		cost := p.OverheadUS
		if r.method != pause.MethodCores && r.d.Placement().SharedCores() && !r.opts.Tuning.OverheadCorrection {
			cost += max(0, p.Diagnostics.ControllersCPUUS-medianOf(r.base, r.controllersCPU)) / float64(max(1, len(r.d.Placement().PausedCPUs())))
		}
		p.Diagnostics.MechanismPct = 100 * cost / 1e6 * p.PredictedRPS
		flags[report.FlagMechanismCost] = p.Diagnostics.MechanismPct > max(mechanismNoise*p.StdErrPct, mechanismFloorPct)
	}
}

// addTruth sets p's ground truth from its runs (throughputs truth), and
// the prediction's error.
func (r *Runner) addTruth(p *report.Point, truth []float64, truthRuns []*sample) {
	t := report.Median(truth)
	o, idle := medianOf(truthRuns, r.othersCPU), medianOf(truthRuns, r.sharedIdlePct)
	p.TrueRPS, p.TrueRuns, p.Diagnostics.TrueOthersCPUUS, p.Diagnostics.TrueSharedIdlePct = &t, truth, &o, &idle
	if p.PredictedRPS > 0 && t > 0 {
		e := (p.PredictedRPS - t) / t * 100
		p.ErrorPct = &e
	}
	if p.RawPredictedRPS > 0 && t > 0 {
		e := (p.RawPredictedRPS - t) / t * 100
		p.RawErrorPct = &e
	}
	if p.Diagnostics.PredictedNominalRPS > 0 && t > 0 {
		e := (p.Diagnostics.PredictedNominalRPS - t) / t * 100
		p.Diagnostics.ErrorNominalPct = &e
	}
}

// setFlags lists the flags set, sorted; empty, not nil, for none.
func setFlags(flags map[string]bool) []string {
	out := []string{}
	for f, set := range flags {
		if set {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// throughputs lists the samples' throughputs (nil for none).
func throughputs(samples []*sample) []float64 {
	var out []float64
	for _, s := range samples {
		out = append(out, s.res.Throughput)
	}
	return out
}

// medianOf is the median of f over the samples (0 for none).
func medianOf(samples []*sample, f func(*sample) float64) float64 {
	xs := make([]float64, 0, len(samples))
	for _, s := range samples {
		xs = append(xs, f(s))
	}
	return report.Median(xs)
}

// stdErrPct is the relative standard error (%) of a point's estimate: of
// the mean prediction, combined with that of the mean ground truth when
// there is one, since the error compares the two. Infeasible runs (0) are
// left out; fewer than two runs give 0.
func stdErrPct(preds, truth []float64) float64 {
	feasible := slices.DeleteFunc(slices.Clone(preds), func(p float64) bool { return p <= 0 })
	sp, st := relStdErr(feasible), relStdErr(truth)
	return 100 * math.Sqrt(sp*sp+st*st)
}

// relStdErr is the standard error of the mean of xs relative to the mean.
func relStdErr(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := stats.Mean(xs)
	if m == 0 {
		return 0
	}
	return stats.StdDev(xs) / math.Sqrt(float64(len(xs))) / math.Abs(m)
}
