package experiment

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/aclements/go-moremath/stats"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/model"
)

// targetBindsBusy is the target's CPU use, as a share of its cores, from
// which a slowdown run is taken to be bound by the target itself rather
// than by the paused services (see delayUsed).
const targetBindsBusy = sharedBoundTargetBusy

// inserted is what a slowdown run's pauses really inserted, per request
// completed in its measurement window, against what the model asks for.
type inserted struct {
	nominal float64 // d c1 / q1, seconds per request
	// measured is the pause, seconds per request, that the paused
	// resource which bound the run received: the group's (cgroup and
	// cores methods pause every other service at once, counted by the
	// target's controller), or with signals the busiest paused service's
	// under dedicated placement and the median service's on shared cores.
	measured float64
	by       string             // what measured was read from, in words
	services map[string]float64 // signals: each paused service's, seconds per request
	counted  bool               // the controllers counted the window's pauses
	// across is, where the paused pods span nodes, how much longer per
	// request the pods of the node frozen longest (acrossNode) were
	// frozen than the target's node's: part of measured.
	across     float64
	acrossNode string
}

// insertedDelay reads from s's window edges the pause the services really
// received per completed request, for reduction d.
func (r *Runner) insertedDelay(s *sample, d time.Duration) inserted {
	in := inserted{nominal: d.Seconds() * r.prof.c1 / r.prof.q1}
	n := s.responses()
	if n == 0 || s.slowdown == nil || s.before == nil || s.after == nil {
		return in
	}
	perReq := func(name string) (float64, bool) {
		a, b := s.after[name], s.before[name]
		if a == nil || b == nil {
			return 0, false
		}
		return inWindow(effectivePause(r.method, b, a), b, a, s.window).Seconds() / float64(n), true
	}
	switch r.method {
	case pause.MethodCores, pause.MethodCgroup:
		// The target's controller pauses every other service at once.
		in.measured, in.counted = perReq(r.opts.Target)
		in.by = "the held cores"
		if r.method == pause.MethodCgroup {
			in.by = "the frozen services"
		}
		if in.counted {
			if node, v := longestFrozen(s.before[r.opts.Target], s.after[r.opts.Target]); v > 0 {
				in.across = inWindow(v, s.before[r.opts.Target], s.after[r.opts.Target], s.window).Seconds() / float64(n)
				in.acrossNode = node
				in.measured += in.across
				in.by = fmt.Sprintf("the frozen services, those of node %s frozen longest", node)
			}
		}
		return in
	}
	in.services = map[string]float64{}
	for name := range s.after {
		if name == r.opts.Target {
			continue
		}
		if v, ok := perReq(name); ok {
			in.services[name] = v
		}
	}
	if len(in.services) == 0 {
		return in
	}
	in.counted = true
	if busiest := r.busiest(s, in.services, n); busiest != "" && !r.d.Placement().SharedCores() {
		in.measured, in.by = in.services[busiest], busiest
		return in
	}
	in.measured = report.Median(slices.Collect(maps.Values(in.services)))
	in.by = "the shared cores (median of the paused services)"
	return in
}

// longestFrozen is, where the target's agent froze pods on other nodes
// too, the node whose pods were frozen longest between the snapshots b
// and a, and how much longer in all than the target's node's (0: none
// longer). A run whose requests pass through pods of every node is held
// up by the longest freeze of each round, not by the target node's: on
// the two-node namespace cluster the other node's freezes lasted about
// 1 ms longer per round at the median (its thaw comes over the network),
// a third of a 3.6 ms round's pause.
func longestFrozen(b, a *wire.Stats) (string, time.Duration) {
	if a == nil || b == nil {
		return "", 0
	}
	before := map[string]int64{}
	for _, k := range b.NodeSkews {
		before[k.Node] = k.LongerSumNS
	}
	var node string
	var most time.Duration
	for _, k := range a.NodeSkews {
		if v := time.Duration(k.LongerSumNS - before[k.Node]); v > most {
			node, most = k.Node, v
		}
	}
	return node, most
}

// busiest is, of the paused services (each with its pause per request),
// the one nearest to saturation while it ran in s's window, n requests:
// the one that bound the run under dedicated placement; "" for none.
func (r *Runner) busiest(s *sample, paused map[string]float64, n uint64) string {
	var busiest string
	var most float64
	for _, name := range slices.Sorted(maps.Keys(paused)) {
		_, cpu := s.delta(name)
		if run := s.window - time.Duration(paused[name]*float64(n)*1e9); run > 0 {
			if busy := float64(cpu) / float64(run); busiest == "" || busy > most {
				busiest, most = name, busy
			}
		}
	}
	return busiest
}

