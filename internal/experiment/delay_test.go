package experiment

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/load"
)

// delaySample is a 1 s slowdown run at 500 req/s (500 requests) in which
// the target used targetBusy of its core, and the paused services (by
// name) received the given pause, whole window.
func delaySample(targetBusy float64, paused map[string]time.Duration, cpu map[string]time.Duration) *sample {
	const window = time.Second
	s := &sample{
		res:      &load.Result{Throughput: 500, Completed: 500},
		before:   map[string]*wire.Stats{"t": {}},
		after:    map[string]*wire.Stats{"t": {CPUNS: int64(targetBusy * float64(window))}},
		rounds:   map[string]*wire.Stats{"t": {RoundsStarted: 100}},
		window:   window,
		slowdown: &slowdown{batch: 10, pause: 4 * time.Millisecond},
	}
	for name, p := range paused {
		if s.after[name] == nil {
			s.before[name], s.after[name] = &wire.Stats{}, &wire.Stats{CPUNS: int64(cpu[name])}
		}
		s.after[name].PauseActualNS = int64(p)
	}
	return s
}

// The prediction takes off the delay the pauses really inserted where the
// paused services bound the run, and the model's d·c1/q1 where the target
// bound it, nothing was counted, or the nominal delay was asked for.
func TestDelayUsed(t *testing.T) {
	const d = 400 * time.Microsecond // nominal: 400 µs per request (c1 = q1 = 1)
	nominal := 1 / (1/500.0 - 400e-6)
	measured := 1 / (1/500.0 - 480e-6) // 240 ms over 500 requests
	tests := []struct {
		name       string
		method     pause.Method
		dedicated  bool
		targetBusy float64
		paused     map[string]time.Duration
		cpu        map[string]time.Duration
		nominalAsk bool
		want       float64
		wantUsed   string
		wantBy     string
	}{
		{"held cores, others bound", pause.MethodCores, false, 0.6, map[string]time.Duration{"t": 240 * time.Millisecond}, nil, false, measured, report.DelayMeasured, "the held cores"},
		{"held cores, target bound", pause.MethodCores, false, 0.97, map[string]time.Duration{"t": 240 * time.Millisecond}, nil, false, nominal, report.DelayNominal, "the held cores"},
		{"held cores, nominal asked", pause.MethodCores, false, 0.6, map[string]time.Duration{"t": 240 * time.Millisecond}, nil, true, nominal, report.DelayNominal, "the held cores"},
		{"frozen, others bound", pause.MethodCgroup, false, 0.6, map[string]time.Duration{"t": 240 * time.Millisecond}, nil, false, measured, report.DelayMeasured, "the frozen services"},
		{"nothing counted", pause.MethodCores, false, 0.6, nil, nil, false, nominal, report.DelayNominal, "the held cores"},
		{"signals, shared cores: the median service", pause.MethodSignal, false, 0.6,
			map[string]time.Duration{"a": 200 * time.Millisecond, "b": 240 * time.Millisecond, "c": 300 * time.Millisecond}, nil, false,
			measured, report.DelayMeasured, "the shared cores (median of the paused services)"},
		{"signals, dedicated: the busiest service", pause.MethodSignal, true, 0.6,
			map[string]time.Duration{"a": 240 * time.Millisecond, "b": 100 * time.Millisecond},
			map[string]time.Duration{"a": 700 * time.Millisecond, "b": 300 * time.Millisecond}, false,
			measured, report.DelayMeasured, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
			if tt.dedicated {
				pl.Services = map[string][]int{"a": {2}, "b": {3}}
			}
			r := &Runner{
				prof:   &profile{c1: 1, q1: 1, u1: time.Millisecond},
				d:      placed{pl: pl},
				method: tt.method,
				opts:   Options{Target: "t", Tuning: Tuning{NominalDelay: tt.nominalAsk}},
			}
			paused := tt.paused
			if paused == nil {
				paused = map[string]time.Duration{}
			}
			s := delaySample(tt.targetBusy, paused, tt.cpu)
			if tt.paused == nil {
				delete(s.after, "t")
				delete(s.before, "t")
			}
			got, err := r.predict(s, d)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tt.want) > 1e-6*tt.want {
				t.Errorf("predict = %.2f, want %.2f", got, tt.want)
			}
			p := r.point(d, &pointRuns{sd: *s.slowdown, samples: []*sample{s}}, nil)
			if p.DelayUsed != tt.wantUsed || math.Abs(p.DelayNominalUS-400) > 1e-6 {
				t.Errorf("delay_used %q, nominal %.1f µs; want %q, 400", p.DelayUsed, p.DelayNominalUS, tt.wantUsed)
			}
			if tt.paused != nil && (p.Diagnostics.DelayMeasuredBy != tt.wantBy || math.Abs(p.DelayMeasuredUS-480) > 1e-6) {
				t.Errorf("measured %.1f µs by %q, want 480 by %q", p.DelayMeasuredUS, p.Diagnostics.DelayMeasuredBy, tt.wantBy)
			}
			if math.Abs(p.Diagnostics.PredictedNominalRPS-nominal) > 1e-6*nominal {
				t.Errorf("predicted_nominal_rps %.2f, want %.2f", p.Diagnostics.PredictedNominalRPS, nominal)
			}
		})
	}
}

