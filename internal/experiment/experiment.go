package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/aclements/go-moremath/stats"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spans"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/load"
	"github.com/slowpoke-dev/slowpoke/model"
)

// Options of an experiment. Zero values take the spec's workload or the
// documented defaults.
type Options struct {
	Target         string
	Reductions     []model.Reduction
	ReductionsText []string
	Batch          int // target calls per round; 0 chooses one per point (see chooseBatch)
	Connections    int
	Warmup         time.Duration
	Duration       time.Duration
	Repetitions    int // default 3
	// AsDeployed is the application measured as it ran before slowpoke
	// placed anything (MeasureAsDeployed), where it was; the results
	// carry it and say whether slowpoke's placement changed it.
	AsDeployed *report.Baseline
	// MaxRepetitions allows more repetitions of the points whose estimate
	// is still noisy after Repetitions: a point is repeated until the
	// standard error of its prediction (of its error, when validating) is
	// within PrecisionPct, or it has MaxRepetitions runs. 0 or at most
	// Repetitions: exactly Repetitions.
	MaxRepetitions int
	PrecisionPct   float64 // default DefaultPrecisionPct
	MaxPause       time.Duration
	SpecPath       string
	Progress       io.Writer // progress lines; nil for none
	// ProgressPrefix, when set, makes the prefix of every progress line
	// from the step under way and the steps planned (both count runs of
	// the load), in place of "[step/steps ETA]": a caller running several
	// experiments shows its own progress over all of them.
	ProgressPrefix func(step, steps int) string
	// Validate also measures the ground truth of every point: the target
	// restarted with its work really reduced (the spec's ground_truth knob).
	Validate bool
	// AutoConnections replaces Connections by the smallest count that
	// saturates the application (see chooseConnections).
	AutoConnections bool
	// PauseMethod is how the other services are paused (pause.Method);
	// "" or auto lets the deployment choose (backend.Backend.PauseMethod).
	PauseMethod pause.Method
	// Trigger is what the target's rounds follow: TriggerCalls,
	// TriggerCPU, or "" / TriggerAuto (calls where the target is
	// instrumented, its CPU time otherwise).
	Trigger string
	// Tuning switches parts of the method off or on; its zero value is
	// the product. Only the benchmarks set it.
	Tuning Tuning
	// NoiseGroups are further groups of repeated runs (each of one
	// configuration, in req/s) whose run-to-run noise pools with the
	// baseline's and each point's into the points' intervals (rank's
	// screening passes the baselines of the services screened before).
	NoiseGroups [][]float64
	// Spans, where set, counts the services' OpenTelemetry SERVER spans:
	// a target that is not instrumented but exports spans then has its
	// calls counted from them (c1, u1 per call, reductions in time per
	// call), and the spans' calls between services join the call graph.
	Spans *spans.Receiver
}