// effectivePause is the pause a controller's counters say its services
// lost between the snapshots b and a: with held cores, the time the
// holding threads really had the cores (a hold the kernel let something
// else into took less from the services than it lasted); otherwise the
// stops' length less what they were extended by for the CPU the
// never-paused and out-of-step processes used on the services' cores
// meanwhile (that work is not taken from the services: the extension
// gives back what it took).
func effectivePause(method pause.Method, b, a *wire.Stats) time.Duration {
	actual := time.Duration(a.PauseActualNS - b.PauseActualNS)
	if method == pause.MethodCores {
		if held := time.Duration(a.PauseHeldCPUNS - b.PauseHeldCPUNS); held > 0 {
			return min(actual, held)
		}
		return actual
	}
	return max(0, actual-time.Duration(a.PauseExtendedNS-b.PauseExtendedNS))
}

// inWindow is pause, read between the snapshots b and a, scaled to the
// measurement window: the snapshots are taken just outside the window's
// edges (before it opens, after it closes), and the process that takes
// them shares cores with the paused services, so a hold or a stop in
// progress at an edge can put tens of milliseconds between a snapshot and
// its edge, a few percent of a window of seconds, which the model
// amplifies by t_opt/t_vs. The pause's rate between the snapshots times
// the window is what the window received. Snapshots without their times,
// or whose span is shorter than the window or more than twice it (a clock
// that stepped), leave pause as read.
func inWindow(pause time.Duration, b, a *wire.Stats, window time.Duration) time.Duration {
	span := time.Duration(a.TakenUnixNS - b.TakenUnixNS)
	if b.TakenUnixNS == 0 || a.TakenUnixNS == 0 || window <= 0 || span < window || span > 2*window {
		return pause
	}
	return time.Duration(float64(pause) * float64(window) / float64(span))
}

// delayUsed is the delay per request (seconds) that s's prediction takes
// off, and which one it is (report.DelayNominal or report.DelayMeasured).
//
// Where the paused services bound the run, its throughput is theirs with
// the pauses they really received, so that is what comes off: rounds that
// fired more or less often than planned (rounds following the target's
// CPU time), and pauses longer or shorter than asked, then cancel out.
// Where the target bound it (busy on targetBindsBusy of its cores or
// more), the throughput is the target's own, which the pauses did not
// slow, and the optimized target is faster by the nominal d c1/q1
// whatever the others received.
func (r *Runner) delayUsed(s *sample, in inserted) (float64, string) {
	switch {
	case in.nominal <= 0:
		return 0, report.DelayNominal
	case r.pool():
		// The cut d·c1 frees that much of the pool's cores, whoever
		// runs on them: spread over all of them.
		return in.nominal * r.prof.q1 / r.poolCores(), report.DelayPool
	case r.opts.Tuning.NominalDelay || !in.counted || in.measured <= 0:
		return in.nominal, report.DelayNominal
	case r.targetBusy(s) >= targetBindsBusy:
		return in.nominal, report.DelayNominal
	}
	return in.measured, report.DelayMeasured
}

// poolIdlePct is the most the baseline's cores may idle (% of the window,
// median over its runs) for keep placement to read them as one saturated
// pool (see pool).
const poolIdlePct = 5

// pool says whether the prediction reads the machine's cores as one
// pool: under keep placement, where every process shares every core,
// with the cores saturated in the baseline (idle under poolIdlePct). A
// freeze of the other services then slows the application only by what
// it costs the pool: the cores' idle time beyond the baseline's, and the
// extra work of stopping and continuing (every process's, the target's
// included). With those taken off (roundOverhead), what the cut d·c1
// frees is that much of the pool, whichever process runs on it: the
// delay taken off is d·c1 spread over the pool's cores (delayUsed).
func (r *Runner) pool() bool {
	return r.d != nil && r.d.Placement().Keep && len(r.base) > 0 && medianOf(r.base, r.sharedIdlePct) < poolIdlePct
}

// poolCores is how many cores the pool has under keep placement.
func (r *Runner) poolCores() float64 {
	return float64(max(1, len(r.d.Placement().PausedCPUs())))
}

