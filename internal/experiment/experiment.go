package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/report"
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
	MaxPause       time.Duration
	SpecPath       string
	Progress       io.Writer // progress lines; nil for none
	// Validate also measures the ground truth of every point: the target
	// restarted with its work really reduced (the spec's ground_truth knob).
	Validate bool
	// Uncoordinated replaces rounds by local pausing: every service pauses
	// on its own, d c1/(q1 ci) per call of its own, in batches. It exists
	// to measure what coordination buys; predictions use rounds.
	Uncoordinated bool
}

// Measure runs one measurement window: without slowdown when batch is 0,
// otherwise with rounds every batch target calls and the given pause per
// round on every other service. It returns the load generator's result and
// the target controller's counters after the run (nil without slowdown).
func (r *Runner) Measure(ctx context.Context, batch int, pause time.Duration, neighbours map[string][]string) (*load.Result, *wire.Stats, error) {
	var sd *slowdown
	if batch > 0 {
		sd = &slowdown{batch: batch, pause: pause}
	}
	s, err := r.run(ctx, sd, neighbours, r.opts.Warmup, false)
	if err != nil {
		return nil, nil, err
	}
	return s.res, s.rounds[r.opts.Target], nil
}

// Thresholds for flags.
const (
	errorShare      = 0.01 // errors+non-2xx above this share of responses
	starvedRatio    = 0.8  // target busy during pauses below this share of its overall busy
	pauseShortfall  = 0.9  // actual/requested pause below this
	noisySpreadPct  = 10
	maxAutoBatch    = 100
	maxAutoPause    = 10 * time.Millisecond
	queueShareBatch = 0.25 // share of the connections the target may drain during one pause
)

// Runner runs experiments on one deployment.
type Runner struct {
	prof  *profile // set by pre-profiling
	d     *local.Deployment
	spec  *spec.Spec
	opts  Options
	mix   []load.Request
	epoch uint64
	step  int
	steps int
	start time.Time
}

// New validates options against the deployment.
func New(d *local.Deployment, opts Options) (*Runner, error) {
	s := d.Spec
	if err := s.CheckTarget(opts.Target); err != nil {
		return nil, err
	}
	if d.Service(opts.Target) == nil {
		return nil, fmt.Errorf("target %q is not running", opts.Target)
	}
	if opts.Connections <= 0 {
		opts.Connections = s.Workload.Connections
	}
	if opts.Warmup <= 0 {
		opts.Warmup = s.Workload.Warmup.Duration
	}
	if opts.Duration <= 0 {
		opts.Duration = s.Workload.Duration.Duration
	}
	if opts.Repetitions <= 0 {
		opts.Repetitions = 3
	}
	if opts.MaxPause <= 0 {
		opts.MaxPause = controller.DefaultMaxPause
	}
	if opts.Batch < 0 {
		return nil, errors.New("batch must be positive")
	}
	if opts.Validate {
		if svc, _ := s.Service(opts.Target); svc.GroundTruth == nil {
			return nil, fmt.Errorf("validate needs a way to really reduce %q's work: add ground_truth (env, base_us) to it in the spec (docs/spec.md)", opts.Target)
		}
	}
	r := &Runner{d: d, spec: s, opts: opts, epoch: uint64(time.Now().UnixNano())}
	for _, q := range s.Workload.Requests {
		h := make(map[string][]string, len(q.Headers))
		for k, v := range q.Headers {
			h[k] = []string{v}
		}
		r.mix = append(r.mix, load.Request{Name: q.Name, Method: q.Method, URL: s.URL(q), Header: h, Body: []byte(q.Body), Weight: q.Weight})
	}
	if err := load.Validate(r.mix); err != nil {
		return nil, err
	}
	return r, nil
}

// sample is one measured run.
type sample struct {
	res      *load.Result
	before   map[string]*wire.Stats // at the edges of the measurement window
	after    map[string]*wire.Stats
	idle0    map[string]*wire.Stats // before the load started and after it drained (pre-profiling only)
	idle1    map[string]*wire.Stats
	rounds   map[string]*wire.Stats // controller counters after the slowdown stopped
	window   time.Duration
	slowdown *slowdown
}

