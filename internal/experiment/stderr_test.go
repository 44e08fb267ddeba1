package experiment

import (
	"math"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/load"
)

func TestRelStdErr(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one run", []float64{100}, 0},
		{"identical", []float64{100, 100, 100}, 0},
		// sd of {98, 102} is 2.83; / sqrt(2) / 100
		{"two runs", []float64{98, 102}, 0.02},
		// sd of {90, 100, 110} is 10; / sqrt(3) / 100
		{"three runs", []float64{90, 100, 110}, 0.1 / math.Sqrt(3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := relStdErr(tt.xs); math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("relStdErr(%v) = %g, want %g", tt.xs, got, tt.want)
			}
		})
	}
}

func TestStdErrPctCombinesPredictionAndTruth(t *testing.T) {
	pred := 100 * relStdErr([]float64{1000, 1040})
	if got := stdErrPct([]float64{1000, 1040}, nil); math.Abs(got-pred) > 1e-6 {
		t.Fatalf("without truth: %g, want %g", got, pred)
	}
	truth := []float64{1000, 1030}
	want := math.Hypot(pred, 100*relStdErr(truth))
	if got := stdErrPct([]float64{1000, 1040}, truth); math.Abs(got-want) > 1e-6 {
		t.Fatalf("with truth: %g, want %g", got, want)
	}
	// An infeasible run (0) is left out.
	if got := stdErrPct([]float64{1000, 0, 1040}, nil); math.Abs(got-pred) > 1e-6 {
		t.Fatalf("with an infeasible run: %g, want %g", got, pred)
	}
}

func TestPredictions(t *testing.T) {
	prof := &profile{c1: 1, q1: 1}
	d := 500 * time.Microsecond
	// Slowdown throughputs whose predictions are 1000 and 1040 req/s,
	// 1/(1/p + d), and one at or above 1/d, which is infeasible.
	var samples []*sample
	for _, tvs := range []float64{1 / (1/1000.0 + d.Seconds()), 1 / (1/1040.0 + d.Seconds()), 1 / d.Seconds() * 1.1} {
		samples = append(samples, &sample{res: &load.Result{Throughput: tvs}})
	}
	r := &Runner{prof: prof}
	got := r.predictions(samples, d)
	want := []float64{1000, 1040, 0}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6 {
			t.Fatalf("predictions = %v, want %v", got, want)
		}
	}
}

// The controllers' CPU outside stops, and the paused services' own CPU,
// above the baseline's are taken off the slowdown run's time per request,
// each only when asked for, and never past the target's demand.
func TestPredictRemovesRoundOverhead(t *testing.T) {
	const n = 1000 // requests in every window
	d := 200 * time.Microsecond
	// ctl: the controllers' CPU in the window outside stops; others: the
	// paused service's CPU in the window; target: the target's.
	ms := time.Millisecond
	mk := func(tvs float64, ctl, stopped, others, target time.Duration) *sample {
		before := map[string]*wire.Stats{"a": {}, "t": {}}
		after := map[string]*wire.Stats{
			"a": {ControllerCPUNS: int64(ctl + stopped), ControllerCPUStoppedNS: int64(stopped), CPUNS: int64(others)},
			"t": {CPUNS: int64(target)},
		}
		return &sample{res: &load.Result{Throughput: tvs, Completed: n}, before: before, after: after,
			slowdown: &slowdown{batch: 10, pause: 2 * ms}}
	}
	base := mk(500, 10*ms, 0, 1000*ms, 0) // 10 µs and 1000 µs per request
	tests := []struct {
		name             string
		tvs              float64
		ctl, others      time.Duration // whole window
		target           time.Duration
		overhead, growth bool
		noPause          bool    // a run without pauses (0% point)
		want             float64 // 1/t_vs less overhead, seconds per request
		dedicated        bool    // "a" on 2 cores of its own, the controllers elsewhere
	}{
		{"no extra", 400, 10 * ms, 1000 * ms, 0, true, true, false, 1 / 400.0, false},
		{"controllers removed", 400, 60 * ms, 1000 * ms, 0, true, false, false, 1/400.0 - 50e-6, false},
		{"below baseline", 400, 5 * ms, 900 * ms, 0, true, true, false, 1 / 400.0, false},
		{"growth removed", 400, 60 * ms, 1070 * ms, 0, false, true, false, 1/400.0 - 70e-6, false},
		{"both removed", 400, 60 * ms, 1070 * ms, 0, true, true, false, 1/400.0 - 120e-6, false},
		{"target floor", 400, 60 * ms, 1000 * ms, 2480 * ms, true, true, false, 2480e-6, false},
		{"floor above run", 400, 60 * ms, 1000 * ms, 3 * time.Second, true, true, false, 1 / 400.0, false},
		{"turned off", 400, 60 * ms, 1070 * ms, 0, false, false, false, 1 / 400.0, false},
		{"no pauses", 400, 60 * ms, 1070 * ms, 0, true, true, true, 1 / 400.0, false},
		{"dedicated: growth over the paused cores, controllers not", 400, 60 * ms, 1070 * ms, 0, true, true, false, 1/400.0 - 35e-6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := backend.Placement{Target: "t", OtherCPUs: []int{0}}
			if tt.dedicated {
				pl = backend.Placement{Target: "t", TargetCPUs: []int{3}, OtherCPUs: []int{0}, Services: map[string][]int{"a": {1, 2}}}
			}
			r := &Runner{
				prof: &profile{c1: 1, q1: 1},
				base: []*sample{base},
				d:    placed{pl: pl},
				opts: Options{Target: "t", Tuning: Tuning{OverheadCorrection: tt.overhead, NoGrowthCorrection: !tt.growth}},
			}
			s := mk(tt.tvs, tt.ctl, 7*ms, tt.others, tt.target)
			if tt.noPause {
				s.slowdown.pause = 0
			}
			got, err := r.predict(s, d)
			if err != nil {
				t.Fatal(err)
			}
			want := 1 / (tt.want - d.Seconds())
			if math.Abs(got-want) > 1e-6*want {
				t.Fatalf("predict = %.3f, want %.3f", got, want)
			}
		})
	}
}

// PooledNoise is the prior (5% worth 4 runs) where no group has two
// runs, and moves towards the groups' own spread as they add degrees of
// freedom, each group against its own mean.
func TestPooledNoise(t *testing.T) {
	tests := []struct {
		name   string
		groups [][]float64
		pct    float64
		dof    int
	}{
		{"no groups", nil, 5, 4},
		{"single runs only", [][]float64{{1000}, {2000}}, 5, 4},
		// Two groups whose runs lie 1% from their means, whatever their
		// level: four squared deviations of 1 (%²) beside the prior's
		// 4·25, over 6 degrees of freedom.
		{"two quiet groups", [][]float64{{990, 1010}, {1980, 2020}}, math.Sqrt((4*25 + 4*1) / 6.0), 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pct, dof := PooledNoise(tt.groups)
			if dof != tt.dof || math.Abs(pct-tt.pct) > 1e-9 {
				t.Errorf("PooledNoise = %.4f%%, %d dof; want %.4f%%, %d", pct, dof, tt.pct, tt.dof)
			}
		})
	}
}