// Every feasible point carries a 90% interval around its prediction that
// takes in the prediction with the other delay; a starved target's point
// is a lower bound, an infeasible one unknown.
func TestPointInterval(t *testing.T) {
	const d = 400 * time.Microsecond
	tests := []struct {
		name     string
		busy     []float64 // target busy per run
		paused   time.Duration
		base     []float64 // baseline runs
		starved  bool
		want     string
		wantHigh bool
	}{
		{"two runs", []float64{0.6, 0.6}, 240 * time.Millisecond, []float64{500, 500}, false, report.EstimateValue, true},
		{"one run, noisy baseline", []float64{0.6}, 240 * time.Millisecond, []float64{480, 520}, false, report.EstimateValue, true},
		{"one run, one baseline run", []float64{0.6}, 240 * time.Millisecond, []float64{500}, false, report.EstimateValue, true},
		{"starved", []float64{0.6, 0.6}, 240 * time.Millisecond, []float64{500, 500}, true, report.EstimateLowerBound, false},
		{"infeasible", []float64{0.6}, 2 * time.Second, []float64{500, 500}, false, report.EstimateUnknown, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{
				prof:   &profile{c1: 1, q1: 1, u1: time.Millisecond},
				d:      placed{pl: backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}},
				method: pause.MethodCores,
				opts:   Options{Target: "t"},
			}
			for _, b := range tt.base {
				r.base = append(r.base, &sample{res: &load.Result{Throughput: b, Completed: uint64(b)}, window: time.Second})
			}
			var samples []*sample
			for i, busy := range tt.busy {
				s := delaySample(busy, map[string]time.Duration{"t": tt.paused}, nil)
				// Two runs a little apart, so that the runs' noise shows.
				s.res.Throughput += float64(10 * i)
				if tt.starved {
					s.rounds["t"].PauseWindowNS, s.rounds["t"].PauseBusyNS = int64(time.Second), int64(0.1*float64(time.Second))
				}
				samples = append(samples, s)
			}
			p := r.point(d, &pointRuns{sd: *samples[0].slowdown, samples: samples}, nil)
			if p.Estimate != tt.want {
				t.Fatalf("estimate %q (flags %v), want %q", p.Estimate, p.Flags, tt.want)
			}
			if tt.want == report.EstimateUnknown {
				return
			}
			if !(p.IntervalLowRPS > 0 && p.IntervalLowRPS < p.PredictedRPS) {
				t.Errorf("interval low %.1f, prediction %.1f", p.IntervalLowRPS, p.PredictedRPS)
			}
			if (p.IntervalHighRPS > 0) != tt.wantHigh || tt.wantHigh && p.IntervalHighRPS <= p.PredictedRPS {
				t.Errorf("interval high %.1f, prediction %.1f, want a high end %v", p.IntervalHighRPS, p.PredictedRPS, tt.wantHigh)
			}
			// The nominal delay's prediction is inside: the corrections'
			// uncertainty.
			if in, _ := p.Covers(p.Diagnostics.PredictedNominalRPS); !in {
				t.Errorf("interval [%.1f, %.1f] leaves out the nominal delay's %.1f", p.IntervalLowRPS, p.IntervalHighRPS, p.Diagnostics.PredictedNominalRPS)
			}
			if tt.starved && !slices.Contains(p.Flags, report.FlagTargetStarved) {
				t.Errorf("flags %v, want target-starved", p.Flags)
			}
		})
	}
}

