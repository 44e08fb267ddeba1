package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aclements/go-moremath/stats"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/inservice"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/load"
	"github.com/slowpoke-dev/slowpoke/model"
)

// LatencyOptions of a latency what-if (PredictLatency). Zero values take
// the spec's workload or the defaults below.
type LatencyOptions struct {
	Target         string
	Reductions     []model.Reduction
	ReductionsText []string
	// Rate is the open-loop rate of every run, requests/s; 0 takes
	// DefaultRateShare of the saturating rate, measured first.
	Rate float64
	// Connections of the closed-loop run that measures the saturating
	// rate and the target's cost per call.
	Connections int
	Warmup      time.Duration
	// Duration of every run's window; 0 sizes it so that every request
	// type gets MinRequests responses.
	Duration    time.Duration
	MinRequests int // per request type and run (default DefaultMinRequests)
	Repetitions int // of the whole sequence of runs, pooled (default 1)
	Validate    bool
	// CompareUnmatched also runs every prediction at the baseline's rate
	// (LatencyDiagnostics.Unmatched), to measure what matching the cores' load
	// buys; slowpoke-lab bench latency --compare sets it.
	CompareUnmatched bool
	// CompareHolds also predicts every reduction by holds
	// (LatencyDiagnostics.Holds): the cores of every other service, the load
	// generator's included, are held for the reduction at every call of
	// the target, on a clock that leaves the holds out (Coz's virtual
	// speedup), instead of delaying requests; no delay is inserted or
	// subtracted and the rate is the baseline's. It needs the target on
	// cores of its own (placement shared or dedicated) and the cores
	// method. A research mechanism: slowpoke-lab bench latency --holds.
	CompareHolds bool
	// HoldsBatch, above 1 and with CompareHolds, also predicts every
	// reduction by holds of HoldsBatch times the reduction every
	// HoldsBatch calls of the target (LatencyDiagnostics.HoldsBatched): fewer,
	// longer holds. Research: slowpoke-lab bench latency --holds-batch.
	HoldsBatch int
	// CompareStretch also predicts every reduction with the target's delay
	// per call stretched by how much the target's work was stretched by
	// others on its cores in the prediction run (1 + its threads' time
	// waiting for a core / their time running; LatencyDiagnostics.Stretched), at
	// the same rate. Research: slowpoke-lab bench latency --stretch.
	CompareStretch bool
	Progress       io.Writer
	SpecPath       string
}

// Defaults of a latency what-if.
const (
	// DefaultRateShare of the saturating rate: loaded, but far from the
	// knee, where a latency prediction is meaningful (MiCozServices).
	DefaultRateShare = 0.5
	// DefaultMinRequests per request type sizes a p99's 95% confidence
	// interval to about ±0.5 percentile points (1.96² 0.99 0.01 / 0.005²
	// ≈ 1521); never fewer than 300 (MiCozServices).
	DefaultMinRequests = report.DefaultLatencyRequests
	minLatencyRequests = 300
	// maxLatencyWindow bounds a sized window; fewer requests are then
	// measured and a warning says so.
	maxLatencyWindow = 2 * time.Minute
	minLatencyWindow = 3 * time.Second
	saturationWindow = 3 * time.Second
	// fasterP is the significance level of the Mann-Whitney verdict.
	fasterP = 0.05
)

type latencyRun struct {
	stepper
	epoch    uint64 // of the last holding run
	d        backend.Backend
	s        *spec.Spec
	o        LatencyOptions
	mix      []load.Request
	store    *inservice.Store
	warnings []string
}

// PredictLatency predicts the latency distribution of every request type of
// the running application d after each reduction of the target's per-call
// cost, by virtual speedup (docs/latency.md): every call of the target adds
// the reduction to its request's delay counters, every concurrent branch
// waits to catch up before it replies, and each request's measured latency
// less its inserted delay is its predicted latency. The load is open loop
// at a fixed rate. With Validate, the target is also restarted with its
// work really reduced (the spec's ground_truth knob) and measured.
//
// Every service's instrumentation leaves the what-if, and the target runs
// as started, before it returns, whatever happens.
func PredictLatency(ctx context.Context, d backend.Backend, o LatencyOptions) (*report.Latency, error) {
	o, mix, err := checkLatency(d, o)
	if err != nil {
		return nil, err
	}
	r := &latencyRun{d: d, s: d.Spec(), o: o, mix: mix, stepper: stepper{w: o.Progress, start: time.Now()}}
	if r.store, err = createStore(d); err != nil {
		return nil, err
	}
	defer r.end()
	if err := r.setAll(0); err != nil {
		return nil, err
	}
	out := r.newReport()
	r.total = 1 + o.Repetitions*r.runsPerRepetition()
	r.step = 1
	points, window, err := r.plan(ctx, out)
	if err != nil {
		return nil, err
	}
	// Every repetition measures the baseline, each prediction and each
	// truth; their responses are pooled.
	base := newRuns(len(mix))
	for rep := 1; rep <= o.Repetitions; rep++ {
		if err := r.measureRepetition(ctx, rep, out.RateRPS, window, base, points); err != nil {
			return nil, err
		}
	}
	r.summarize(out, base, points)
	return out, nil
}