// Tuning changes the method to measure what each of its parts buys
// (docs/notes/). Its zero value is the product: what every user command
// runs. Only the benchmarks set it, and results.json records it
// (report.Settings.Tuning) only where it is not zero.
type Tuning struct {
	// Uncoordinated replaces rounds by local pausing: every service pauses
	// on its own, d c1/(q1 ci) per call of its own, in batches. It exists
	// to measure what coordination buys; predictions use rounds.
	Uncoordinated bool
	// GraphRounds propagates rounds along the observed call graph, every
	// controller forwarding to its neighbours, as the paper does. By
	// default the target's controller sends every round straight to every
	// other controller: the orchestrator knows them all, and one hop
	// instead of up to the graph's diameter keeps pauses in step.
	GraphRounds bool
	// PauseLead, where set, replaces DefaultPauseLead: every stop is
	// deferred until this long after the target triggered the round, so
	// that the services sharing cores stop together rather than each
	// when its copy of the round arrives (0 stops on arrival).
	PauseLead *time.Duration
	// OverheadCorrection takes the cost of the rounds themselves off the
	// prediction: the CPU time the controllers spend per request outside
	// stops, above what they spend in the baseline, is taken off each
	// slowdown run's time per request (see roundOverhead). Experimental:
	// on the synthetic configurations measured it over-corrects more often
	// than not (docs/method.md).
	OverheadCorrection bool
	// NoGrowthCorrection leaves the paused services' growth in CPU per
	// request in the prediction. By default what they use per request in
	// a slowdown run above what they use in the baseline is taken off each
	// slowdown run's time per request (see roundOverhead): stopped and
	// continued every few milliseconds, they do more work per request than
	// they do undisturbed, and the optimized system does not. For
	// comparison (docs/method.md, "Stops that take effect at once").
	NoGrowthCorrection bool
	// NoIdleCorrection leaves the shared cores' idle time outside the
	// holds in the prediction of a run they bound (see idleCorrection).
	// For comparison.
	NoIdleCorrection bool
	// ShortPausesOnly keeps every point at the pauses its batch was chosen
	// with, also where the shared cores bound its first run (see
	// pointRuns). For comparison.
	ShortPausesOnly bool
	// LongPauseCap caps the pauses of a point lengthened because the
	// shared cores bound its first run (0: sharedBoundPause, 64 ms). For
	// comparison.
	LongPauseCap time.Duration
	// NoColocatedExtension turns off extending stops by the CPU time that
	// the never-paused load generator uses on the paused services' cores
	// during them (see Runner.colocated). For measuring what it buys.
	NoColocatedExtension bool
	// NoPeerExtension turns off extending every stop by the CPU time the
	// other paused services on the same cores used during it (see
	// Runner.corePeers). For measuring what it buys (docs/method.md).
	NoPeerExtension bool
	// NoStarvedRepair keeps a point's first run where the target starved
	// during its pauses, instead of measuring it again with shorter
	// pauses (see Runner.shorten). For comparison.
	NoStarvedRepair bool
	// NominalDelay takes the model's d c1/q1 off every slowdown run
	// instead of the pause per request the run really inserted where the
	// paused services bound it (see Runner.delayUsed). For comparison.
	NominalDelay bool
	// NoCapacityRun leaves the points whose slowdown runs saturated the
	// shared cores as measured, without the capacity run that measures
	// those cores' capacity unslowed (see Runner.measureCapacity). For
	// comparison.
	NoCapacityRun bool
	// ScreenAll screens a service past its pre-profiling also where that
	// baseline found the shared cores bound with the service mostly idle
	// (Runner.othersBind). For comparison.
	ScreenAll bool
	// OpenLoopRate, when positive, drives every run open loop at this many
	// requests per second instead of closed loop (for benchmarks that
	// measure cost at a fixed load; predictions need a closed loop).
	OpenLoopRate float64
}

// report is t as results.json records it: nil for the product.
func (t Tuning) report() *report.Tuning {
	if t == (Tuning{PauseLead: t.PauseLead}) {
		return nil
	}
	return &report.Tuning{GraphRounds: t.GraphRounds, Uncoordinated: t.Uncoordinated, NoColocatedExtension: t.NoColocatedExtension,
		NoPeerExtension: t.NoPeerExtension, OverheadCorrection: t.OverheadCorrection, NoGrowthCorrection: t.NoGrowthCorrection,
		NoIdleCorrection: t.NoIdleCorrection, ShortPausesOnly: t.ShortPausesOnly, NominalDelay: t.NominalDelay, NoStarvedRepair: t.NoStarvedRepair, NoCapacityRun: t.NoCapacityRun, ScreenAll: t.ScreenAll, LongPauseCapMS: float64(t.LongPauseCap) / 1e6, OpenLoopRate: t.OpenLoopRate}
}

// pauseLead is the lead every stop is deferred by.
func (t Tuning) pauseLead() time.Duration {
	if t.PauseLead == nil {
		return DefaultPauseLead
	}
	return *t.PauseLead
}