// predictWith is s's prediction for reduction d with delay seconds per
// request taken off its throughput, its rounds' own overhead removed
// first unless raw.
func (r *Runner) predictWith(s *sample, in inserted, delay float64, raw bool) (float64, error) {
	return r.predictFrom(s, s.res.Throughput, in, delay, raw)
}

// classic is s's prediction under keep placement had its cores not been
// read as one pool: the delay the pauses inserted (the nominal one where
// nothing was counted), the paused services' own growth taken off, the
// optimized target's demand over its q1 cores as the cap.
func (r *Runner) classic(s *sample, in inserted) (float64, error) {
	delay := in.nominal
	if in.counted && in.measured > 0 {
		delay = in.measured
	}
	return model.PredictCorrected(s.res.Throughput, r.overheadFor(s, false), delay, r.optimizedDemand(s, in, false))
}

// predictFrom is predictWith with tvs in place of s's throughput.
func (r *Runner) predictFrom(s *sample, tvs float64, in inserted, delay float64, raw bool) (float64, error) {
	if raw {
		return model.PredictDelay(tvs, delay)
	}
	return model.PredictCorrected(tvs, r.roundOverhead(s), delay, r.optimizedDemand(s, in, r.pool()))
}

// optimizedDemand is the optimized target's CPU time per completed
// request over its cores (seconds): its CPU time per request in s less
// the cut d·c1 (in.nominal is d·c1/q1), over its q1 cores, or over every
// core where they are read as one pool (keep placement, Runner.pool). No
// prediction that the corrections raise may pass its inverse
// (model.PredictCorrected).
func (r *Runner) optimizedDemand(s *sample, in inserted, pool bool) float64 {
	cores := r.prof.q1
	if pool {
		cores = r.poolCores()
	}
	return r.targetDemandOver(s, cores) - in.nominal*r.prof.q1/cores
}

// delaySummary sets p's nominal and measured delays, the delay its
// predictions used, and its prediction with the nominal delay beside it,
// from the point's slowdown runs and what each inserted (ins).
func (r *Runner) delaySummary(p *report.Point, samples []*sample, ins []inserted, d time.Duration) {
	if d <= 0 || len(samples) == 0 {
		return
	}
	var measured, nominalPreds, across, localPreds []float64
	acrossNode := ""
	perSvc := map[string][]float64{}
	used := map[string]int{}
	by := ""
	for i, s := range samples {
		in := ins[i]
		p.DelayNominalUS = in.nominal * 1e6
		if in.counted {
			measured = append(measured, in.measured*1e6)
			by = in.by
		}
		for name, v := range in.services {
			perSvc[name] = append(perSvc[name], v*1e6)
		}
		_, which := r.delayUsed(s, in)
		used[which]++
		pred, _ := r.predictWith(s, in, in.nominal, false)
		nominalPreds = append(nominalPreds, pred)
		across = append(across, in.across*1e6)
		if in.across > 0 {
			acrossNode = in.acrossNode
		}
		local := in
		local.measured -= in.across
		delay, _ := r.delayUsed(s, local)
		pred, _ = r.predictWith(s, local, delay, false)
		localPreds = append(localPreds, pred)
	}
	if acrossNode != "" {
		p.Diagnostics.DelayAcrossNodesUS = report.Median(across)
		p.Diagnostics.AcrossNode = acrossNode
		if !slices.Contains(localPreds, 0) {
			p.Diagnostics.PredictedNodeLocalRPS = report.Median(localPreds)
		}
	}
	if len(measured) > 0 {
		p.DelayMeasuredUS = report.Median(measured)
		p.Diagnostics.DelayMeasuredBy = by
	}
	if len(perSvc) > 0 {
		p.Diagnostics.PausePerRequestUS = map[string]float64{}
		for name, vs := range perSvc {
			p.Diagnostics.PausePerRequestUS[name] = report.Median(vs)
		}
	}
	keys := slices.Sorted(maps.Keys(used))
	p.DelayUsed = keys[0]
	if len(keys) > 1 {
		p.DelayUsed = report.DelayMixed
	}
	if !slices.Contains(nominalPreds, 0) {
		p.Diagnostics.PredictedNominalRPS = report.Median(nominalPreds)
	}
}

// intervalLevel is the confidence of every point's interval.
const intervalLevel = 0.90

// assumedNoisePct is the run-to-run noise (standard deviation, % of a
// run's throughput) assumed before any run is measured, the prior of
// pooledNoise: the spread between identical runs on the 2-core
// development machine was about 5% on a calm spell (docs/notes/noise.md).
const assumedNoisePct = 5