// The interval's width grows with the runs' spread and shrinks with
// their number; with nothing measured twice it rests on the prior.
func TestNoiseHalfWidth(t *testing.T) {
	half := func(runs, base []float64) float64 {
		r := &Runner{}
		for _, b := range base {
			r.base = append(r.base, &sample{res: &load.Result{Throughput: b}})
		}
		var samples []*sample
		for _, x := range runs {
			samples = append(samples, &sample{res: &load.Result{Throughput: x}})
		}
		return r.noiseHalfWidth(&report.Point{PredictedRPS: 200}, samples)
	}
	base := []float64{100, 101, 99, 100}
	narrow := half([]float64{99, 100, 101, 100}, base)
	wide := half([]float64{90, 100, 110, 100}, base)
	few := half([]float64{99, 101}, base)
	prior := half([]float64{100}, []float64{100})
	if !(narrow > 0 && wide > narrow && few > narrow) {
		t.Fatalf("half-widths: narrow %.2f, wide %.2f, two runs %.2f", narrow, wide, few)
	}
	// One run, one baseline run: the prior's 5%, t with 4 degrees of
	// freedom, amplified 2x (200 predicted from 100 measured): about 43.
	if prior < 35 || prior > 50 {
		t.Fatalf("half-width from the prior alone %.2f, want about 43", prior)
	}
}

// The effective pause leaves out what stops were extended by (signals,
// cgroups) and what a hold let something else run (cores).
func TestEffectivePause(t *testing.T) {
	ms := int64(time.Millisecond)
	tests := []struct {
		name   string
		method pause.Method
		a      wire.Stats
		want   time.Duration
	}{
		{"signals, no extension", pause.MethodSignal, wire.Stats{PauseActualNS: 100 * ms}, 100 * time.Millisecond},
		{"signals, extended", pause.MethodSignal, wire.Stats{PauseActualNS: 100 * ms, PauseExtendedNS: 15 * ms}, 85 * time.Millisecond},
		{"cgroup, extended", pause.MethodCgroup, wire.Stats{PauseActualNS: 100 * ms, PauseExtendedNS: 15 * ms}, 85 * time.Millisecond},
		{"cores, held whole", pause.MethodCores, wire.Stats{PauseActualNS: 100 * ms, PauseHeldCPUNS: 100 * ms}, 100 * time.Millisecond},
		{"cores, leaked", pause.MethodCores, wire.Stats{PauseActualNS: 100 * ms, PauseHeldCPUNS: 90 * ms}, 90 * time.Millisecond},
		{"cores, held not read", pause.MethodCores, wire.Stats{PauseActualNS: 100 * ms}, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &wire.Stats{PauseActualNS: 10 * ms, PauseExtendedNS: 0, PauseHeldCPUNS: 0}
			a := tt.a
			a.PauseActualNS += b.PauseActualNS
			if got := effectivePause(tt.method, b, &a); got != tt.want {
				t.Fatalf("effectivePause = %v, want %v", got, tt.want)
			}
		})
	}
}

// The pause read between snapshots taken just outside the window's edges
// is scaled to the window by its rate between them.
func TestInWindow(t *testing.T) {
	const s = int64(time.Second)
	tests := []struct {
		name         string
		pause        time.Duration
		from, to     int64 // the snapshots' times
		window, want time.Duration
	}{
		{"snapshots at the edges", 800 * time.Millisecond, 1 * s, 3 * s, 2 * time.Second, 800 * time.Millisecond},
		{"snapshots 100 ms outside", 840 * time.Millisecond, 1 * s, 3*s + s/10, 2 * time.Second, 800 * time.Millisecond},
		{"span shorter than the window", 840 * time.Millisecond, 1 * s, 2 * s, 2 * time.Second, 840 * time.Millisecond},
		{"no times", 840 * time.Millisecond, 0, 0, 2 * time.Second, 840 * time.Millisecond},
		{"span far from the window", 840 * time.Millisecond, 1 * s, 9 * s, 2 * time.Second, 840 * time.Millisecond},
		{"no window", 840 * time.Millisecond, 1 * s, 3 * s, 0, 840 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := inWindow(tt.pause, &wire.Stats{TakenUnixNS: tt.from}, &wire.Stats{TakenUnixNS: tt.to}, tt.window)
			if d := got - tt.want; d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("inWindow = %v, want %v", got, tt.want)
			}
		})
	}
}

