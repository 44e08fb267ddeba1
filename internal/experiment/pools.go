package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pools"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/load"
)

// PoolOptions of a pool-size advice (AdvisePools). Zero values take the
// spec's workload or the defaults below.
type PoolOptions struct {
	SLA         time.Duration // required: the end-to-end response time requests must meet
	Services    []string      // services to tune; empty: the critical ones (see CriticalBusyPct)
	Connections int
	Warmup      time.Duration // before the baseline and every validation run
	Duration    time.Duration // the baseline's and every validation run's window
	Step        time.Duration // time sampled at each limit of the sweep (DefaultPoolStep)
	Levels      []int         // limits swept (default: PoolLevels of the connections)
	Validate    bool
	Repetitions int // validation runs of each size (default 3)
	Progress    io.Writer
	SpecPath    string
}

// Defaults of the sweep. Every level is held for Step after a settling
// time, and sampled every PoolSample as Sora does.
const (
	DefaultPoolStep = 2 * time.Second
	PoolSample      = 100 * time.Millisecond
	poolSettle      = 300 * time.Millisecond
	// CriticalBusyPct: a service whose CPU use in the baseline is at least
	// this share of its cores is critical and gets tuned; where none is,
	// the busiest one is.
	CriticalBusyPct = 60
	poolReps        = 3
	// minThresholdShare keeps a threshold from vanishing where the
	// upstream services use most of the SLA.
	minThresholdShare = 0.1
)

// PoolLevels returns the limits swept for a workload of n connections:
// 1, 2, 3, 4, then each about 1.5 times the last (6, 9, 14, 21, 32, ...),
// and n.
func PoolLevels(n int) []int {
	out := []int{}
	for l := 1; l <= n; {
		out = append(out, l)
		next := int(math.Round(float64(l) * 1.5))
		if l < 4 {
			next = l + 1
		}
		if next > n && l < n {
			next = n
		}
		l = next
	}
	return out
}

type poolRun struct {
	stepper
	warnings []string
	d        backend.Backend
	s        *spec.Spec
	o        PoolOptions
	mix      []load.Request
}

// AdvisePools finds the best pool size of each critical service of the
// running application d (the Sora method): a baseline run finds the
// critical services and the call graph; each critical service then has
// its admission limit swept through Levels under the spec's closed-loop
// workload while its concurrency and goodput (calls done within its
// threshold) are sampled every 100 ms; the knee of a polynomial fit of
// goodput against concurrency is its recommended size. With Validate, the
// application is measured end to end with each service's pool at the
// recommended size, half and double, and unlimited.
//
// Every pool it sets is put back as the spec sets it (none by default)
// before it returns, whatever happens.
func AdvisePools(ctx context.Context, d backend.Backend, o PoolOptions) (*report.Pools, error) {
	s := d.Spec()
	o, err := checkPools(d, o)
	if err != nil {
		return nil, err
	}
	mix, err := mixOf(s)
	if err != nil {
		return nil, err
	}
	r := &poolRun{d: d, s: s, o: o, mix: mix, stepper: stepper{w: o.Progress, start: time.Now()}}
	defer r.unlimit()

	out := r.newReport()
	// Steps: the baseline, one sweep per service, validation runs.
	r.total = 1 + max(1, len(o.Services))
	r.step = 1
	r.progress("baseline: %d connections, %v", o.Connections, o.Duration)
	base, before, after, err := r.measure(ctx)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	out.Baseline = base.load
	if base.completed == 0 {
		return nil, errors.New("baseline: no request succeeded; check the workload and the services' logs")
	}
	crit, err := r.critical(before, after, base)
	if err != nil {
		return nil, err
	}
	r.total = 1 + len(crit)
	if o.Validate {
		r.total += len(crit) * 4 * o.Repetitions
	}
	if err := r.adviseAll(ctx, crit, out); err != nil {
		return nil, err
	}
	out.Services = crit
	out.Warnings = append(r.warnings, out.Warnings...)
	out.AdviceS = time.Since(r.start).Seconds()
	if o.Validate {
		if err := r.validate(ctx, out); err != nil {
			return nil, err
		}
	}
	out.ElapsedS = time.Since(r.start).Seconds()
	return out, nil
}