// interval sets p's 90% interval and what kind of estimate its
// prediction is, from its slowdown runs: the repetitions' noise (in their
// predictions, where the model's t_opt/t_vs amplification already is; for
// a single run the baseline's run-to-run noise amplified by it), widened
// to take in what the corrections might have got wrong, the prediction
// with the other delay (nominal or measured) and without the overhead
// correction, and where the paused services bound the runs, the
// prediction without the idle correction (shared placement, held cores:
// idleCorrection) or else with what their cores lost to idling outside
// the pauses taken off (idleFree).
func (r *Runner) interval(p *report.Point, samples []*sample, ins []inserted, d time.Duration, flags map[string]bool) {
	if p.Infeasible() {
		p.Estimate = report.EstimateUnknown
		return
	}
	pred := p.PredictedRPS
	half := r.noiseHalfWidth(p, samples)
	lo, hi := pred-half, pred+half
	if d > 0 {
		var other, raw, busy []float64
		for i, s := range samples {
			in := ins[i]
			used, which := r.delayUsed(s, in)
			if which == report.DelayPool {
				// The prediction as if the cores were not one pool:
				// the delay the pauses inserted, the paused services'
				// growth alone taken off.
				if v, err := r.classic(s, in); err == nil {
					other = append(other, v)
				}
			}
			switch {
			case r.idleCorrection(s) > 0:
				// The prediction without the idle time taken off: what
				// it would be were the idling the optimized system's too.
				if v, err := model.PredictCorrected(s.res.Throughput, r.overheadFor(s, r.pool()), used, r.optimizedDemand(s, in, r.pool())); err == nil {
					busy = append(busy, v)
				}
			case which == report.DelayMeasured:
				if v, err := r.predictFrom(s, r.idleFree(s, in), in, used, false); err == nil {
					busy = append(busy, v)
				}
			}
			alt := in.measured
			if which == report.DelayMeasured {
				alt = in.nominal
			}
			if in.counted && alt > 0 && which != report.DelayPool {
				if v, err := r.predictWith(s, in, alt, false); err == nil {
					other = append(other, v)
				}
			}
			if v, err := r.predictWith(s, in, used, true); err == nil {
				raw = append(raw, v)
			}
		}
		for _, xs := range [][]float64{other, raw, busy} {
			if len(xs) > 0 {
				v := report.Median(xs)
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if d > 0 && r.sharedSaturated(p) {
		// The shared cores were busy all the time outside the pauses:
		// what they allowed under pauses is their capacity there, which
		// the really faster system exceeds (its co-located services do
		// less work per request, 10-20% less on movie and social), by
		// how much no slowdown run measures. The optimized target's own
		// demand is then the upper end: the throughput it alone allows,
		// with the point's relative noise. Where the baseline, too, kept
		// the shared cores busy all the time, it measured their capacity
		// unpaused, which the target's speed does not change: that is
		// the upper end where it is lower.
		if c := r.ceiling(samples, ins); c > 0 && pred > 0 {
			hi = max(hi, c*(1+half/pred))
		}
	}
	if d > 0 && r.nearSaturated(p) && pred > 0 && !flags[report.FlagTargetStarved] {
		// Where a capacity run measured the shared cores' capacity with
		// the queue at them, unslowed (capacity.go), that capacity, or
		// the ceiling above where lower, is the estimate, the measured
		// prediction the interval's low end: the slowdown runs had the
		// queue at the target between the pauses, and the shared cores
		// did more work per request than the faster system's do. (A
		// starved target's point is a lower bound, below: it stays what
		// was measured.)
		if capRPS := r.sharedCapacity(); capRPS > 0 {
			est := capRPS
			if c := r.ceiling(samples, ins); c > 0 {
				est = min(est, c)
			}
			// Never more than the cause allows: the shared services'
			// CPU per request with the queue at the target over theirs
			// with the queue at them. Where the capacity runs cost them
			// as much per request as the baseline did, the line's reach
			// to the whole of the cores is the extrapolation alone (on
			// boutique it overshot the truth by half).
			if rho := r.capacityInflation(); rho > 0 {
				est = min(est, pred*max(1, rho))
				p.Diagnostics.CapacityInflation = rho
			}
			p.Diagnostics.CapacityRPS = capRPS
			if est > pred {
				p.RawPredictedRPS, p.PredictedRPS = pred, est
				hi = max(hi, est*(1+half/pred))
			}
		}
	}
	p.IntervalLowRPS, p.IntervalHighRPS = max(0, lo), hi
	p.Estimate = report.EstimateValue
	if flags[report.FlagTargetStarved] {
		// A starved target idles as if it had its original cost: the
		// optimized system does at least this, and possibly much more.
		p.Estimate, p.IntervalHighRPS = report.EstimateLowerBound, 0
	}
}

// sharedSaturated says whether p's slowdown runs left the shared cores
// (shared placement) idle less than sharedBoundIdlePct of the time, the
// target busy or not: their capacity measured under pauses may then have
// set the prediction.
func (r *Runner) sharedSaturated(p *report.Point) bool {
	return r.d.Placement().SharedCores() && p.Diagnostics != nil && p.Diagnostics.SharedIdlePct < sharedBoundIdlePct
}

// nearSaturated says whether p's slowdown runs left the shared cores
// (shared placement) idle less than capacityIdlePct of the time: enough
// for their higher work per request under pauses to have held the
// prediction down.
func (r *Runner) nearSaturated(p *report.Point) bool {
	return r.d.Placement().SharedCores() && p.Diagnostics != nil && p.Diagnostics.SharedIdlePct < capacityIdlePct
}

// ceiling is the most a point can reach where the shared cores bind its
// slowdown runs (samples, with what each inserted, ins): the throughput
// the optimized target alone allows (targetCeiling), or, where the
// baseline kept the shared cores busy all the time too and so measured
// their capacity unpaused, the baseline's throughput where lower; 0
// where neither can be read.
func (r *Runner) ceiling(samples []*sample, ins []inserted) float64 {
	c := r.targetCeiling(samples, ins)
	if b := r.baseRPS(); r.baseSaturated() && b > 0 && (c <= 0 || b < c) {
		c = b
	}
	return c
}

// baseRPS is the baselines' median throughput (0 before any).
func (r *Runner) baseRPS() float64 {
	return medianOf(r.base, func(s *sample) float64 { return s.res.Throughput })
}

// baseSaturated says whether the baseline (median over its runs) left
// the shared cores idle less than sharedBoundIdlePct of the time.
func (r *Runner) baseSaturated() bool {
	return len(r.base) > 0 && r.d.Placement().SharedCores() && medianOf(r.base, r.sharedIdlePct) < sharedBoundIdlePct
}

// targetCeiling is the throughput the optimized target alone allows (the
// inverse of optimizedDemand), the median over the point's slowdown runs
// (samples, with what each inserted, ins); 0 where none can be read. The
// target's CPU time per request is the lower of the run's and the
// baseline's: under pauses it, too, does more work per request than
// unpaused (it waits on held services, and wakes for their answers).
func (r *Runner) targetCeiling(samples []*sample, ins []inserted) float64 {
	base := medianOf(r.base, func(s *sample) float64 { return r.targetDemandOver(s, r.prof.q1) })
	var cs []float64
	for i, s := range samples {
		dem := r.targetDemandOver(s, r.prof.q1)
		if base > 0 {
			dem = min(dem, base)
		}
		if dem -= ins[i].nominal; dem > 0 {
			cs = append(cs, 1/dem)
		}
	}
	if len(cs) == 0 {
		return 0
	}
	return report.Median(cs)
}

// idleFree is the throughput s would have measured had the paused
// resource that bound it never idled outside the pauses: where the paused
// services bound the run (they set its pace), an idle moment outside a
// pause is capacity that the stopping and starting lost (a pause ends,
// and the requests it held back are still on their way), which the
// optimized system does not lose. The resource's time per request, k
// cores over the window, is its work, the pauses and the idle time, and
// the pauses grow with the requests; without the idle time the
// throughput is larger by k·window/(k·window - idle). It is an upper end
// for the run, not a correction: where the target, or a downstream
// service, set part of the pace, the resource idled waiting for it, as it
// would in the optimized system.
//
// The resource is, under shared placement, the shared cores, read with
// the cores method only (the holds are busy time there, so idle time is
// outside them); under keep placement, every core, less the idle time
// per request the baseline had; under dedicated placement, the busiest paused service's
// own cores (idle: their time less its pauses and its CPU). in is what
// s's pauses inserted. s's throughput where it cannot be read.
func (r *Runner) idleFree(s *sample, in inserted) float64 {
	tvs := s.res.Throughput
	pl := r.d.Placement()
	if s.window <= 0 {
		return tvs
	}
	var all, idle float64 // core-seconds in the window
	switch {
	case pl.Keep:
		// Every process shares every core: the cores are one pool, and
		// what it idled beyond the baseline's idling per request is what
		// the pauses left unused (a target alone during a freeze that
		// cannot fill every core).
		n := float64(s.responses())
		all = (s.window * time.Duration(len(pl.PausedCPUs()))).Seconds()
		idle = s.idle.Seconds() - n*medianOf(r.base, idlePerRequest)
	case pl.SharedCores():
		if r.method != pause.MethodCores {
			return tvs
		}
		all, idle = (s.window * time.Duration(len(pl.PausedCPUs()))).Seconds(), s.idle.Seconds()
	default:
		n := s.responses()
		paused := in.services
		if len(paused) == 0 && in.counted {
			// A group method: every paused service got the group's.
			paused = map[string]float64{}
			for name := range s.after {
				if name != r.opts.Target {
					paused[name] = in.measured
				}
			}
		}
		b := r.busiest(s, paused, n)
		k := pl.CoreCount(b)
		if b == "" || !(k > 0) || math.IsInf(k, 0) {
			return tvs
		}
		_, cpu := s.delta(b)
		all = k * s.window.Seconds()
		idle = all - k*paused[b]*float64(n) - cpu.Seconds()
	}
	if !(idle > 0) || idle >= all {
		return tvs
	}
	return tvs * all / (all - idle)
}

// idlePerRequest is the paused cores' idle time (seconds) per completed
// request in s's window.
func idlePerRequest(s *sample) float64 {
	n := s.responses()
	if n == 0 {
		return 0
	}
	return s.idle.Seconds() / float64(n)
}

// noiseHalfWidth is the half-width (req/s) of the 90% interval of p's
// prediction from its runs' noise alone: a t interval of the mean of its
// slowdown runs' throughput, amplified as the model amplifies it
// (t_opt/t_vs), with the run-to-run noise pooled over the baseline's runs
// and the point's (the same application, the same machine, minutes
// apart) and a prior of assumedNoisePct worth noisePriorDOF runs, so that
// a point measured once or twice is neither given no width nor the
// extreme quantiles of a standard deviation read from two runs.
func (r *Runner) noiseHalfWidth(p *report.Point, samples []*sample) float64 {
	var runs []float64
	for _, s := range samples {
		if s.res.Throughput > 0 {
			runs = append(runs, s.res.Throughput)
		}
	}
	if len(runs) == 0 || p.PredictedRPS <= 0 {
		return 0
	}
	rel, dof := pooledNoise(append([][]float64{runs, throughputs(r.base)}, r.opts.NoiseGroups...)...)
	tvs := stats.Mean(runs)
	amp := max(1, p.PredictedRPS/tvs)
	return tQuantile(dof) * rel / math.Sqrt(float64(len(runs))) * amp * p.PredictedRPS
}

// noisePriorDOF is how many runs' worth of evidence the assumed noise
// (assumedNoisePct) counts for in pooledNoise.
const noisePriorDOF = 4

// PooledNoise is the run-to-run noise that the intervals assume of runs
// of the same application beside the groups of repeated runs given: the
// relative standard deviation of one run, %, pooled over the groups (each
// against its own mean) and the prior (assumedNoisePct, worth
// noisePriorDOF runs), and its degrees of freedom.
func PooledNoise(groups [][]float64) (pct float64, dof int) {
	rel, dof := pooledNoise(groups...)
	return 100 * rel, dof
}

// pooledNoise is the relative standard deviation of one run, pooled over
// the groups of repeated runs given (each against its own mean) and the
// prior, and its degrees of freedom.
func pooledNoise(groups ...[]float64) (rel float64, dof int) {
	ss := noisePriorDOF * math.Pow(assumedNoisePct/100.0, 2)
	dof = noisePriorDOF
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		m := stats.Mean(g)
		if m <= 0 {
			continue
		}
		for _, x := range g {
			ss += (x/m - 1) * (x/m - 1)
		}
		dof += len(g) - 1
	}
	return math.Sqrt(ss / float64(dof)), dof
}

// tQuantile is the two-sided intervalLevel quantile of Student's t with
// dof degrees of freedom.
func tQuantile(dof int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(max(1, dof))}.Quantile(1 - (1-intervalLevel)/2)
}