// checkLatency refuses what a latency what-if cannot measure and fills in
// the defaults of o; it returns them and the workload's requests.
func checkLatency(d backend.Backend, o LatencyOptions) (LatencyOptions, []load.Request, error) {
	s := d.Spec()
	if d.Service(o.Target) == nil {
		return o, nil, fmt.Errorf("no service %q is running; services: %s", o.Target, strings.Join(s.ServiceNames(), ", "))
	}
	if len(o.Reductions) == 0 {
		return o, nil, errors.New("no reduction given")
	}
	if o.Validate {
		if err := checkCanValidate(s, o.Target); err != nil {
			return o, nil, err
		}
	}
	if o.Rate < 0 || math.IsInf(o.Rate, 0) || math.IsNaN(o.Rate) {
		return o, nil, fmt.Errorf("rate must be a positive number of requests/s, got %v", o.Rate)
	}
	var dur time.Duration
	workloadDefaults(s, &o.Connections, &o.Warmup, &dur)
	if o.MinRequests <= 0 {
		o.MinRequests = DefaultMinRequests
	}
	if o.Repetitions <= 0 {
		o.Repetitions = 1
	}
	if o.MinRequests < minLatencyRequests {
		return o, nil, fmt.Errorf("at least %d requests per request type are needed for percentiles, got %d", minLatencyRequests, o.MinRequests)
	}
	mix, err := mixOf(s)
	if err != nil {
		return o, nil, err
	}
	for _, svc := range d.Services() {
		if svc.Control == nil {
			return o, nil, fmt.Errorf("service %q runs without a controller: a latency what-if needs every service instrumented", svc.Name)
		}
	}
	if o.CompareHolds && (len(d.Placement().TargetCPUs) == 0 || len(d.Placement().HoldCores()) == 0 || backend.SharesCPU(d.Placement().TargetCPUs, d.Placement().HoldCores())) {
		return o, nil, fmt.Errorf("holding the other services' cores needs %q on cores of its own (placement shared or dedicated), got target CPUs %v and others' %v", o.Target, d.Placement().TargetCPUs, d.Placement().HoldCores())
	}
	return o, mix, nil
}

// newReport is the latency report before anything is measured.
func (r *latencyRun) newReport() *report.Latency {
	o := r.o
	return &report.Latency{App: r.s.Name, Target: o.Target, CreatedAt: time.Now().UTC(), Settings: report.LatencySettings{
		SpecPath: o.SpecPath, Reductions: o.ReductionsText, Rate: o.Rate, RateShare: DefaultRateShare,
		Connections: o.Connections, WarmupS: o.Warmup.Seconds(), MinRequests: o.MinRequests, Repetitions: o.Repetitions, Validate: o.Validate,
		Duration: o.Duration.Seconds(),
	}}
}

// runsPerRepetition counts one repetition's runs: the baseline, every
// prediction, and every comparison and truth asked for.
func (r *latencyRun) runsPerRepetition() int {
	o := r.o
	perRep := 1 + len(o.Reductions)
	if o.CompareUnmatched {
		perRep += len(o.Reductions)
	}
	if o.CompareStretch {
		perRep += len(o.Reductions)
	}
	if o.CompareHolds {
		perRep += len(o.Reductions)
		if o.HoldsBatch > 1 {
			perRep += len(o.Reductions)
		}
	}
	if o.Validate {
		perRep += len(o.Reductions)
	}
	return perRep
}

// latencyPoint is one reduction's runs, pooled over the repetitions.
type latencyPoint struct {
	d    time.Duration // per call of the target
	rate float64       // of its prediction runs (saturated.predictionRate)
	// pred are its predictions; unmatched, stretched, holds and batched
	// its comparisons (LatencyOptions), stretches the stretch of every
	// stretched run; truth its ground truths.
	pred, unmatched, stretched, holds, batched, truth *runs
	stretches                                         []float64
	meanDelay                                         float64 // inserted per request, ms, averaged over the repetitions
}