// checkPools refuses what AdvisePools cannot measure and fills in the
// defaults of o.
func checkPools(d backend.Backend, o PoolOptions) (PoolOptions, error) {
	s := d.Spec()
	if o.SLA <= 0 {
		return o, errors.New("an SLA (the end-to-end response time to meet) is required")
	}
	workloadDefaults(s, &o.Connections, &o.Warmup, &o.Duration)
	if o.Step <= 0 {
		o.Step = DefaultPoolStep
	}
	if o.Step < 10*PoolSample {
		return o, &backend.SettingError{Setting: SettingStep, Value: o.Step.String(),
			Err: fmt.Errorf("too short: at least %v (10 samples)", 10*PoolSample)}
	}
	if len(o.Levels) == 0 {
		o.Levels = PoolLevels(o.Connections)
		if len(o.Levels) < 3 {
			return o, &backend.SettingError{Setting: SettingConnections, Value: strconv.Itoa(o.Connections),
				Err: fmt.Errorf("too few pool sizes to sweep (%v): give at least 3 connections (or workload.connections in the spec)", o.Levels)}
		}
	} else if len(o.Levels) < 3 {
		return o, &backend.SettingError{Setting: SettingLevels, Value: fmt.Sprint(o.Levels), Err: errors.New("sweep at least 3 pool sizes")}
	}
	if o.Repetitions <= 0 {
		o.Repetitions = poolReps
	}
	for _, name := range o.Services {
		if d.Service(name) == nil {
			return o, fmt.Errorf("no service %q is running; services: %s", name, strings.Join(s.ServiceNames(), ", "))
		}
	}
	return o, nil
}

// newReport is the pools report before anything is measured.
func (r *poolRun) newReport() *report.Pools {
	o := r.o
	out := &report.Pools{App: r.s.Name, CreatedAt: time.Now().UTC(), SLAMS: ms(o.SLA), Settings: report.PoolsSettings{
		SpecPath: o.SpecPath, Connections: o.Connections, WarmupS: o.Warmup.Seconds(), DurationS: o.Duration.Seconds(),
		StepS: o.Step.Seconds(), Levels: o.Levels, SampleMS: ms(PoolSample), Services: o.Services,
	}}
	if o.Validate {
		out.Settings.Repetitions = o.Repetitions
	}
	return out
}