// Under shared placement with held cores, where the paused services
// bound the run, the time their cores idled outside the holds is taken
// off the prediction, and the interval's low end takes in the prediction
// without it; with the correction off, the high end takes in the
// idle-free prediction instead. Where the target bound the run, idle cores
// were waiting for it: nothing is taken off, and neither end moves for it.
func TestIdleCorrection(t *testing.T) {
	const d = 400 * time.Microsecond
	// 500 requests in the 1 s window, 240 ms held (0.48 ms per request),
	// 100 ms idle (0.2 ms per request): 2 ms per request less both.
	// Target-bound, the nominal 0.4 ms comes off instead.
	const withIdle, withoutIdle, nominal = 1 / (2e-3 - 0.2e-3 - 0.48e-3), 1 / (2e-3 - 0.48e-3), 1 / (2e-3 - 0.4e-3)
	for _, tt := range []struct {
		name       string
		targetBusy float64
		baseIdle   time.Duration // the baseline's shared cores' idle time in its 1 s
		off        bool          // NoIdleCorrection
		pred       float64       // the prediction
		low, high  float64       // an end the interval must take in (0: none)
	}{
		{"others bound", 0.6, 0, false, withIdle, withoutIdle, 0},
		{"others bound, correction off", 0.6, 0, true, withoutIdle, 0, withIdle},
		{"target bound", 0.97, 0, false, nominal, 0, 0},
		// Idle 900 ms, 1.8 ms a request: the optimized target's demand
		// (0.6 s of CPU over 500 requests, 1.2 ms, less the cut of 0.4
		// ms) caps the prediction at 1/0.8 ms, so 0.72 ms comes off, and
		// overhead_us says so, not the 1.8 ms asked. Capping by the
		// original demand before the measured 0.48 ms came off would
		// have predicted 1/0.72 ms, past what the optimized target can do.
		{"capped by the target", 0.6, 0, false, 1 / 0.8e-3, 0, 0},
		// Neither the target nor the shared cores bound the baseline:
		// something else sets the pace, and the idle time may be its.
		{"baseline bound by neither", 0.6, 300 * time.Millisecond, false, withoutIdle, 0, withIdle},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{
				prof:   &profile{c1: 1, q1: 1, u1: time.Millisecond},
				d:      placed{pl: backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}},
				method: pause.MethodCores,
				opts:   Options{Target: "t", Tuning: Tuning{NoIdleCorrection: tt.off}},
			}
			for range 4 {
				r.base = append(r.base, &sample{res: &load.Result{Throughput: 500, Completed: 500}, window: time.Second, idle: tt.baseIdle})
			}
			s := delaySample(tt.targetBusy, map[string]time.Duration{"t": 240 * time.Millisecond}, nil)
			s.after["t"].PauseHeldCPUNS = int64(240 * time.Millisecond)
			s.after["t"].Service, s.before["t"].Service = "t", "t"
			s.idle = 100 * time.Millisecond
			wantOverhead := 200.0 // µs, the idle time a request
			if tt.name == "capped by the target" {
				s.idle, wantOverhead = 900*time.Millisecond, 720
			}
			if free, want := r.idleFree(s, r.insertedDelay(s, d)), 500*1000.0/(1000-s.idle.Seconds()*1000); math.Abs(free-want) > 1e-6*want {
				t.Fatalf("idleFree = %.2f, want %.2f", free, want)
			}
			p := r.point(d, &pointRuns{sd: *s.slowdown, samples: []*sample{s}}, nil)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6*b }
			if corrected := tt.pred == withIdle || tt.name == "capped by the target"; corrected && math.Abs(p.OverheadUS-wantOverhead) > 1e-3 {
				t.Errorf("overhead_us %.1f, want %.1f, the correction applied", p.OverheadUS, wantOverhead)
			}
			switch {
			case !near(p.PredictedRPS, tt.pred):
				t.Errorf("prediction %.1f, want %.1f", p.PredictedRPS, tt.pred)
			case tt.high == 0 && tt.name != "capped by the target" && p.IntervalHighRPS >= 1/(2e-3-2*0.2e-3-0.48e-3):
				t.Errorf("interval [%.1f, %.1f] takes in the idle time twice (idle-free on top of the correction)", p.IntervalLowRPS, p.IntervalHighRPS)
			case tt.low > 0 && p.IntervalLowRPS > tt.low*(1+1e-6):
				t.Errorf("interval [%.1f, %.1f] leaves out the prediction without the idle correction, %.1f", p.IntervalLowRPS, p.IntervalHighRPS, tt.low)
			case tt.high > 0 && p.IntervalHighRPS < tt.high*(1-1e-6):
				t.Errorf("interval [%.1f, %.1f] leaves out the idle-free prediction, %.1f", p.IntervalLowRPS, p.IntervalHighRPS, tt.high)
			}
		})
	}
}