// plan measures the saturating rate and the target's cost per call,
// chooses the rate and the window of every run, and resolves every
// reduction to a time per call: the points to measure.
func (r *latencyRun) plan(ctx context.Context, out *report.Latency) ([]*latencyPoint, time.Duration, error) {
	o := r.o
	r.progress("saturation: closed loop, %d connections, %v", o.Connections, saturationWindow)
	sat, err := r.saturation(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("saturation run: %w", err)
	}
	cost := sat.cost
	out.SaturationRPS, out.TargetCostUS = sat.rps, float64(cost)/1e3
	out.TargetCallsPerRequest, out.CPUPerRequestUS = sat.calls, float64(sat.cpu)/1e3
	out.RateRPS = o.Rate
	if o.Rate == 0 {
		out.RateRPS = DefaultRateShare * sat.rps
	}
	window := r.window(out.RateRPS)
	out.DurationS = window.Seconds()
	points := make([]*latencyPoint, len(o.Reductions))
	for i, red := range o.Reductions {
		v, err := red.Resolve(cost.Seconds())
		if err != nil {
			return nil, 0, &backend.SettingError{Setting: SettingReduction, Value: red.Text, Err: err}
		}
		dd := time.Duration(v * 1e9)
		if dd > inservice.MaxDelay {
			return nil, 0, &backend.SettingError{Setting: SettingReduction, Value: red.Text,
				Err: fmt.Errorf("%v per call is more than the most allowed (%v)", dd, inservice.MaxDelay)}
		}
		points[i] = &latencyPoint{d: dd}
	}
	r.progress("saturating rate %.0f req/s, %s costs %v of CPU per call; open loop at %.0f req/s, %v per run",
		sat.rps, o.Target, cost.Round(time.Microsecond), out.RateRPS, window.Round(100*time.Millisecond))
	n := len(r.mix)
	for _, p := range points {
		p.rate = sat.predictionRate(out.RateRPS, p.d)
		p.pred, p.unmatched, p.truth, p.holds, p.batched, p.stretched = newRuns(n), newRuns(n), newRuns(n), newRuns(n), newRuns(n), newRuns(n)
	}
	return points, window, nil
}

// measureRepetition runs repetition rep: the baseline at rate, every
// point's prediction and comparisons, then, when validating, every point's
// truth and a restart of the target as started.
func (r *latencyRun) measureRepetition(ctx context.Context, rep int, rate float64, window time.Duration, base *runs, points []*latencyPoint) error {
	o := r.o
	of := ""
	if o.Repetitions > 1 {
		of = fmt.Sprintf(" (repetition %d/%d)", rep, o.Repetitions)
	}
	r.step++
	r.progress("baseline%s", of)
	m, err := r.measure(ctx, rate, window, false)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	base.add(m)
	var truth func(k int) error
	if o.Validate {
		truth = func(k int) error { return r.measureTruth(ctx, k, points[k], rate, window, of) }
	}
	return measureRepetition(indices(len(points)),
		func(k int) error { return r.measurePrediction(ctx, k, points[k], rate, window, of) },
		truth,
		func() error {
			if err := r.restart(ctx, nil); err != nil {
				return fmt.Errorf("restore %s: %w", o.Target, err)
			}
			return nil
		})
}

// measurePrediction runs point k's prediction at its rate, and the
// comparisons asked for: stretched, at the baseline's rate (unmatched),
// by holds and by batched holds.
func (r *latencyRun) measurePrediction(ctx context.Context, k int, p *latencyPoint, baseRate float64, window time.Duration, of string) error {
	o, dd := r.o, p.d
	r.step++
	r.progress("%s: %s faster by %v per call, virtually, at %.0f req/s%s", o.ReductionsText[k], o.Target, dd.Round(time.Microsecond), p.rate, of)
	if err := r.setTarget(dd); err != nil {
		return err
	}
	m, err := r.measure(ctx, p.rate, window, true)
	if err != nil {
		return fmt.Errorf("%s: %w", o.ReductionsText[k], err)
	}
	p.pred.add(m)
	p.meanDelay += m.delay / float64(o.Repetitions)
	if o.CompareStretch {
		if err := r.measureStretched(ctx, k, p, m.stretch, window, of); err != nil {
			return err
		}
	}
	if o.CompareUnmatched {
		r.step++
		r.progress("%s: and at the baseline's rate, %.0f req/s%s", o.ReductionsText[k], baseRate, of)
		if m, err = r.measure(ctx, baseRate, window, true); err != nil {
			return fmt.Errorf("%s: %w", o.ReductionsText[k], err)
		}
		p.unmatched.add(m)
	}
	if err := r.setTarget(0); err != nil {
		return err
	}
	if o.CompareHolds {
		return r.measureHolds(ctx, k, p, baseRate, window, of)
	}
	return nil
}

// measureStretched runs point k's prediction again with the delay per
// call stretched by stretch (at least 1), and sets the delay back.
func (r *latencyRun) measureStretched(ctx context.Context, k int, p *latencyPoint, stretch float64, window time.Duration, of string) error {
	o, dd := r.o, p.d
	sigma := max(1, stretch)
	p.stretches = append(p.stretches, sigma)
	r.step++
	r.progress("%s: with the delay per call stretched %.2f times (%s's wait for a core in that run), %v, at %.0f req/s%s", o.ReductionsText[k], sigma, o.Target, time.Duration(sigma*float64(dd)).Round(time.Microsecond), p.rate, of)
	if err := r.setTarget(time.Duration(sigma * float64(dd))); err != nil {
		return err
	}
	m, err := r.measure(ctx, p.rate, window, true)
	if err != nil {
		return fmt.Errorf("%s: stretched: %w", o.ReductionsText[k], err)
	}
	p.stretched.add(m)
	return r.setTarget(dd)
}