// Thresholds for flags.
const (
	driftPct       = 7    // baseline runs' standard deviation over this share of their mean, %: the machine's speed moved
	errorShare     = 0.01 // errors+non-2xx above this share of responses
	starvedRatio   = 0.8  // target busy during pauses below this share of its overall busy
	pauseShortfall = 0.9  // actual/requested pause below this
	noisyStdErrPct = 3    // standard error of a point's estimate above this, %
	stopsLateShare = 0.5  // the latest paused service's mean stop lateness above this share of a pause
	// mechanism-cost: the prediction moved by pausing's own cost by more
	// than this many standard errors of the point, and at least this much.
	mechanismNoise    = 2
	mechanismFloorPct = 3
	holdLeakPct       = 95 // held cores: the holding threads got less of them than this share (%)
	// shared-bound: under shared placement, the shared cores idle less
	// than this share of the slowdown runs (%) while the target is busy
	// less than this share of its cores.
	sharedBoundIdlePct    = 1
	sharedBoundTargetBusy = 0.9
	maxAutoBatch          = 100
	maxAutoPause          = 4 * time.Millisecond
	// sharedBoundPause caps the pauses of a point whose first run the
	// shared cores bound (pointRuns.lengthen).
	sharedBoundPause = 64 * time.Millisecond
	queueShareBatch  = 0.25 // share of the connections the target may drain during one pause
)

// DefaultPrecisionPct is the standard error (%) a point's estimate is
// repeated down to when MaxRepetitions allows. On the 2-core machine the
// spread between two runs of one point was 0-13% (median 2%), and a
// 1.5% standard error keeps that noise under the 3% accuracy target.
const DefaultPrecisionPct = 1.5

// DefaultPauseLead is the CLI's --pause-lead. Rounds reached the slowest
// controller 0.3-1.2 ms after the trigger on average on the 2-core machine
// (round_delay_us over the synthetic subset), so services sharing the core
// stopped up to a millisecond apart, and the core kept working for part of
// each 3-4 ms "pause".
const DefaultPauseLead = 2 * time.Millisecond

// CheckPauseLead refuses a lead the controllers would refuse, so that
// commands can fail before they start anything.
func CheckPauseLead(lead time.Duration) error {
	if lead < 0 || lead > wire.MaxLead {
		return fmt.Errorf("pause lead must be between 0 and %v, got %v", wire.MaxLead, lead)
	}
	return nil
}

// Runner runs experiments on one deployment.
type Runner struct {
	method pause.Method // resolved
	// trigger is what the target's rounds follow (TriggerCalls or
	// TriggerCPU); counted says whether its calls are counted (it is
	// instrumented). truthC1 is its calls per request as its ground-truth
	// knob shows them, where they are not counted (calibrateTruth).
	// spanned says that its calls were counted from its OpenTelemetry
	// spans instead (it is not instrumented, but exports spans).
	trigger string
	counted bool
	spanned bool
	truthC1 float64
	prof    *profile  // set by pre-profiling
	base    []*sample // baseline runs so far
	// capRuns are the capacity runs (capacity.go), shared by the
	// points of one run.
	capRuns []capacityRun
	d       backend.Backend
	spec    *spec.Spec
	opts    Options
	mix     []load.Request
	epoch   uint64
	step    int
	steps   int
	start   time.Time
}

// ErrNotCalled is in the error of an experiment whose target received no
// calls from the workload.
var ErrNotCalled = errors.New("received no calls")

// ErrNoCPU is in the error of an experiment whose target, its rounds to
// follow its CPU time, used almost none during pre-profiling: it waits on
// others, so a cheaper one would not change throughput.
var ErrNoCPU = errors.New("used almost no CPU")