// Under dedicated placement the idle time is the busiest paused service's
// own cores': their time less its pauses and its CPU.
func TestIdleFreeDedicated(t *testing.T) {
	r := &Runner{
		prof:   &profile{c1: 1, q1: 1, u1: time.Millisecond},
		d:      placed{pl: backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}, Services: map[string][]int{"a": {2}, "b": {3}}}},
		method: pause.MethodSignal,
		opts:   Options{Target: "t"},
	}
	// a: stopped 240 ms, busy 500 ms of the 1 s window, idle 260 ms; b:
	// further from saturation.
	s := delaySample(0.6, map[string]time.Duration{"a": 240 * time.Millisecond, "b": 100 * time.Millisecond},
		map[string]time.Duration{"a": 500 * time.Millisecond, "b": 300 * time.Millisecond})
	got := r.idleFree(s, r.insertedDelay(s, 400*time.Microsecond))
	if want := 500 / (1 - 0.26); math.Abs(got-want) > 1e-6*want {
		t.Fatalf("idleFree = %.2f, want %.2f (a's idle time taken out)", got, want)
	}
}

// Under keep placement with cores that idled in the baseline (not a
// saturated pool), the idle-free throughput takes out what every core
// idled beyond the baseline's idling per request.
func TestIdleFreeKeep(t *testing.T) {
	const d = 400 * time.Microsecond
	r := keepRunner(400 * time.Millisecond) // the baseline idled 20%: no pool
	if r.pool() {
		t.Fatal("a baseline that idled 20% read as a saturated pool")
	}
	for _, tt := range []struct {
		name string
		idle time.Duration
		want float64
	}{
		// 500 requests: the baseline's idling is 200 ms of them, so 300 ms
		// of the 2 core-seconds were lost to the pauses.
		{"the cores idled more", 500 * time.Millisecond, 500 * 2 / (2 - 0.3)},
		{"no more idling than the baseline's", 150 * time.Millisecond, 500},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := delaySample(0.6, map[string]time.Duration{"t": 240 * time.Millisecond}, nil)
			s.idle = tt.idle
			if free := r.idleFree(s, r.insertedDelay(s, d)); math.Abs(free-tt.want) > 1e-6*tt.want {
				t.Fatalf("idleFree = %.2f, want %.2f", free, tt.want)
			}
		})
	}
}

// keepRunner is a runner under keep placement on two cores whose
// baseline (1000 requests/s) idled baseIdle of each second's 2
// core-seconds.
func keepRunner(baseIdle time.Duration) *Runner {
	r := &Runner{
		prof:   &profile{c1: 1, q1: 1, u1: time.Millisecond},
		d:      placed{pl: backend.Placement{Target: "t", TargetCPUs: []int{0, 1}, OtherCPUs: []int{0, 1}, Keep: true}},
		method: pause.MethodCgroup,
		opts:   Options{Target: "t"},
	}
	for range 3 {
		r.base = append(r.base, &sample{res: &load.Result{Throughput: 1000, Completed: 1000}, window: time.Second, idle: baseIdle})
	}
	return r
}