// measureHolds predicts point k by holds at the baseline's rate, and by
// batched holds where HoldsBatch asks for them.
func (r *latencyRun) measureHolds(ctx context.Context, k int, p *latencyPoint, rate float64, window time.Duration, of string) error {
	o, dd := r.o, p.d
	r.step++
	r.progress("%s: by holding the other services' cores at every call of %s, at %.0f req/s%s", o.ReductionsText[k], o.Target, rate, of)
	m, err := r.measureHolding(ctx, rate, window, dd, 1)
	if err != nil {
		return fmt.Errorf("%s: holds: %w", o.ReductionsText[k], err)
	}
	p.holds.add(m)
	if o.HoldsBatch > 1 {
		r.step++
		r.progress("%s: by holds of %d times the reduction every %d calls of %s, at %.0f req/s%s", o.ReductionsText[k], o.HoldsBatch, o.HoldsBatch, o.Target, rate, of)
		if m, err = r.measureHolding(ctx, rate, window, dd, o.HoldsBatch); err != nil {
			return fmt.Errorf("%s: batched holds: %w", o.ReductionsText[k], err)
		}
		p.batched.add(m)
	}
	return nil
}

// measureTruth restarts the target with point k's work really reduced
// and measures it at the baseline's rate.
func (r *latencyRun) measureTruth(ctx context.Context, k int, p *latencyPoint, rate float64, window time.Duration, of string) error {
	o := r.o
	r.step++
	r.progress("%s: truth: %s restarted %v per call faster%s", o.ReductionsText[k], o.Target, p.d.Round(time.Microsecond), of)
	m, err := r.truth(ctx, rate, window, p.d)
	if err != nil {
		return fmt.Errorf("%s: truth: %w", o.ReductionsText[k], err)
	}
	p.truth.add(m)
	return nil
}

// summarize records the pooled baseline, its warnings and every request
// type's point after every reduction in out.
func (r *latencyRun) summarize(out *report.Latency, base *runs, points []*latencyPoint) {
	o := r.o
	for i := range r.mix {
		out.Baseline = append(out.Baseline, base.dist(r.mix[i].Name, i))
	}
	out.BaselineBusyPct = base.busyPct()
	for _, w := range []string{baselineP50DriftWarning(out.Baseline), busyWarning(out.BaselineBusyPct, out.RateRPS)} {
		if w != "" {
			r.progress("warning: %s", w)
			r.warnings = append(r.warnings, w)
		}
	}
	for k, lp := range points {
		for i := range r.mix {
			out.Points = append(out.Points, r.comparedPoint(o.ReductionsText[k], i, base, lp))
		}
	}
	out.Warnings = r.warnings
	out.ElapsedS = time.Since(r.start).Seconds()
}

// comparedPoint is request type i's point after reduction lp, with the
// comparisons asked for.
func (r *latencyRun) comparedPoint(reduction string, i int, base *runs, lp *latencyPoint) report.LatencyPoint {
	o, name := r.o, r.mix[i].Name
	p := r.point(name, reduction, lp.d, base, lp.pred, lp.truth, i, lp.meanDelay)
	p.RateRPS = lp.rate
	p.PredictedBusyPct = lp.pred.busyPct()
	if o.Validate {
		p.TrueBusyPct = lp.truth.busyPct()
	}
	// The comparisons are the lab's research: the point's diagnostics.
	if o.CompareUnmatched || o.CompareHolds || o.CompareStretch {
		p.Diagnostics = &report.LatencyDiagnostics{}
	}
	dg := p.Diagnostics
	if o.CompareUnmatched {
		u := lp.unmatched.dist(name, i)
		dg.Unmatched = &u
		if p.True != nil {
			dg.UnmatchedErrP50Pct, dg.UnmatchedErrP99Pct = errPct(u.P50MS, p.TrueP50MS), errPct(u.P99MS, p.TrueP99MS)
		}
	}
	if o.CompareHolds {
		h := lp.holds.dist(name, i)
		dg.Holds, dg.HoldsBusyPct = &h, lp.holds.busyPct()
		if tb := lp.holds.targetBusy; len(tb) > 0 {
			dg.HoldsTargetBusyPct = 100 * stats.Mean(tb)
		}
		if p.True != nil {
			dg.HoldsErrP50Pct, dg.HoldsErrP99Pct = errPct(h.P50MS, p.TrueP50MS), errPct(h.P99MS, p.TrueP99MS)
		}
	}
	if o.CompareStretch {
		h := lp.stretched.dist(name, i)
		dg.Stretch, dg.Stretched = stats.Mean(lp.stretches), &h
		if p.True != nil {
			dg.StretchedErrP50Pct, dg.StretchedErrP99Pct = errPct(h.P50MS, p.TrueP50MS), errPct(h.P99MS, p.TrueP99MS)
		}
	}
	if o.CompareHolds && o.HoldsBatch > 1 {
		h := lp.batched.dist(name, i)
		dg.HoldsBatch, dg.HoldsBatched, dg.HoldsBatchedBusyPct = o.HoldsBatch, &h, lp.batched.busyPct()
		if tb := lp.batched.targetBusy; len(tb) > 0 {
			dg.HoldsBatchedTargetBusyPct = 100 * stats.Mean(tb)
		}
		if p.True != nil {
			dg.HoldsBatchedErrP50Pct, dg.HoldsBatchedErrP99Pct = errPct(h.P50MS, p.TrueP50MS), errPct(h.P99MS, p.TrueP99MS)
		}
	}
	return p
}