// New validates options against the deployment.
func New(d backend.Backend, opts Options) (*Runner, error) {
	s := d.Spec()
	if err := s.CheckTarget(opts.Target); err != nil {
		return nil, err
	}
	if d.Service(opts.Target) == nil {
		return nil, fmt.Errorf("target %q is not running", opts.Target)
	}
	workloadDefaults(s, &opts.Connections, &opts.Warmup, &opts.Duration)
	if opts.Repetitions <= 0 {
		opts.Repetitions = 3
	}
	if opts.MaxRepetitions < opts.Repetitions {
		opts.MaxRepetitions = opts.Repetitions
	}
	if opts.PrecisionPct <= 0 {
		opts.PrecisionPct = DefaultPrecisionPct
	}
	if opts.MaxPause <= 0 {
		opts.MaxPause = controller.DefaultMaxPause
	}
	if opts.Batch < 0 {
		return nil, errors.New("batch must be 0 (chosen per point) or positive")
	}
	if err := CheckPauseLead(opts.Tuning.pauseLead()); err != nil {
		return nil, err
	}
	trigger, err := ParseTrigger(opts.Trigger)
	if err != nil {
		return nil, err
	}
	opts.Trigger = trigger
	if opts.Validate {
		if err := checkCanValidate(s, opts.Target); err != nil {
			return nil, err
		}
	}
	method, err := d.PauseMethod(opts.PauseMethod)
	if err != nil {
		return nil, err
	}
	p := pausings[method]
	if p == nil {
		return nil, fmt.Errorf("the backend chose pause method %q, which no run makes", method)
	}
	if !p.rounds() && (opts.Tuning.Uncoordinated || opts.Tuning.GraphRounds) {
		return nil, fmt.Errorf("uncoordinated pausing and rounds along the call graph are made with signals, not with the %s method", method)
	}
	r := &Runner{d: d, spec: s, opts: opts, method: method, epoch: uint64(time.Now().UnixNano())}
	if r.mix, err = mixOf(s); err != nil {
		return nil, err
	}
	return r, nil
}

// workloadDefaults replaces the settings left at zero (or below) by the
// spec's workload.
func workloadDefaults(s *spec.Spec, connections *int, warmup, duration *time.Duration) {
	if *connections <= 0 {
		*connections = s.Workload.Connections
	}
	if *warmup <= 0 {
		*warmup = s.Workload.Warmup.Duration
	}
	if *duration <= 0 {
		*duration = s.Workload.Duration.Duration
	}
}

// mixOf is the spec's workload as load generator requests.
func mixOf(s *spec.Spec) ([]load.Request, error) {
	var mix []load.Request
	for _, q := range s.Workload.Requests {
		h := make(map[string][]string, len(q.Headers))
		for k, v := range q.Headers {
			h[k] = []string{v}
		}
		mix = append(mix, load.Request{Name: q.Name, Method: q.Method, URL: s.URL(q), Header: h, Body: []byte(q.Body), Weight: q.Weight})
	}
	return mix, load.Validate(mix)
}

// specPool is the service's pool as the spec sets it (0: none).
func (r *poolRun) specPool(name string) int64 {
	if sv, ok := r.s.Service(name); ok && sv.Pool != nil {
		return int64(*sv.Pool)
	}
	return 0
}

// Run runs the whole experiment: pre-profiling, then Repetitions rounds
// of a baseline and every point.
func (r *Runner) Run(ctx context.Context) (*report.Results, error) {
	if err := r.checkRun(); err != nil {
		return nil, err
	}
	out := r.newResults()
	r.planSteps()
	if r.opts.AutoConnections {
		n, err := r.chooseConnections(ctx)
		if err != nil {
			return nil, err
		}
		r.opts.Connections, out.Settings.Connections = n, n
	}
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
	if _, err := r.measureRepetitions(ctx, points, rounds, out, nil); err != nil {
		return nil, err
	}
	if err := r.repeatNoisy(ctx, points, rounds, out, nil); err != nil {
		return nil, err
	}
	if err := r.measureCapacity(ctx, points); err != nil {
		return nil, err
	}
	r.summarize(out, points)
	return out, nil
}