// Under keep placement with a saturated baseline, the cores are one pool:
// the prediction takes off the pool's growth of work and idling per
// request beyond the baseline's, and d·c1 spread over the pool's cores,
// whatever the pauses inserted; the interval takes in the prediction as
// if the cores were not a pool.
func TestPredictPool(t *testing.T) {
	const d = 400 * time.Microsecond
	r := keepRunner(50 * time.Millisecond)
	if !r.pool() {
		t.Fatal("a baseline that idled 2.5% is not read as a saturated pool")
	}
	// 500 requests in 1 s, the cores idle 200 ms: per request 3.6 ms of
	// work on the cores against the baseline's 1.95 ms (825 µs more per
	// core), and 175 µs per core more idling; 2 ms less both is 1 ms,
	// less d·c1/2 = 200 µs: 1250 requests/s.
	s := delaySample(0.6, map[string]time.Duration{"t": 240 * time.Millisecond}, nil)
	s.idle = 200 * time.Millisecond
	in := r.insertedDelay(s, d)
	used, which := r.delayUsed(s, in)
	if which != report.DelayPool || math.Abs(used-200e-6) > 1e-12 {
		t.Fatalf("delayUsed = %v, %q; want 200µs, pool", used, which)
	}
	got, err := r.predict(s, d)
	if err != nil || math.Abs(got-1250) > 1e-6 {
		t.Fatalf("predict = %.3f, %v; want 1250", got, err)
	}
	p := r.point(d, &pointRuns{sd: *s.slowdown, samples: []*sample{s}}, nil)
	classic, err := r.classic(s, in)
	if err != nil {
		t.Fatal(err)
	}
	if p.DelayUsed != report.DelayPool || classic < p.IntervalLowRPS || classic > p.IntervalHighRPS {
		t.Errorf("point: delay used %q, interval [%.1f, %.1f]; want pool and the classic prediction %.1f inside", p.DelayUsed, p.IntervalLowRPS, p.IntervalHighRPS, classic)
	}
}

// Where the target's agent froze pods on other nodes too, the delay
// measured is the target node's freezes plus how much longer the node
// frozen longest was frozen over the window; the prediction counting only
// the target's node's freezes is kept beside it.
func TestDelayAcrossNodes(t *testing.T) {
	const d = 400 * time.Microsecond
	tests := []struct {
		name          string
		before, after []wire.NodeSkew
		wantAcrossUS  float64 // per request
		wantNode      string
	}{
		{"one node", nil, nil, 0, ""},
		{"the longest of two", []wire.NodeSkew{{Node: "b", LongerSumNS: int64(time.Second)}, {Node: "c", LongerSumNS: 0}},
			[]wire.NodeSkew{{Node: "b", LongerSumNS: int64(time.Second + 20*time.Millisecond)}, {Node: "c", LongerSumNS: int64(40 * time.Millisecond)}},
			80, "c"},
		{"a node first seen in the window", nil, []wire.NodeSkew{{Node: "b", LongerSumNS: int64(10 * time.Millisecond)}}, 20, "b"},
		{"shorter freezes elsewhere add nothing", []wire.NodeSkew{{Node: "b", LongerSumNS: 0}}, []wire.NodeSkew{{Node: "b", LongerSumNS: -int64(30 * time.Millisecond)}}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{
				prof:   &profile{c1: 1, q1: 1, u1: time.Millisecond},
				d:      placed{pl: backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}},
				method: pause.MethodCgroup,
				opts:   Options{Target: "t"},
			}
			s := delaySample(0.6, map[string]time.Duration{"t": 240 * time.Millisecond}, nil)
			s.before["t"].NodeSkews, s.after["t"].NodeSkews = tt.before, tt.after
			in := r.insertedDelay(s, d)
			if math.Abs(in.across*1e6-tt.wantAcrossUS) > 1e-6 || in.acrossNode != tt.wantNode {
				t.Errorf("across %.1f µs per request from %q, want %.1f from %q", in.across*1e6, in.acrossNode, tt.wantAcrossUS, tt.wantNode)
			}
			if want := 480 + tt.wantAcrossUS; math.Abs(in.measured*1e6-want) > 1e-6 {
				t.Errorf("measured %.1f µs per request, want %.1f", in.measured*1e6, want)
			}
			p := r.point(d, &pointRuns{sd: *s.slowdown, samples: []*sample{s}}, nil)
			want := 1 / (1/500.0 - (480+tt.wantAcrossUS)*1e-6)
			if math.Abs(p.PredictedRPS-want) > 1e-6*want {
				t.Errorf("predicted %.2f req/s, want %.2f", p.PredictedRPS, want)
			}
			local := 1 / (1/500.0 - 480e-6)
			switch {
			case tt.wantNode == "" && (p.Diagnostics.PredictedNodeLocalRPS != 0 || p.Diagnostics.DelayAcrossNodesUS != 0):
				t.Errorf("node-local %.2f req/s, across %.1f µs: want neither", p.Diagnostics.PredictedNodeLocalRPS, p.Diagnostics.DelayAcrossNodesUS)
			case tt.wantNode != "" && (math.Abs(p.Diagnostics.PredictedNodeLocalRPS-local) > 1e-6*local || p.Diagnostics.AcrossNode != tt.wantNode ||
				math.Abs(p.Diagnostics.DelayAcrossNodesUS-tt.wantAcrossUS) > 1e-6):
				t.Errorf("node-local %.2f req/s, across %.1f µs from %q; want %.2f, %.1f from %q", p.Diagnostics.PredictedNodeLocalRPS,
					p.Diagnostics.DelayAcrossNodesUS, p.Diagnostics.AcrossNode, local, tt.wantAcrossUS, tt.wantNode)
			}
		})
	}
}