type slowdown struct {
	batch int
	pause time.Duration
}

func (s *sample) delta(svc string) (calls uint64, cpu time.Duration) {
	return statsDelta(s.before[svc], s.after[svc])
}

// idleDelta counts from before the load started to after it drained:
// nothing moves while these snapshots are taken, so counts read from
// different services, at slightly different moments, agree exactly.
func (s *sample) idleDelta(svc string) (calls uint64, cpu time.Duration) {
	if s.idle0 == nil {
		return s.delta(svc)
	}
	return statsDelta(s.idle0[svc], s.idle1[svc])
}

func statsDelta(b, a *wire.Stats) (calls uint64, cpu time.Duration) {
	if a == nil || b == nil {
		return 0, 0
	}
	return a.Calls - b.Calls, time.Duration(a.CPUNS - b.CPUNS)
}

// responses counts the user requests that completed in the window, failed
// or not: all of them reached the services.
func (s *sample) responses() uint64 { return s.res.Completed + s.res.Non2xx }

func (r *Runner) progress(format string, args ...any) {
	if r.opts.Progress == nil {
		return
	}
	prefix := ""
	if r.steps > 0 {
		eta := ""
		if r.step > 1 {
			per := time.Since(r.start) / time.Duration(r.step-1)
			eta = " ETA " + (per * time.Duration(r.steps-r.step+1)).Round(time.Second).String()
		}
		prefix = fmt.Sprintf("[%2d/%d%s] ", r.step, r.steps, eta)
	}
	fmt.Fprintf(r.opts.Progress, prefix+format+"\n", args...)
}