// checkRun refuses what Run cannot measure: no reductions, a target
// without a controller, a trigger it cannot follow.
func (r *Runner) checkRun() error {
	if len(r.opts.Reductions) == 0 {
		return errors.New("no reductions given")
	}
	if r.d.Service(r.opts.Target).Control == nil {
		return fmt.Errorf("target %q does not run under a controller", r.opts.Target)
	}
	return r.resolveTrigger()
}

// newResults is results.json before anything is measured: the settings,
// the placement, and the placement's warning.
func (r *Runner) newResults() *report.Results {
	o := r.opts
	out := &report.Results{
		Version: report.Version, Kind: report.KindPredict, App: r.spec.Name, Target: o.Target, CreatedAt: time.Now().UTC(),
		Settings: report.Settings{
			Spec: o.SpecPath, Reductions: o.ReductionsText, Batch: o.Batch, Connections: o.Connections,
			WarmupS: o.Warmup.Seconds(), DurationS: o.Duration.Seconds(), Repetitions: o.Repetitions,
			MaxRepetitions: o.MaxRepetitions, PrecisionPct: o.PrecisionPct,
			MaxPauseMS: float64(o.MaxPause) / 1e6, Placement: map[string][]int{}, PlacementMode: string(r.d.Placement().Mode()), LoadCPUs: r.d.Placement().OtherCPUs, NumCPU: runtime.NumCPU(),
			PauseLeadMS: float64(o.Tuning.pauseLead()) / 1e6, Tuning: o.Tuning.report(),
			PauseMethod: string(r.method),
		},
	}
	out.Settings.Host, _ = os.Hostname()
	for _, svc := range r.d.Services() {
		out.Settings.Placement[svc.Name] = r.d.Placement().CPUs(svc.Name)
	}
	if w := r.d.Placement().Warning; w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	if o.Validate {
		out.Kind = report.KindValidate
	}
	return out
}

// planSteps counts the runs of the repetitions planned (a baseline and
// every point's slowdown, and its ground truth when validating) and
// starts the clock of the progress lines.
func (r *Runner) planSteps() {
	perRep := 1 + len(r.opts.Reductions)
	if r.opts.Validate {
		perRep += len(r.opts.Reductions)
	}
	r.steps = r.opts.Repetitions * perRep
	r.start = time.Now()
}

// preProfile runs the baseline that pre-profiles the target (the first
// baseline repetition), keeps its profile, and records it in out.
func (r *Runner) preProfile(ctx context.Context, out *report.Results) error {
	o := r.opts
	// Pre-profiling doubles as the first baseline repetition; its longer
	// warm-up also warms connection pools and caches after start-up.
	r.step = 1
	r.progress("pre-profiling: baseline with %d connections", o.Connections)
	pre, err := r.run(ctx, nil, nil, 2*o.Warmup, true)
	if err != nil {
		return err
	}
	if r.opts.Spans != nil && !r.counted {
		// The spans of the window's last calls are still on their way.
		if err := r.opts.Spans.Settle(ctx, pre.from.Add(pre.window)); err != nil {
			return err
		}
	}
	prof, err := r.profile(pre)
	if err != nil {
		return err
	}
	r.prof = prof
	out.Trigger, out.CallsCounted, out.CallsFrom = r.trigger, r.counted || r.spanned, r.callsFrom()
	r.base = append(r.base, pre)
	out.C1, out.Q1, out.U1US, out.Neighbours = prof.c1, prof.q1, prof.u1.Seconds()*1e6, prof.neighbours
	out.CallGraph = prof.observed
	out.Q1Assigned, out.TargetCoresP95, out.TargetCoresMean = prof.q1Assigned, prof.coresP95, prof.coresMean
	for _, w := range append(slices.Clone(prof.warnings), r.quotaWarnings()...) {
		r.progress("warning: %s", w)
		out.Warnings = append(out.Warnings, w)
	}
	r.printProfile(pre, out.U1US)
	if o.Validate && !r.counted && !r.spanned {
		if err := r.calibrateTruth(ctx); err != nil {
			return err
		}
		out.TruthC1 = &r.truthC1
	}
	return nil
}