// Where the shared cores were busy all the time outside the pauses, their
// capacity under pauses may have set the prediction, and the really faster
// system exceeds it: the interval's high end takes in what the optimized
// target alone allows. Not where they idled, nor under dedicated placement.
func TestSaturatedSharedCeiling(t *testing.T) {
	const d = 400 * time.Microsecond
	// The target: 0.6 s of CPU over 500 requests, 1.2 ms each, less the
	// cut of 0.4 ms: it alone allows 1/0.8 ms.
	const ceiling = 1 / 0.8e-3
	shared := backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
	dedicated := backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}, Services: map[string][]int{"a": {2}}}
	for _, tt := range []struct {
		name     string
		pl       backend.Placement
		idle     time.Duration // the shared cores' idle time in the 1 s window
		baseBusy float64       // the target's CPU in the baseline's 1 s (0: not read)
		ceiling  float64
		// The baseline's shared cores never idled (else 10% of its 1 s).
		baseSaturated bool
		wants         bool // the high end takes in the ceiling
	}{
		{"shared, saturated", shared, 0, 0, ceiling, false, true},
		// The baseline's target did 1 ms a request, less than under
		// pauses: the optimized one alone allows 1/0.6 ms.
		{"shared, saturated, cheaper baseline", shared, 0, 0.5, 1 / 0.6e-3, false, true},
		{"shared, idle 10%", shared, 100 * time.Millisecond, 0, ceiling, false, false},
		// The baseline kept the shared cores busy too: it measured their
		// capacity unpaused, 500 req/s, and the high end stays near it.
		{"shared, saturated, saturated baseline", shared, 0, 0, ceiling, true, false},
		{"dedicated", dedicated, 0, 0, ceiling, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{
				prof:   &profile{c1: 1, q1: 1, u1: time.Millisecond},
				d:      placed{pl: tt.pl},
				method: pause.MethodCores,
				opts:   Options{Target: "t"},
			}
			for range 4 {
				b := &sample{res: &load.Result{Throughput: 500, Completed: 500}, window: time.Second, idle: 100 * time.Millisecond}
				if tt.baseSaturated {
					b.idle = 0
				}
				if tt.baseBusy > 0 {
					b.before = map[string]*wire.Stats{"t": {}}
					b.after = map[string]*wire.Stats{"t": {CPUNS: int64(tt.baseBusy * float64(time.Second))}}
				}
				r.base = append(r.base, b)
			}
			s := delaySample(0.6, map[string]time.Duration{"t": 240 * time.Millisecond}, nil)
			s.idle = tt.idle
			ceiling := tt.ceiling
			p := r.point(d, &pointRuns{sd: *s.slowdown, samples: []*sample{s}}, nil)
			if p.Estimate != report.EstimateValue {
				t.Fatalf("estimate %q, want a value", p.Estimate)
			}
			if p.PredictedRPS >= ceiling {
				t.Fatalf("prediction %.1f at or past the target's own ceiling %.1f: the case tests nothing", p.PredictedRPS, ceiling)
			}
			if got := p.IntervalHighRPS >= ceiling; got != tt.wants {
				t.Errorf("interval [%.1f, %.1f] (prediction %.1f): takes in the target's ceiling %.1f = %v, want %v",
					p.IntervalLowRPS, p.IntervalHighRPS, p.PredictedRPS, ceiling, got, tt.wants)
			}
			if p.IntervalLowRPS <= 0 || p.IntervalLowRPS >= p.PredictedRPS {
				t.Errorf("interval low %.1f, prediction %.1f: the low end moved", p.IntervalLowRPS, p.PredictedRPS)
			}
		})
	}
}