// snapshot reads every controller's stats in parallel.
func (r *Runner) snapshot() map[string]*wire.Stats {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]*wire.Stats{}
	for _, svc := range r.d.Services() {
		if svc.Control == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, err := svc.Control.Stats(); err == nil {
				mu.Lock()
				out[svc.Name] = st
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// drainTime lets in-flight work finish before the idle snapshot.
const drainTime = 300 * time.Millisecond

// run measures one window, with a slowdown when sd is not nil. With idle, it
// also snapshots the counters before the load starts and after it drained.
func (r *Runner) run(ctx context.Context, sd *slowdown, neighbours map[string][]string, warmup time.Duration, idle bool) (*sample, error) {
	svcs := r.d.Services()
	for _, svc := range svcs {
		if svc.Control != nil {
			if err := svc.Control.Reset(); err != nil {
				return nil, fmt.Errorf("reset %s: %w", svc.Name, err)
			}
		}
	}
	if sd != nil {
		if r.d.Service(r.opts.Target).Control == nil {
			return nil, errors.New("a slowdown needs the services to run under controllers")
		}
		r.epoch++
		// Non-targets first, target last: every pauser is listening before
		// the first round.
		sort.SliceStable(svcs, func(i, j int) bool { return svcs[j].Name == r.opts.Target && svcs[i].Name != r.opts.Target })
		for _, svc := range svcs {
			if svc.Control == nil {
				continue
			}
			cf := wire.Configure{Epoch: r.epoch, Target: svc.Name == r.opts.Target, Batch: sd.batch, PausePerRoundNS: int64(sd.pause)}
			if r.opts.Uncoordinated && !cf.Target && r.prof != nil {
				// Same pause per call as rounds give, applied locally:
				// B calls of this service take B d c1/(q1 ci).
				ci := r.prof.ci[svc.Name]
				if ci <= 0 {
					continue
				}
				cf.Local = true
				cf.PausePerRoundNS = int64(float64(sd.pause) * r.prof.c1 / ci)
			}
			for _, n := range neighbours[svc.Name] {
				if r.opts.Uncoordinated {
					break // no rounds travel: every service paces itself
				}
				if ns := r.d.Service(n); ns != nil && ns.Control != nil {
					cf.Neighbours = append(cf.Neighbours, wire.Neighbour{Name: n, Addr: ns.Control.Addr})
				}
			}
			if err := svc.Control.Configure(cf); err != nil {
				return nil, fmt.Errorf("configure %s: %w", svc.Name, err)
			}
			if err := svc.Control.Start(); err != nil {
				return nil, fmt.Errorf("start slowdown on %s: %w", svc.Name, err)
			}
		}
	}
	s := &sample{slowdown: sd}
	if idle {
		s.idle0 = r.snapshot()
	}
	var t0 time.Time
	res, err := load.RunClosed(ctx, r.mix,
		load.WithConnections(r.opts.Connections), load.WithWarmup(warmup), load.WithDuration(r.opts.Duration),
		load.WithWindowHooks(func() { s.before = r.snapshot(); t0 = time.Now() }, func() { s.window = time.Since(t0); s.after = r.snapshot() }))
	if sd != nil {
		// Target first: no new rounds, then everyone resumes.
		slices.Reverse(svcs)
		for _, svc := range svcs {
			if svc.Control != nil {
				svc.Control.Stop()
			}
		}
		s.rounds = r.snapshot()
	}
	if err != nil {
		return nil, err
	}
	if idle {
		// Requests cancelled at the end of the run may still be working
		// their way through the services.
		time.Sleep(drainTime)
		s.idle1 = r.snapshot()
	}
	s.res = res
	return s, nil
}

// Run runs the whole experiment: pre-profiling, then Repetitions rounds
// of a baseline and every point.
func (r *Runner) Run(ctx context.Context) (*report.Results, error) {
	o := r.opts
	if len(o.Reductions) == 0 {
		return nil, errors.New("no reductions given")
	}
	if r.d.Service(o.Target).Control == nil {
		return nil, fmt.Errorf("target %q does not run under a controller", o.Target)
	}
	out := &report.Results{
		Version: report.Version, Kind: report.KindPredict, App: r.spec.Name, Target: o.Target, CreatedAt: time.Now().UTC(),
		Settings: report.Settings{
			Spec: o.SpecPath, Reductions: o.ReductionsText, Batch: o.Batch, Connections: o.Connections,
			WarmupS: o.Warmup.Seconds(), DurationS: o.Duration.Seconds(), Repetitions: o.Repetitions,
			MaxPauseMS: float64(o.MaxPause) / 1e6, Placement: map[string][]int{}, LoadCPUs: r.d.Placement.OtherCPUs, NumCPU: runtime.NumCPU(),
		},
	}
	out.Settings.Host, _ = os.Hostname()
	for _, svc := range r.d.Services() {
		out.Settings.Placement[svc.Name] = r.d.Placement.CPUs(svc.Name)
	}
	if w := r.d.Placement.Warning; w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	if o.Validate {
		out.Kind = report.KindValidate
	}
	perRep := 1 + len(o.Reductions)
	if o.Validate {
		perRep += len(o.Reductions)
	}
	r.steps = o.Repetitions * perRep
	r.start = time.Now()

	// Pre-profiling doubles as the first baseline repetition; its longer
	// warm-up also warms connection pools and caches after start-up.
	r.step = 1
	r.progress("pre-profiling: baseline with %d connections", o.Connections)
	pre, err := r.run(ctx, nil, nil, 2*o.Warmup, true)
	if err != nil {
		return nil, err
	}
	prof, err := r.profile(pre)
	if err != nil {
		return nil, err
	}
	r.prof = prof
	out.C1, out.Q1, out.U1US, out.Neighbours = prof.c1, prof.q1, prof.u1.Seconds()*1e6, prof.neighbours
	out.Warnings = append(out.Warnings, prof.warnings...)
	r.progress("baseline %.0f req/s; c1 = %.3f target calls per request, q1 = %g, u1 = %.1f µs per call", pre.res.Throughput, prof.c1, prof.q1, out.U1US)

	type pointAcc struct {
		d       time.Duration
		sd      slowdown
		samples []*sample
		truth   []float64
	}
	points := make([]*pointAcc, len(o.Reductions))
	for i, red := range o.Reductions {
		dSec, err := red.Resolve(prof.u1.Seconds())
		if err != nil {
			return nil, err
		}
		d := time.Duration(dSec * 1e9)
		b := o.Batch
		if b == 0 {
			b = chooseBatch(d, prof.u1, prof.q1, o.Connections)
		}
		pause := model.PausePerRound(b, d, prof.q1)
		if pause > o.MaxPause {
			return nil, fmt.Errorf("reduction %s needs a pause of %v per round at batch %d, over the hard cap %v: lower --batch or raise --max-pause", red.Text, pause, b, o.MaxPause)
		}
		points[i] = &pointAcc{d: d, sd: slowdown{batch: b, pause: pause}}
	}
	baselines := []*sample{pre}
	for rep := 0; rep < o.Repetitions; rep++ {
		if rep > 0 {
			r.step++
			s, err := r.run(ctx, nil, nil, o.Warmup, false)
			if err != nil {
				return nil, err
			}
			baselines = append(baselines, s)
			r.progress("rep %d/%d baseline: %.0f req/s", rep+1, o.Repetitions, s.res.Throughput)
		}
		// Alternate the order of points between repetitions so that drift
		// does not favour either end of the curve.
		order := make([]int, len(points))
		for i := range order {
			order[i] = i
		}
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			p := points[i]
			r.step++
			s, err := r.run(ctx, &p.sd, prof.neighbours, o.Warmup, false)
			if err != nil {
				return nil, err
			}
			p.samples = append(p.samples, s)
			pred, perr := model.Predict(s.res.Throughput, p.d.Seconds(), prof.c1, prof.q1)
			predText := fmt.Sprintf("%.0f req/s", pred)
			if perr != nil {
				predText = "infeasible"
			}
			r.progress("rep %d/%d %s (d = %v, pause %v every %d calls): %.0f req/s -> predicted %s",
				rep+1, o.Repetitions, o.Reductions[i].Text, p.d.Round(time.Microsecond), p.sd.pause.Round(time.Microsecond), p.sd.batch, s.res.Throughput, predText)
		}
		if o.Validate {
			for _, i := range order {
				p := points[i]
				r.step++
				tput, err := r.truth(ctx, p.d)
				if err != nil {
					return nil, err
				}
				p.truth = append(p.truth, tput)
				r.progress("rep %d/%d %s ground truth (target's work really reduced by %v): %.0f req/s",
					rep+1, o.Repetitions, o.Reductions[i].Text, p.d.Round(time.Microsecond), tput)
			}
			if err := r.restartTarget(ctx, 0); err != nil {
				return nil, err
			}
		}
	}
	out.Baseline = baselineOf(baselines)
	var sq, maxAbs float64
	for _, p := range points {
		pt := r.point(p.d, p.sd, p.samples, prof)
		if o.Validate {
			t := report.Median(p.truth)
			pt.TrueRPS, pt.TrueRuns = &t, p.truth
			if pt.PredictedRPS > 0 && t > 0 {
				e := (pt.PredictedRPS - t) / t * 100
				pt.ErrorPct = &e
				sq += e * e
				maxAbs = max(maxAbs, math.Abs(e))
			}
		}
		out.Points = append(out.Points, pt)
	}
	if o.Validate {
		n := 0
		for _, p := range out.Points {
			if p.ErrorPct != nil {
				n++
			}
		}
		if n > 0 {
			rmse := math.Sqrt(sq / float64(n))
			out.RMSEPct, out.MaxAbsErrorPct = &rmse, &maxAbs
		}
	}
	return out, nil
}

// truth measures the application with the target's work really reduced by
// d: the target is restarted with its ground-truth knob set.
func (r *Runner) truth(ctx context.Context, d time.Duration) (float64, error) {
	if err := r.restartTarget(ctx, d); err != nil {
		return 0, err
	}
	s, err := r.run(ctx, nil, nil, r.opts.Warmup, false)
	if err != nil {
		return 0, err
	}
	return s.res.Throughput, nil
}

func (r *Runner) restartTarget(ctx context.Context, d time.Duration) error {
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
//   - Burstiness: long pauses make every other service alternate between
//     stopped and flat out, and the slowdown run loses throughput the model
//     does not account for. On the demo at an 80% reduction, pauses of about
//     10, 40 and 100 ms measured 1.6%, 6% and 10% below the ideal slowdown
//     throughput, so pauses are kept to about maxAutoPause.
func chooseBatch(d, u1 time.Duration, q1 float64, connections int) int {
	if d <= 0 || u1 <= 0 {
		return maxAutoBatch
	}
	b := int(queueShareBatch * float64(connections) * float64(u1) / float64(d))
	b = min(b, int(float64(maxAutoPause)*q1/float64(d)))
	return max(1, min(maxAutoBatch, b))
}

type profile struct {
	ci         map[string]float64 // calls to each service per user request
	c1, q1     float64
	u1         time.Duration
	neighbours map[string][]string
	warnings   []string
}

func (r *Runner) profile(s *sample) (*profile, error) {
	calls, cpu := s.idleDelta(r.opts.Target)
	n := s.responses()
	if n == 0 {
		return nil, fmt.Errorf("no successful requests during pre-profiling (errors: %d): check the workload and the services' logs", s.res.Errors)
	}
	if calls == 0 {
		return nil, fmt.Errorf("target %q received no calls during pre-profiling: is it on the path of the workload's requests?", r.opts.Target)
	}
	p := &profile{u1: cpu / time.Duration(calls), ci: map[string]float64{}}
	// Calls per user request: arrivals at each service over arrivals at the
	// entry service, both counted between idle moments so that nothing in
	// flight skews them. Without an instrumented entry, fall back to the
	// window's responses at the load generator.
	ratio := func(svc string) float64 {
		c, _ := s.delta(svc)
		return float64(c) / float64(n)
	}
	if entry := r.entryService(); entry != "" {
		if ecalls, _ := s.idleDelta(entry); ecalls > 0 {
			ratio = func(svc string) float64 {
				c, _ := s.idleDelta(svc)
				return float64(c) / float64(ecalls)
			}
		}
	}
	p.c1 = ratio(r.opts.Target)
	for name := range s.after {
		p.ci[name] = ratio(name)
	}
	p.q1 = float64(len(r.d.Placement.CPUs(r.opts.Target)))
	if sp, ok := r.spec.Service(r.opts.Target); ok && float64(sp.CPUs) < p.q1 {
		p.q1 = float64(sp.CPUs)
	}
	if p.u1 <= 0 {
		return nil, fmt.Errorf("target %q used no measurable CPU during pre-profiling (%d calls)", r.opts.Target, calls)
	}
	p.neighbours, p.warnings = r.callGraph(s.after)
	return p, nil
}

// entryService names the service that the spec's entry URL reaches, or "".
func (r *Runner) entryService() string {
	u, err := url.Parse(r.spec.Entry)
	if err != nil {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, svc := range r.spec.Services {
		if strconv.Itoa(svc.Port) == port {
			return svc.Name
		}
	}
	return ""
}

// callGraph builds the undirected call graph from the instrumentation's
// downstream counts, mapping addresses to services by port. Services that
// the graph does not connect to the target are linked to the target
// directly, so that every service still receives every round.
func (r *Runner) callGraph(stats map[string]*wire.Stats) (map[string][]string, []string) {
	byPort := map[string]string{}
	for _, svc := range r.spec.Services {
		byPort[strconv.Itoa(svc.Port)] = svc.Name
	}
	edges := map[string]map[string]bool{}
	link := func(a, b string) {
		if a == b {
			return
		}
		for _, p := range [][2]string{{a, b}, {b, a}} {
			if edges[p[0]] == nil {
				edges[p[0]] = map[string]bool{}
			}
			edges[p[0]][p[1]] = true
		}
	}
	for name, st := range stats {
		for addr := range st.Downstream {
			if _, port, err := net.SplitHostPort(addr); err == nil {
				if callee, ok := byPort[port]; ok {
					link(name, callee)
				}
			}
		}
	}
	// Reachability from the target.
	seen := map[string]bool{r.opts.Target: true}
	queue := []string{r.opts.Target}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for m := range edges[n] {
			if !seen[m] {
				seen[m] = true
				queue = append(queue, m)
			}
		}
	}
	var warnings []string
	for _, svc := range r.spec.Services {
		if !seen[svc.Name] {
			link(r.opts.Target, svc.Name)
			warnings = append(warnings, fmt.Sprintf("service %q is not connected to the target in the observed call graph; it receives rounds from the target directly", svc.Name))
		}
	}
	out := map[string][]string{}
	for a, bs := range edges {
		for b := range bs {
			out[a] = append(out[a], b)
		}
		sort.Strings(out[a])
	}
	return out, warnings
}

func baselineOf(samples []*sample) report.Baseline {
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
	return b
}

func (r *Runner) point(d time.Duration, sd slowdown, samples []*sample, prof *profile) report.Point {
	p := report.Point{
		ReductionPct:    model.PercentOf(d.Seconds(), prof.u1.Seconds()),
		ReductionUS:     d.Seconds() * 1e6,
		Batch:           sd.batch,
		PausePerRoundUS: float64(sd.pause) / 1e3,
	}
	flags := map[string]bool{}
	var busyIn, busyAll []float64
	var requested, actual int64
	for _, s := range samples {
		p.SlowdownRuns = append(p.SlowdownRuns, s.res.Throughput)
		pred, err := model.Predict(s.res.Throughput, d.Seconds(), prof.c1, prof.q1)
		if err != nil {
			flags[report.FlagInfeasible] = true
		}
		p.PredictedRuns = append(p.PredictedRuns, pred)
		p.Errors += s.res.Errors
		p.Non2xx += s.res.Non2xx
		if total := s.res.Completed + s.res.Errors + s.res.Non2xx; total > 0 && float64(s.res.Errors+s.res.Non2xx) > errorShare*float64(total) {
			flags[report.FlagErrors] = true
		}
		tgt := s.rounds[r.opts.Target]
		if tgt == nil {
			continue
		}
		p.Rounds += tgt.RoundsStarted
		if tgt.PauseWindowNS > 0 {
			busyIn = append(busyIn, float64(tgt.PauseBusyNS)/float64(tgt.PauseWindowNS)/prof.q1)
		}
		if _, cpu := s.delta(r.opts.Target); s.window > 0 {
			busyAll = append(busyAll, float64(cpu)/float64(s.window)/prof.q1)
		}
		for name, st := range s.rounds {
			if name == r.opts.Target {
				continue
			}
			requested += st.PauseRequestedNS
			actual += st.PauseActualNS
			if st.ForwardErrors > 0 || (!r.opts.Uncoordinated && st.RoundsReceived < tgt.RoundsStarted) {
				flags[report.FlagNeighbourUnreachable] = true
			}
		}
		if tgt.ForwardErrors > 0 {
			flags[report.FlagNeighbourUnreachable] = true
		}
	}
	p.SlowdownRPS = report.Median(p.SlowdownRuns)
	if flags[report.FlagInfeasible] {
		// A prediction from some runs only would be biased upwards.
		p.PredictedRPS = 0
	} else {
		p.PredictedRPS = report.Median(p.PredictedRuns)
		p.SpreadPct = report.SpreadPct(p.PredictedRuns)
	}
	others := float64(max(1, len(r.d.Services())-1))
	p.PauseRequestedMS = float64(requested) / 1e6 / others / float64(len(samples))
	p.PauseActualMS = float64(actual) / 1e6 / others / float64(len(samples))
	p.TargetBusyInPause = report.Median(busyIn)
	p.TargetBusyOverall = report.Median(busyAll)
	if d > 0 && p.TargetBusyInPause > 0 && p.TargetBusyInPause < starvedRatio*p.TargetBusyOverall {
		flags[report.FlagTargetStarved] = true
	}
	if requested > 0 && float64(actual) < pauseShortfall*float64(requested) {
		flags[report.FlagPauseShortfall] = true
	}
	if p.SpreadPct > noisySpreadPct {
		flags[report.FlagNoisy] = true
	}
	p.Flags = []string{}
	for f := range flags {
		p.Flags = append(p.Flags, f)
	}
	sort.Strings(p.Flags)
	return p
}