// printProfile prints the pre-profiling baseline and what it learned of
// the target.
func (r *Runner) printProfile(pre *sample, u1US float64) {
	prof := r.prof
	if r.counted || r.spanned {
		follow := "calls"
		if r.trigger == TriggerCPU {
			follow = "CPU time"
		}
		r.progress("baseline %.0f req/s; c1 = %.3f target calls per request (counted by its %s), q1 = %g, u1 = %.1f µs per call; rounds follow its %s", pre.res.Throughput, prof.c1, r.callsFrom(), prof.q1, u1US, follow)
	} else {
		r.progress("baseline %.0f req/s; %s is not instrumented: its rounds follow its CPU time, %.1f µs per request; q1 = %g", pre.res.Throughput, r.opts.Target, u1US, prof.q1)
	}
}

// measuredPoint is one reduction's runs: its slowdowns and, when
// validating, its ground truths.
type measuredPoint struct {
	pointRuns
	d     time.Duration
	truth []*sample
}

// planPoints resolves every reduction to a time per call and chooses its
// batch and pause, refusing a pause over the cap or, when validating, a
// reduction the ground truth cannot make.
func (r *Runner) planPoints() ([]*measuredPoint, error) {
	o, prof := r.opts, r.prof
	points := make([]*measuredPoint, len(o.Reductions))
	for i, red := range o.Reductions {
		dSec, err := red.Resolve(prof.u1.Seconds())
		if err != nil {
			return nil, err
		}
		d := time.Duration(dSec * 1e9)
		b := o.Batch
		if b == 0 {
			b = chooseBatch(d, prof.u1, prof.q1, o.Connections, 0)
		}
		pause := model.PausePerRound(b, d, prof.q1)
		if pause > o.MaxPause {
			return nil, &backend.SettingError{Setting: SettingReduction, Value: red.Text,
				Err: fmt.Errorf("needs a pause of %v per round at batch %d, over the hard cap %v", pause, b, o.MaxPause),
				Use: []backend.Setting{{Name: SettingBatch, Value: fmt.Sprintf("under %d", b)}, {Name: SettingMaxPause, Value: fmt.Sprintf("of at least %v", pause)}}}
		}
		if o.Validate {
			if err := r.checkTruthRange(red.Text, d); err != nil {
				return nil, err
			}
		}
		points[i] = &measuredPoint{d: d, pointRuns: pointRuns{sd: slowdown{batch: b, pause: pause}}}
	}
	return points, nil
}

// summarize records the baseline, every point and the errors of the
// predictions in out.
func (r *Runner) summarize(out *report.Results, points []*measuredPoint) {
	out.Baseline = r.baselineOf(r.base)
	if runs := throughputs(r.base); len(runs) > 0 {
		rel, dof := pooledNoise(append([][]float64{runs}, r.opts.NoiseGroups...)...)
		out.Baseline.HalfWidthPct = 100 * tQuantile(dof) * rel / math.Sqrt(float64(len(runs)))
	}
	if w := baselineDriftWarning(out.Baseline.Runs); w != "" {
		r.progress("warning: %s", w)
		out.Warnings = append(out.Warnings, w)
	}
	var sq, maxAbs float64
	n := 0
	for _, p := range points {
		pt := r.point(p.d, &p.pointRuns, p.truth)
		if e := pt.ErrorPct; e != nil {
			sq += *e * *e
			maxAbs = max(maxAbs, math.Abs(*e))
			n++
		}
		out.Points = append(out.Points, pt)
	}
	if n > 0 {
		rmse := math.Sqrt(sq / float64(n))
		out.RMSEPct, out.MaxAbsErrorPct = &rmse, &maxAbs
	}
	// Where the shared cores bind, the curve carries their capacity
	// instead of falling (docs/notes/plateau.md).
	report.ApplyPlateau(out)
	out.NominalRMSEPct = report.NominalRMSE(out.Points)
	out.NodeSkews = r.nodeSkews(points)
	out.Coverage = report.CoverageOf(out.Points)
	if d := r.opts.AsDeployed; d != nil {
		out.DeployedBaseline = d
		r.deployedBounds(out)
		// Under keep placement nothing was re-placed: a difference is the
		// armed controllers' cost, which armedCost reports.
		if w, changed := placementChanged(*d, out.Baseline); changed && !r.d.Placement().Keep {
			r.progress("warning: %s", w)
			out.Warnings = append(out.Warnings, w)
		}
	}
	if w := r.armedCost(out); w != "" {
		r.progress("warning: %s", w)
		out.Warnings = append(out.Warnings, w)
	}
}