// busyWarnPct is how busy the cores may be in the baseline runs before a
// warning says that the rate is close to saturation.
const busyWarnPct = 85

// busyWarning is the warning for a baseline whose cores were busyPct busy
// at rate, or "".
func busyWarning(busyPct, rate float64) string {
	if busyPct < busyWarnPct {
		return ""
	}
	return fmt.Sprintf("the cores were %.0f%% busy in the baseline runs at %.0f req/s: this close to saturation, latencies move by tens of per cent with small changes of the machine's speed, so the percentiles of predictions and truths are far less steady; a lower request rate gives steadier medians", busyPct, rate)
}

// runs pools one kind of run's latencies (ms) over repetitions, per
// request type, and keeps each repetition's p50 and how busy the cores
// were.
type runs struct {
	types      []pooled
	busy       []float64 // shares; a run whose share is unknown is left out
	targetBusy []float64 // runs by holds: the target's share of the holds
}

// pooled is one request type's latencies over the runs, and each run's p50.
type pooled struct {
	all  []float64
	p50s []float64
}

func newRuns(requestTypes int) *runs { return &runs{types: make([]pooled, requestTypes)} }

func (rs *runs) add(m openRun) {
	for i, xs := range m.lat {
		rs.types[i].all = append(rs.types[i].all, xs...)
		s := slices.Clone(xs)
		slices.Sort(s)
		rs.types[i].p50s = append(rs.types[i].p50s, quantile(s, 0.5))
	}
	if m.busy > 0 {
		rs.busy = append(rs.busy, m.busy)
	}
	if m.targetBusy > 0 {
		rs.targetBusy = append(rs.targetBusy, m.targetBusy)
	}
}

func (rs *runs) all(i int) []float64 { return rs.types[i].all }

func (rs *runs) dist(request string, i int) report.LatencyDist {
	d := dist(request, rs.types[i].all)
	d.RunsP50MS = rs.types[i].p50s
	return d
}

// busyPct is how busy the cores were in these runs, on average, in per
// cent; 0 where it could not be read.
func (rs *runs) busyPct() float64 {
	if len(rs.busy) == 0 {
		return 0
	}
	return 100 * stats.Mean(rs.busy)
}

// createStore makes the delay store where d's controllers can map it
// (backend.SharedFiles), or says why d has none.
func createStore(d backend.Backend) (*inservice.Store, error) {
	path, err := d.SharedPath(storeKind)
	if err != nil {
		return nil, fmt.Errorf("a latency what-if needs a delay store shared with every service's controller: %w", err)
	}
	return inservice.CreateStore(path)
}

// storeKind starts the name of a delay store (see package stale).
const storeKind = "slowpoke-delays"

// end takes every service out of the what-if and removes the store.
func (r *latencyRun) end() {
	r.leaveAll()
	os.Remove(r.store.Path())
	r.store.Close()
}

