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

// capRun is a capacity run at throughput x with the share kept of the
// shared cores left free.
func capRun(x, kept float64, bound bool) capacityRun {
	return capacityRun{s: &sample{res: &load.Result{Throughput: x, Completed: uint64(x)}, window: time.Second}, kept: kept, bound: bound}
}

// The shared cores' capacity is where the line through the capacity runs
// that they bound, share used against throughput, reaches the whole of
// them; X/k from a lone run, and nothing from runs they did not bind.
func TestSharedCapacity(t *testing.T) {
	// Services that use 400 µs per request and 10% of the cores whatever
	// the load: k = 400e-6·X + 0.1, so the whole of them allows 2250 req/s.
	line := func(k float64) float64 { return (k - 0.1) / 400e-6 }
	for _, tt := range []struct {
		name string
		runs []capacityRun
		want float64
	}{
		{"none", nil, 0},
		{"not bound", []capacityRun{capRun(700, 0.4, false)}, 0},
		{"one run", []capacityRun{capRun(line(0.4), 0.4, true)}, line(0.4) / 0.4},
		{"two runs", []capacityRun{capRun(line(0.45), 0.45, true), capRun(line(0.25), 0.25, true)}, 2250},
		{"two runs and one not bound", []capacityRun{capRun(900, 0.6, false), capRun(line(0.45), 0.45, true), capRun(line(0.25), 0.25, true)}, 2250},
		{"four runs", []capacityRun{capRun(line(0.45), 0.45, true), capRun(line(0.25), 0.25, true), capRun(line(0.4), 0.4, true), capRun(line(0.3), 0.3, true)}, 2250},
		// Shares too close to draw a line through: the larger X/k.
		{"shares too close", []capacityRun{capRun(line(0.41), 0.41, true), capRun(line(0.4), 0.4, true)}, line(0.41) / 0.41},
		// A line that falls (noise): the larger X/k.
		{"falling line", []capacityRun{capRun(500, 0.45, true), capRun(600, 0.25, true)}, 600 / 0.25},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{capRuns: tt.runs}
			if got := r.sharedCapacity(); math.Abs(got-tt.want) > 1e-6*max(1, tt.want) {
				t.Errorf("capacity %.3f, want %.3f", got, tt.want)
			}
		})
	}
}

// A point whose slowdown runs left the shared cores (nearly) without idle
// time takes the capacity runs' capacity, or the target's own ceiling
// where lower, where that is above what it measured, and keeps what it
// measured as raw_predicted_rps and as its interval's low end; other
// points, and every point without a capacity run, are left as measured.
func TestCapacityRaisesSaturatedPoints(t *testing.T) {
	const d = 400 * time.Microsecond
	// The target: 0.6 s of CPU over 500 requests less the cut of 0.4 ms
	// allows 1/0.8 ms = 1250 req/s.
	const ceiling = 1 / 0.8e-3
	shared := backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
	for _, tt := range []struct {
		name    string
		idle    time.Duration // the shared cores' idle time in the 1 s window
		starved bool          // the target idled in the pauses
		runs    []capacityRun
		want    float64 // 0: the measured prediction
	}{
		{"saturated, capacity below the ceiling", 0, false, []capacityRun{capRun(495, 0.45, true), capRun(275, 0.25, true)}, 1100},
		{"near saturated", 30 * time.Millisecond, false, []capacityRun{capRun(495, 0.45, true), capRun(275, 0.25, true)}, 1100},
		{"saturated, capacity above the ceiling", 0, false, []capacityRun{capRun(900, 0.45, true), capRun(500, 0.25, true)}, ceiling},
		{"idle 10%", 100 * time.Millisecond, false, []capacityRun{capRun(495, 0.45, true), capRun(275, 0.25, true)}, 0},
		// A starved target's point stays what was measured, a lower bound.
		{"saturated, target starved", 0, true, []capacityRun{capRun(495, 0.45, true), capRun(275, 0.25, true)}, 0},
		{"no capacity run", 0, false, nil, 0},
		{"capacity runs not bound", 0, false, []capacityRun{capRun(450, 0.45, false)}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{
				prof:    &profile{c1: 1, q1: 1, u1: time.Millisecond},
				d:       placed{pl: shared},
				method:  pause.MethodCores,
				opts:    Options{Target: "t"},
				capRuns: tt.runs,
			}
			for range 4 {
				r.base = append(r.base, &sample{res: &load.Result{Throughput: 500, Completed: 500}, window: time.Second, idle: 300 * time.Millisecond,
					before: map[string]*wire.Stats{"t": {}}, after: map[string]*wire.Stats{"t": {CPUNS: int64(0.6 * float64(time.Second))}}})
			}
			s := delaySample(0.6, map[string]time.Duration{"t": 240 * time.Millisecond}, nil)
			s.idle = tt.idle
			if tt.starved {
				s.rounds["t"].PauseWindowNS, s.rounds["t"].PauseBusyNS = int64(time.Second), int64(0.1*float64(time.Second))
			}
			measured := r.point(d, &pointRuns{sd: *s.slowdown, samples: []*sample{s}}, nil)
			r.capRuns = nil
			if plain := r.point(d, &pointRuns{sd: *s.slowdown, samples: []*sample{s}}, nil); plain.PredictedRPS <= 0 || plain.RawPredictedRPS != 0 {
				t.Fatalf("without capacity runs: prediction %.1f, raw %.1f", plain.PredictedRPS, plain.RawPredictedRPS)
			} else if tt.want == 0 {
				if measured.PredictedRPS != plain.PredictedRPS || measured.RawPredictedRPS != 0 {
					t.Errorf("prediction %.1f (raw %.1f), want it as measured, %.1f", measured.PredictedRPS, measured.RawPredictedRPS, plain.PredictedRPS)
				}
				if tt.starved && (measured.Estimate != report.EstimateLowerBound || !slices.Contains(measured.Flags, report.FlagTargetStarved)) {
					t.Errorf("estimate %q, flags %v: want a lower bound flagged target-starved", measured.Estimate, measured.Flags)
				}
			} else {
				if plain.PredictedRPS >= tt.want {
					t.Fatalf("measured prediction %.1f at or above %.1f: the case tests nothing", plain.PredictedRPS, tt.want)
				}
				if math.Abs(measured.PredictedRPS-tt.want) > 1e-6*tt.want || measured.RawPredictedRPS != plain.PredictedRPS {
					t.Errorf("prediction %.1f (raw %.1f), want %.1f (raw %.1f)", measured.PredictedRPS, measured.RawPredictedRPS, tt.want, plain.PredictedRPS)
				}
				if measured.IntervalLowRPS > plain.PredictedRPS || measured.IntervalHighRPS < tt.want {
					t.Errorf("interval [%.1f, %.1f]: want it to hold the measured %.1f and the estimate %.1f", measured.IntervalLowRPS, measured.IntervalHighRPS, plain.PredictedRPS, tt.want)
				}
			}
		})
	}
}