// armedCost sets out.ArmedCostPct from a point without pauses (a 0%
// reduction: the controllers armed, rounds counted, nothing paused),
// against the baseline, and returns a warning where it is beyond the two
// measurements' noise: what the rounds' bookkeeping costs, which every
// other point carries too and no correction takes off.
func (r *Runner) armedCost(out *report.Results) string {
	b := out.Baseline
	for _, p := range out.Points {
		if p.ReductionUS != 0 || len(p.SlowdownRuns) == 0 || b.RPS <= 0 {
			continue
		}
		cost := (p.SlowdownRPS/b.RPS - 1) * 100
		noise := 100 * math.Hypot(relStdErr(p.SlowdownRuns), relStdErr(b.Runs))
		out.ArmedCostPct, out.ArmedNoisePct = &cost, &noise
		if len(p.SlowdownRuns) < 2 || len(b.Runs) < 2 || math.Abs(cost) <= 2*noise {
			return ""
		}
		return fmt.Sprintf("the 0%% point (controllers armed, no pause) measured %+.1f%% against the baseline (%.0f against %.0f req/s, beyond its noise of %.1f%%): "+
			"the rounds' bookkeeping, or the machine's speed moving, changes every point by about as much, and no correction takes it off",
			cost, p.SlowdownRPS, b.RPS, noise)
	}
	return ""
}

// baselineDriftWarning says, when the baseline's repetitions (the same
// configuration, measured between the points) vary with a standard
// deviation over driftPct of their mean, that the machine's speed moved
// during the run, by how much, and what that means for the figures; ""
// otherwise. On the 2-core development host HotelReservation's baseline
// moved between 583 and 1106 req/s within two minutes (22%), with a
// CPU-bound loop steady within 4%; the demo's, on a calm spell, by 5%.
func baselineDriftWarning(runs []float64) string {
	sd := cvPct(runs)
	if sd <= driftPct {
		return ""
	}
	return fmt.Sprintf("the baseline's repetitions varied by %.0f%% (standard deviation; %.0f to %.0f req/s over %d runs): "+
		"the machine ran the application at different speeds during the run, so gains and errors of that size are noise; "+
		"stop other work on the machine or run more repetitions, and read each point's spread and flags",
		sd, slices.Min(runs), slices.Max(runs), len(runs))
}

// cvPct is the standard deviation of xs as a share (%) of their mean; 0
// for fewer than two or a zero mean.
func cvPct(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := stats.Mean(xs)
	if m == 0 {
		return 0
	}
	return 100 * stats.StdDev(xs) / math.Abs(m)
}

// checkCanValidate refuses to validate on a target whose ground truth
// cannot be measured (spec.Service.CanValidate), in the words of the
// experiments' options.
func checkCanValidate(s *spec.Spec, target string) error {
	svc, _ := s.Service(target)
	if err := svc.CanValidate(); errors.Is(err, spec.ErrNoGroundTruth) {
		return fmt.Errorf("validate needs a way to really reduce %q's work: add ground_truth (env, base_us) to it in the spec (docs/spec.md)", target)
	} else if err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	return nil
}