// leaveAll takes every service out of the what-if.
func (r *latencyRun) leaveAll() error {
	var errs []error
	for _, svc := range r.d.Services() {
		if svc.Control != nil {
			if err := svc.Control.SetLatency(wire.Latency{}); err != nil {
				errs = append(errs, fmt.Errorf("service %q: end the latency what-if: %w", svc.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// setAll puts every service in the what-if, the target adding delay per
// call.
func (r *latencyRun) setAll(delay time.Duration) error {
	for _, svc := range r.d.Services() {
		if err := r.set(svc, delay); err != nil {
			return err
		}
	}
	return nil
}

func (r *latencyRun) set(svc *backend.Service, delay time.Duration) error {
	l := wire.Latency{Store: r.store.Path(), Target: svc.Name == r.o.Target}
	if l.Target {
		l.DelayNS = int64(delay)
	}
	if err := svc.Control.SetLatency(l); err != nil {
		return fmt.Errorf("service %q: start the latency what-if: %w", svc.Name, err)
	}
	return nil
}

func (r *latencyRun) setTarget(delay time.Duration) error {
	return r.set(r.d.Service(r.o.Target), delay)
}

// saturated is what the saturation run measured.
type saturated struct {
	rps   float64       // throughput
	cost  time.Duration // the target's CPU time per call
	calls float64       // the target's calls per request
	cpu   time.Duration // the cores' busy time per request
}

// predictionRate is the rate of a prediction run for a reduction of d per
// call of the target: rate less the share of the cores' time per request
// that the reduction would free, so that the cores are as busy in the
// prediction run as with the target really faster (docs/latency.md).
func (s saturated) predictionRate(rate float64, d time.Duration) float64 {
	if s.cpu <= 0 {
		return rate
	}
	freed := s.calls * float64(d) / float64(s.cpu)
	return rate * max(1-freed, minRateShare)
}

// minRateShare bounds the prediction run's rate from below.
const minRateShare = 0.05

// saturation measures the saturating throughput in closed loop, the
// target's CPU time per call, its calls per request, and the busy time of
// the cores per request.
func (r *latencyRun) saturation(ctx context.Context) (saturated, error) {
	var before, after map[string]*wire.Stats
	cpus := r.d.Placement().OtherCPUs
	var idle0, idle1 time.Duration
	res, err := load.RunClosed(ctx, r.mix, load.WithConnections(r.o.Connections), load.WithWarmup(r.o.Warmup), load.WithDuration(saturationWindow),
		load.WithWindowHooks(func() { before, idle0 = snapshot(r.d), r.d.IdleTime(cpus) }, func() { after, idle1 = snapshot(r.d), r.d.IdleTime(cpus) }))
	if err != nil {
		return saturated{}, err
	}
	if res.Completed == 0 {
		return saturated{}, fmt.Errorf("no request succeeded (%d errors, %d non-2xx): check the workload and the services' logs", res.Errors, res.Non2xx)
	}
	calls, cpu := statsDelta(before[r.o.Target], after[r.o.Target])
	if calls == 0 {
		return saturated{}, fmt.Errorf("target %q %w", r.o.Target, ErrNotCalled)
	}
	if cpu <= 0 {
		return saturated{}, fmt.Errorf("target %q used no measurable CPU (%d calls)", r.o.Target, calls)
	}
	n := float64(res.Completed + res.Non2xx)
	s := saturated{rps: res.Throughput, cost: cpu / time.Duration(calls), calls: float64(calls) / n}
	if busy := res.Window*time.Duration(len(cpus)) - (idle1 - idle0); idle1 > 0 && busy > 0 {
		s.cpu = time.Duration(float64(busy) / n)
	} else {
		r.warnings = append(r.warnings, "the cores' busy time could not be read: predictions run at the baseline's rate")
	}
	return s, nil
}

// window is each run's measurement window: the given duration, or long
// enough for MinRequests of the rarest request type.
func (r *latencyRun) window(rate float64) time.Duration {
	if r.o.Duration > 0 {
		return r.o.Duration
	}
	var sum, least float64
	least = math.Inf(1)
	for _, m := range r.mix {
		sum += m.Weight
		least = min(least, m.Weight)
	}
	w := time.Duration(1.1 * float64(r.o.MinRequests) / (rate * least / sum) * 1e9)
	if w > maxLatencyWindow {
		r.warnings = append(r.warnings, fmt.Sprintf("%d requests of the rarest request type at %.0f req/s would take %v a run; measured %v, so its p99 is less precise (see the confidence intervals)",
			r.o.MinRequests, rate, w.Round(time.Second), maxLatencyWindow))
		w = maxLatencyWindow
	}
	return max(w, minLatencyWindow)
}

// openRun is what one open-loop run measured.
type openRun struct {
	lat   [][]float64 // each request type's latencies, ms
	delay float64     // the mean delay inserted per request, ms
	busy  float64     // the share of the cores' time they were busy, 0 where the backend could not read it
	// targetBusy is, in a run by holds, the share of the holds' time the
	// target ran.
	targetBusy float64
	// stretch is 1 + the target's time waiting for a core / its time
	// running, over the window (0 where unknown).
	stretch float64
}

// measure runs the open-loop load and returns each request type's
// latencies, less each request's inserted delay when predicting.
func (r *latencyRun) measure(ctx context.Context, rate float64, window time.Duration, predicting bool, opts ...load.Option) (openRun, error) {
	cpus := r.d.Placement().OtherCPUs
	var idle0, idle1 time.Duration
	var ran0, ran1, waited0, waited1 time.Duration
	res, err := load.RunOpen(ctx, r.mix, rate, append([]load.Option{load.WithWarmup(r.o.Warmup), load.WithDuration(window), load.WithSamples(delayHeader),
		load.WithWindowHooks(func() {
			idle0 = r.d.IdleTime(cpus)
			if r.o.CompareStretch {
				ran0, waited0 = r.d.SchedWaits(r.o.Target)
			}
		}, func() {
			idle1 = r.d.IdleTime(cpus)
			if r.o.CompareStretch {
				ran1, waited1 = r.d.SchedWaits(r.o.Target)
			}
		})}, opts...)...)
	if err != nil {
		return openRun{}, err
	}
	if res.Completed == 0 {
		return openRun{}, fmt.Errorf("no request succeeded (%d errors, %d non-2xx): check the services' logs", res.Errors, res.Non2xx)
	}
	var busy float64
	if all := res.Window * time.Duration(len(cpus)); idle1 > 0 && all > 0 {
		busy = min(1, max(0, 1-float64(idle1-idle0)/float64(all)))
	}
	if bad := res.Errors + res.Non2xx + res.Dropped; float64(bad) > 0.01*float64(res.Completed) {
		r.warnings = append(r.warnings, fmt.Sprintf("%d of %d requests failed or were dropped in one run", bad, bad+res.Completed))
	}
	out := make([][]float64, len(r.mix))
	var delay float64
	for _, sm := range res.Samples {
		v := sm.Latency
		if predicting {
			v -= time.Duration(sm.Value)
			delay += float64(sm.Value) / 1e6
		}
		out[sm.Request] = append(out[sm.Request], float64(v)/1e6)
	}
	for i, xs := range out {
		if len(xs) == 0 {
			return openRun{}, fmt.Errorf("request type %q got no successful response", r.mix[i].Name)
		}
	}
	m := openRun{lat: out, delay: delay / float64(len(res.Samples)), busy: busy}
	if ran := ran1 - ran0; ran > 0 {
		m.stretch = 1 + float64(max(0, waited1-waited0))/float64(ran)
	}
	return m, nil
}

// measureHolding measures a prediction by holds: the target's controller
// holds every other service's cores (the load generator's too) for batch
// times d at the start of every batch-th call of the target (batch 1: d
// at each), and the load generator's clock
// leaves the holds out (load.WithPausedTime), so that every latency and the
// send schedule are in the time the held cores ran.
func (r *latencyRun) measureHolding(ctx context.Context, rate float64, window, d time.Duration, batch int) (openRun, error) {
	path, err := r.d.SharedPath(wire.HeldFileKind)
	if err != nil {
		return openRun{}, err
	}
	held, err := pause.CreateHeldFile(path)
	if err != nil {
		return openRun{}, err
	}
	defer func() {
		held.Close()
		os.Remove(held.Path())
	}()
	ctl := r.d.Service(r.o.Target).Control
	r.epoch++
	cf := wire.Configure{Epoch: r.epoch, Target: true, Batch: batch, PausePerRoundNS: int64(batch) * int64(d),
		Pause: wire.Pause{Cores: &wire.CoresPause{Cores: r.d.Placement().HoldCores(), HeldFile: held.Path()}}}
	if err := ctl.Configure(cf); err != nil {
		return openRun{}, fmt.Errorf("configure %s to hold the other services' cores: %w", r.o.Target, err)
	}
	if err := ctl.Start(); err != nil {
		return openRun{}, fmt.Errorf("start holding: %w", err)
	}
	total := held.Total()
	m, err := r.measure(ctx, rate, window, false, load.WithPausedTime(func() time.Duration { return time.Duration(total.Load()) }))
	if serr := ctl.Stop(); err == nil && serr != nil {
		err = fmt.Errorf("stop holding: %w", serr)
	}
	// How much of the holds the target spent working: the virtual speedup
	// it got is that share of d per call.
	if st, serr := ctl.Stats(); err == nil && serr == nil && st.PauseWindowNS > 0 {
		m.targetBusy = float64(st.PauseBusyNS) / float64(st.PauseWindowNS)
		r.progress("%s ran %.0f%% of the holds (%v held in all)", r.o.Target, 100*m.targetBusy, time.Duration(st.PauseActualNS).Round(time.Millisecond))
	}
	return m, err
}

// delayHeader reads the delay the entry service reports for a request.
func delayHeader(h http.Header) int64 {
	v, _ := inservice.ParseDelay(h.Get(inservice.HeaderDelay))
	return v
}

// truth restarts the target with its work reduced by d and measures.
func (r *latencyRun) truth(ctx context.Context, rate float64, window, d time.Duration) (openRun, error) {
	svc, _ := r.s.Service(r.o.Target)
	gt := svc.GroundTruth
	if err := r.restart(ctx, map[string]string{gt.Env: gt.Value(d.Seconds() * 1e6)}); err != nil {
		return openRun{}, err
	}
	return r.measure(ctx, rate, window, false)
}

// restart restarts the target with env (nil: as started) and puts it back
// in the what-if (its controller is new).
func (r *latencyRun) restart(ctx context.Context, env map[string]string) error {
	if err := r.d.Restart(ctx, r.o.Target, env); err != nil {
		return fmt.Errorf("restart %s: %w", r.o.Target, err)
	}
	return r.setTarget(0)
}

// point compares one request type's predicted (and true) latencies after
// one reduction with its baseline.
func (r *latencyRun) point(request, reduction string, d time.Duration, bases, preds, truths *runs, i int, meanDelay float64) report.LatencyPoint {
	p := report.LatencyPoint{Request: request, Reduction: reduction, ReductionUS: float64(d) / 1e3, MeanDelayMS: meanDelay}
	base, pred := bases.all(i), preds.all(i)
	p.Predicted = preds.dist(request, i)
	p.PredictedP50MS, p.PredictedP90MS, p.PredictedP99MS = p.Predicted.P50MS, p.Predicted.P90MS, p.Predicted.P99MS
	p.MannWhitneyP = lowerP(pred, base)
	p.Faster = p.MannWhitneyP < fasterP
	if !r.o.Validate {
		return p
	}
	truth := truths.all(i)
	t := truths.dist(request, i)
	p.True = &t
	p.TrueP50MS, p.TrueP90MS, p.TrueP99MS = t.P50MS, t.P90MS, t.P99MS
	p.ErrP50Pct = errPct(p.PredictedP50MS, t.P50MS)
	p.ErrP90Pct = errPct(p.PredictedP90MS, t.P90MS)
	p.ErrP99Pct = errPct(p.PredictedP99MS, t.P99MS)
	p.Within = math.Abs(p.ErrP50Pct) <= report.LatencyP50BoundPct && math.Abs(p.ErrP99Pct) <= report.LatencyP99BoundPct
	tp := lowerP(truth, base)
	p.TrueMannWhitneyP = &tp
	return p
}

func errPct(pred, truth float64) float64 {
	if truth == 0 {
		return 0
	}
	return (pred - truth) / truth * 100
}

// lowerP is the p-value of a one-sided Mann-Whitney U test of "x is lower
// than y" (1 when it cannot be computed).
func lowerP(x, y []float64) float64 {
	res, err := stats.MannWhitneyUTest(x, y, stats.LocationLess)
	if err != nil {
		return 1
	}
	return res.P
}

// dist summarizes latencies (ms): percentiles with distribution-free 95%
// confidence intervals, and the quantiles kept for CDFs.
func dist(request string, xs []float64) report.LatencyDist {
	s := slices.Clone(xs)
	slices.Sort(s)
	d := report.LatencyDist{Request: request, N: len(s), MeanMS: stats.Mean(s)}
	d.P50MS, d.P50CIMS = quantileCI(s, 0.50)
	d.P90MS, d.P90CIMS = quantileCI(s, 0.90)
	d.P99MS, d.P99CIMS = quantileCI(s, 0.99)
	for _, q := range report.LatencyQuantiles {
		d.QuantilesMS = append(d.QuantilesMS, quantile(s, q/100))
	}
	return d
}

// quantile is the q-quantile of sorted s (nearest rank).
func quantile(s []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// quantileCI returns the q-quantile of sorted s and its 95% confidence
// interval from the order statistics: the ranks n q ± 1.96 sqrt(n q (1-q))
// (normal approximation of the binomial), clamped to the sample.
func quantileCI(s []float64, q float64) (float64, [2]float64) {
	n := float64(len(s))
	h := 1.96 * math.Sqrt(n*q*(1-q))
	lo := int(math.Floor(n*q-h)) - 1
	hi := int(math.Ceil(n*q+h)) - 1
	at := func(i int) float64 { return s[min(max(i, 0), len(s)-1)] }
	return quantile(s, q), [2]float64{at(lo), at(hi)}
}

// baselineP50DriftWarning says, for the request type whose baseline p50
// varied the most between repetitions, when its standard deviation was
// over driftPct of its mean: the same configuration ran at different
// speeds, so errors and changes of that size are noise. "" otherwise (or
// with one repetition).
func baselineP50DriftWarning(base []report.LatencyDist) string {
	var worst report.LatencyDist
	var sd float64
	for _, b := range base {
		if v := cvPct(b.RunsP50MS); v > sd {
			worst, sd = b, v
		}
	}
	if sd <= driftPct {
		return ""
	}
	return fmt.Sprintf("the baseline's p50 of %q varied by %.0f%% between repetitions (standard deviation; %.2f to %.2f ms over %d): "+
		"the machine ran the application at different speeds during the run, so errors and changes of that size are noise; "+
		"stop other work on the machine or run more repetitions, and read the confidence intervals",
		worst.Request, sd, slices.Min(worst.RunsP50MS), slices.Max(worst.RunsP50MS), len(worst.RunsP50MS))
}