// The capacity runs raise a point no further than the cause they correct
// allows: the shared services' CPU per request in the baselines over
// theirs in the capacity runs; not at all where the capacity runs cost
// them as much per request.
func TestCapacityInflationCaps(t *testing.T) {
	const d = 400 * time.Microsecond
	shared := backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
	// withOthers gives s the service a, on the shared cores, us µs of
	// CPU per request.
	withOthers := func(s *sample, us float64) *sample {
		s.before["a"], s.after["a"] = &wire.Stats{}, &wire.Stats{CPUNS: int64(us * 1e3 * float64(s.responses()))}
		return s
	}
	for _, tt := range []struct {
		name string
		rho  float64 // baseline's over the capacity runs'; 0: not measured
		// want is the prediction over the measured one; 0: the capacity.
		want float64
	}{
		{"not measured", 0, 0},
		{"no inflation", 1, 1},
		{"less in the baselines", 0.9, 1},
		{"5% more in the baselines", 1.05, 1.05},
		{"more than the capacity needs", 2, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A line to about 1450 req/s: the estimate is the target's
			// ceiling of 1250.
			runs := []capacityRun{capRun(495, 0.35, true), capRun(275, 0.2, true)}
			r := &Runner{prof: &profile{c1: 1, q1: 1, u1: time.Millisecond}, d: placed{pl: shared}, method: pause.MethodCores, opts: Options{Target: "t"}}
			for range 4 {
				b := &sample{res: &load.Result{Throughput: 500, Completed: 500}, window: time.Second, idle: 300 * time.Millisecond,
					before: map[string]*wire.Stats{"t": {}}, after: map[string]*wire.Stats{"t": {CPUNS: int64(0.6 * float64(time.Second))}}}
				if tt.rho > 0 {
					withOthers(b, 300)
				}
				r.base = append(r.base, b)
			}
			for i := range runs {
				runs[i].s.before, runs[i].s.after = map[string]*wire.Stats{}, map[string]*wire.Stats{}
				if tt.rho > 0 {
					withOthers(runs[i].s, 300/tt.rho)
				}
			}
			s := delaySample(0.6, map[string]time.Duration{"t": 240 * time.Millisecond}, nil)
			plain := r.point(d, &pointRuns{sd: *s.slowdown, samples: []*sample{s}}, nil)
			r.capRuns = runs
			p := r.point(d, &pointRuns{sd: *s.slowdown, samples: []*sample{s}}, nil)
			want := 1 / 0.8e-3 // the target's ceiling (TestCapacityRaisesSaturatedPoints)
			if tt.want > 0 {
				want = min(want, plain.PredictedRPS*tt.want)
			}
			if plain.PredictedRPS >= 1/0.8e-3/1.05 {
				t.Fatalf("measured prediction %.1f: too close to the capacity to test the cap", plain.PredictedRPS)
			}
			if math.Abs(p.PredictedRPS-want) > 1e-6*want {
				t.Errorf("prediction %.1f (measured %.1f, inflation %.3f), want %.1f", p.PredictedRPS, plain.PredictedRPS, p.Diagnostics.CapacityInflation, want)
			}
			if raised := p.RawPredictedRPS > 0; raised != (want > plain.PredictedRPS+1e-6) {
				t.Errorf("raw %.1f: want it set only where the point was raised", p.RawPredictedRPS)
			}
			if got := p.Diagnostics.CapacityInflation; math.Abs(got-tt.rho) > 1e-6 {
				t.Errorf("capacity_inflation %.3f, want %.3f", got, tt.rho)
			}
		})
	}
}