// adviseAll sweeps the pool of every critical service and sets its
// samples and advice, with a warning in out where the advice is the
// largest size swept.
func (r *poolRun) adviseAll(ctx context.Context, crit []report.PoolService, out *report.Pools) error {
	o := r.o
	for i := range crit {
		c := &crit[i]
		r.step++
		r.progress("%s: sweeping its pool over %v, %v each (threshold %.1fms)", c.Service, o.Levels, o.Step, c.ThresholdMS)
		samples, err := r.sweep(ctx, c.Service, time.Duration(c.ThresholdMS*float64(time.Millisecond)))
		if err != nil {
			return fmt.Errorf("sweep of %s: %w", c.Service, err)
		}
		c.Samples = samples
		a, err := pools.Advise(samples)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Service, err)
		}
		c.Advice = a
		r.progress("%s: knee at %.1f in flight (peak %.1f): recommended pool %d", c.Service, a.Knee, a.Peak, a.Recommended)
		if a.Recommended >= slices.Max(o.Levels) {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: the recommended size is the largest swept (%d): goodput still grew there; more connections would show where it stops", c.Service, a.Recommended))
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// unlimit puts every service's pool back as the spec sets it (none by
// default), best effort.
func (r *poolRun) unlimit() {
	for _, svc := range r.d.Services() {
		if svc.Control != nil {
			svc.Control.SetPool(wire.Pool{Limit: r.specPool(svc.Name)})
		}
	}
}

// setPools sets the limits of the named services (0: none) with their
// thresholds.
func (r *poolRun) setPools(limits map[string]int, thresholds map[string]time.Duration) error {
	for name, l := range limits {
		svc := r.d.Service(name)
		if svc == nil || svc.Control == nil {
			return fmt.Errorf("service %q runs without a controller", name)
		}
		if err := svc.Control.SetPool(wire.Pool{Limit: int64(l), ThresholdNS: int64(thresholds[name])}); err != nil {
			return fmt.Errorf("set the pool of %s: %w", name, err)
		}
	}
	return nil
}

// measured is one closed-loop run of the whole application.
type measured struct {
	load      report.PoolsLoad
	completed uint64
	window    time.Duration
}

// measure runs the workload for Warmup and Duration, with the services'
// stats at the window's edges.
func (r *poolRun) measure(ctx context.Context) (measured, map[string]*wire.Stats, map[string]*wire.Stats, error) {
	var before, after map[string]*wire.Stats
	res, err := load.RunClosed(ctx, r.mix, load.WithConnections(r.o.Connections), load.WithWarmup(r.o.Warmup), load.WithDuration(r.o.Duration),
		load.WithWindowHooks(func() { before = snapshot(r.d) }, func() { after = snapshot(r.d) }))
	if err != nil {
		return measured{}, nil, nil, err
	}
	return measured{load: r.loadOf(res), completed: res.Completed, window: res.Window}, before, after, nil
}

// loadOf summarizes a run against the SLA.
func (r *poolRun) loadOf(res *load.Result) report.PoolsLoad {
	l := report.PoolsLoad{Throughput: res.Throughput, P50MS: ms(res.Latency.P50), P99MS: ms(res.Latency.P99)}
	answered := res.Completed + res.Non2xx + res.Errors
	var within int64
	slaUS := r.o.SLA.Microseconds()
	for _, b := range res.Histogram.Distribution() {
		if b.To <= slaUS {
			within += b.Count
		}
	}
	if res.Window > 0 {
		l.Goodput = float64(within) / res.Window.Seconds()
	}
	if answered > 0 {
		l.AttainmentPct = 100 * float64(within) / float64(answered)
	}
	return l
}

// serviceUse is what one service used in the pools' baseline.
type serviceUse struct {
	name            string
	busyPct         float64
	calls           uint64
	cpuPerCall      time.Duration
	callsPerRequest float64
	uninstrumented  bool // no slowhttp or slowgrpc wrapper reported from it
}

// critical picks the services to tune and works out their thresholds.
func (r *poolRun) critical(before, after map[string]*wire.Stats, base measured) ([]report.PoolService, error) {
	uses, names := r.serviceUses(before, after, base)
	pick, reason, err := r.pickCritical(uses, names)
	if err != nil {
		return nil, err
	}
	graph := callGraphOf(r.s, after)
	entry := entryService(r.s)
	var out []report.PoolService
	for _, n := range pick {
		ps, err := r.poolService(n, reason[n], uses, graph, entry)
		if err != nil {
			return nil, err
		}
		out = append(out, ps)
	}
	return out, nil
}

// serviceUses is what every service with stats at both edges of the
// baseline's window used in it, and their names in the spec's order.
func (r *poolRun) serviceUses(before, after map[string]*wire.Stats, base measured) (map[string]*serviceUse, []string) {
	uses := map[string]*serviceUse{}
	var names []string
	for _, svc := range r.s.Services {
		a, b := after[svc.Name], before[svc.Name]
		if a == nil || b == nil {
			continue
		}
		calls, cpu := statsDelta(b, a)
		// Where a cluster placed it, no core is counted (+Inf): its pod's
		// CPU limit, as the spec states it.
		cores := min(float64(max(svc.CPUs, 1)), max(r.d.Placement().CoreCount(svc.Name), 1))
		u := &serviceUse{name: svc.Name, calls: calls, busyPct: 100 * cpu.Seconds() / (base.window.Seconds() * cores), uninstrumented: !a.AgentConnected}
		if calls > 0 {
			u.cpuPerCall = cpu / time.Duration(calls)
		}
		if base.completed > 0 {
			u.callsPerRequest = float64(calls) / float64(base.completed)
		}
		uses[svc.Name] = u
		names = append(names, svc.Name)
	}
	return uses, names
}

// pickCritical picks the services asked for or, where none is, the
// critical ones (busy at least CriticalBusyPct of their cores), or the
// busiest one; it says why each was picked, and warns of critical services
// that are not instrumented.
func (r *poolRun) pickCritical(uses map[string]*serviceUse, names []string) ([]string, map[string]string, error) {
	var pick []string
	reason := map[string]string{}
	if len(r.o.Services) > 0 {
		for _, n := range r.o.Services {
			pick = append(pick, n)
			reason[n] = "asked"
		}
		return pick, reason, nil
	}
	for _, n := range names {
		u := uses[n]
		switch {
		case u.uninstrumented && u.busyPct >= CriticalBusyPct:
			r.warnings = append(r.warnings, fmt.Sprintf("%s is busy %.0f%% of its cores but not instrumented (no slowhttp or slowgrpc wrapper reported from it): its pool cannot be limited or sampled", n, u.busyPct))
		case u.calls > 0 && u.busyPct >= CriticalBusyPct:
			pick = append(pick, n)
			reason[n] = fmt.Sprintf("busy %.0f%% of its cores (>= %d%%)", u.busyPct, CriticalBusyPct)
		}
	}
	if len(pick) > 0 {
		return pick, reason, nil
	}
	busiest := ""
	for _, n := range names {
		if uses[n].calls > 0 && (busiest == "" || uses[n].busyPct > uses[busiest].busyPct) {
			busiest = n
		}
	}
	if busiest == "" {
		return nil, nil, errors.New("baseline: no instrumented service received a call")
	}
	reason[busiest] = fmt.Sprintf("the busiest service (%.0f%% of its cores; none reached %d%%)", uses[busiest].busyPct, CriticalBusyPct)
	return []string{busiest}, reason, nil
}

// callGraphOf is the services' calls to each other counted by after:
// every caller's callees, sorted.
func callGraphOf(s *spec.Spec, after map[string]*wire.Stats) map[string][]string {
	graph := map[string][]string{} // caller -> callees
	eachCall(s, after, func(caller, callee string) {
		if caller != callee && !slices.Contains(graph[caller], callee) {
			graph[caller] = append(graph[caller], callee)
		}
	})
	for _, callees := range graph {
		slices.Sort(callees) // ties between paths resolve the same way every run
	}
	return graph
}

// poolService is picked service n, with its threshold: the SLA less the
// costliest path of services before it from entry (never below
// minThresholdShare of the SLA, with a warning).
func (r *poolRun) poolService(n, reason string, uses map[string]*serviceUse, graph map[string][]string, entry string) (report.PoolService, error) {
	u := uses[n]
	if u == nil {
		return report.PoolService{}, fmt.Errorf("no figures from service %q in the baseline", n)
	}
	if u.uninstrumented {
		return report.PoolService{}, fmt.Errorf("service %q is not instrumented (no slowhttp or slowgrpc wrapper reported from it): its pool cannot be limited or sampled", n)
	}
	if u.calls == 0 {
		return report.PoolService{}, fmt.Errorf("service %q received no call in the baseline: the workload does not reach it", n)
	}
	path, upstream := longestUpstream(graph, entry, n, func(m string) time.Duration {
		if v := uses[m]; v != nil {
			return v.cpuPerCall
		}
		return 0
	})
	thr := r.o.SLA - upstream
	var warn string
	if floor := time.Duration(float64(r.o.SLA) * minThresholdShare); thr < floor {
		warn = fmt.Sprintf("%s: the services before it use %v of the %v SLA; its threshold is kept at %v", n, upstream, r.o.SLA, floor)
		thr = floor
	}
	ps := report.PoolService{Service: n, Reason: reason, BusyPct: u.busyPct, CallsPerRequest: u.callsPerRequest,
		ThresholdMS: ms(thr), UpstreamMS: ms(upstream), Upstream: path}
	if warn != "" {
		r.progress("warning: %s", warn)
		r.warnings = append(r.warnings, warn)
	}
	return ps, nil
}

// longestUpstream returns the services before target on the path from
// entry whose summed cost is largest, and that sum (the call graph is a
// DAG; a cycle is cut where it closes).
func longestUpstream(graph map[string][]string, entry, target string, cost func(string) time.Duration) ([]string, time.Duration) {
	if entry == "" || entry == target {
		return nil, 0
	}
	type best struct {
		ok   bool
		sum  time.Duration
		path []string
	}
	memo := map[string]best{}
	onPath := map[string]bool{}
	var walk func(n string) best
	walk = func(n string) best {
		if n == target {
			return best{ok: true}
		}
		if b, done := memo[n]; done {
			return b
		}
		if onPath[n] {
			return best{}
		}
		onPath[n] = true
		var b best
		for _, m := range graph[n] {
			if c := walk(m); c.ok && (!b.ok || c.sum+cost(n) > b.sum) {
				b = best{ok: true, sum: c.sum + cost(n), path: append([]string{n}, c.path...)}
			}
		}
		onPath[n] = false
		memo[n] = b
		return b
	}
	b := walk(entry)
	return b.path, b.sum
}

// sweep holds the service's limit at every level in turn under a steady
// load, sampling its concurrency and goodput every PoolSample.
func (r *poolRun) sweep(ctx context.Context, name string, threshold time.Duration) ([]pools.Sample, error) {
	svc := r.d.Service(name)
	total := time.Duration(len(r.o.Levels))*(poolSettle+r.o.Step) + r.o.Warmup
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loadErr := make(chan error, 1)
	go func() {
		_, err := load.RunClosed(loadCtx, r.mix, load.WithConnections(r.o.Connections), load.WithDuration(total+time.Minute))
		loadErr <- err
	}()
	defer func() {
		stopLoad()
		<-loadErr
	}()
	if !sleepCtx(ctx, r.o.Warmup) {
		return nil, ctx.Err()
	}
	var samples []pools.Sample
	for _, l := range r.o.Levels {
		if err := svc.Control.SetPool(wire.Pool{Limit: int64(l), ThresholdNS: int64(threshold)}); err != nil {
			return nil, err
		}
		if !sleepCtx(ctx, poolSettle) {
			return nil, ctx.Err()
		}
		prev, err := svc.Control.Stats()
		if err != nil {
			return nil, err
		}
		if prev.Limit != int64(l) {
			return nil, fmt.Errorf("the instrumentation of %s did not take the pool size %d (it reports %d): is its connection to the controller up? (see its log)", name, l, prev.Limit)
		}
		next := time.Now().Add(PoolSample)
		for end := time.Now().Add(r.o.Step); time.Now().Before(end); next = next.Add(PoolSample) {
			select {
			case err := <-loadErr:
				if err == nil {
					err = errors.New("the load generator stopped early")
				}
				loadErr <- err // for the deferred wait
				return nil, fmt.Errorf("load: %w", err)
			default:
			}
			if !sleepCtx(ctx, time.Until(next)) {
				return nil, ctx.Err()
			}
			cur, err := svc.Control.Stats()
			if err != nil {
				return nil, err
			}
			dt := time.Duration(cur.PoolAtUnixNS - prev.PoolAtUnixNS).Seconds()
			// A negative concurrency cannot be: a sample that shows one
			// (the counters of a process that restarted) is dropped.
			if dt > 0 && cur.Done >= prev.Done && cur.BusyNS >= prev.BusyNS {
				samples = append(samples, pools.Sample{
					Limit:       l,
					Concurrency: float64(cur.BusyNS-prev.BusyNS) / 1e9 / dt,
					Goodput:     float64(cur.Good-prev.Good) / dt,
				})
			}
			prev = cur
		}
	}
	return samples, svc.Control.SetPool(wire.Pool{Limit: r.specPool(name)})
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// validate measures, for every tuned service, the application with that
// service's pool at the recommended size, half, double and unlimited (the
// others at their recommended sizes), the runs interleaved.
func (r *poolRun) validate(ctx context.Context, out *report.Pools) error {
	thresholds := map[string]time.Duration{}
	rec := map[string]int{}
	for _, s := range out.Services {
		thresholds[s.Service] = time.Duration(s.ThresholdMS * float64(time.Millisecond))
		rec[s.Service] = s.Recommended
	}
	for i := range out.Services {
		s := &out.Services[i]
		sizes := []report.PoolTrial{
			{Label: "recommended", Size: s.Recommended},
			{Label: "half", Size: max(1, s.Recommended/2)},
			{Label: "double", Size: min(2*s.Recommended, spec.MaxPool)},
			{Label: "unlimited", Size: 0},
		}
		for rep := 0; rep < r.o.Repetitions; rep++ {
			for j := range sizes {
				limits := map[string]int{}
				for k, v := range rec {
					limits[k] = v
				}
				limits[s.Service] = sizes[j].Size
				if err := r.setPools(limits, thresholds); err != nil {
					return err
				}
				r.step++
				m, _, _, err := r.measure(ctx)
				if err != nil {
					return fmt.Errorf("validation of %s at %s: %w", s.Service, sizes[j].Label, err)
				}
				sizes[j].Runs = append(sizes[j].Runs, m.load)
				r.progress("%s pool %s (%d): %.0f req/s, %.0f within the SLA (%.1f%%)", s.Service, sizes[j].Label, sizes[j].Size,
					m.load.Throughput, m.load.Goodput, m.load.AttainmentPct)
			}
		}
		v := &report.PoolValidation{}
		for j := range sizes {
			sizes[j].Mean = report.MeanLoad(sizes[j].Runs)
			var g []float64
			for _, run := range sizes[j].Runs {
				g = append(g, run.Goodput)
			}
			if sizes[j].Mean.Goodput > 0 {
				sizes[j].GoodputStdErrPct = 100 * relStdErr(g)
			}
		}
		v.Sizes = sizes
		v.RecommendedGoodput, v.HalfGoodput, v.DoubleGoodput, v.UnlimitedGoodput = sizes[0].Mean.Goodput, sizes[1].Mean.Goodput, sizes[2].Mean.Goodput, sizes[3].Mean.Goodput
		if best := max(v.RecommendedGoodput, v.HalfGoodput, v.DoubleGoodput); best > 0 {
			v.RecommendedShareOfBestPct = 100 * v.RecommendedGoodput / best
		}
		s.Validation = v
	}
	return nil
}
