package model

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPredict(t *testing.T) {
	tests := []struct {
		name           string
		tVS, d, c1, q1 float64
		want           float64
		wantErr        bool
		infeasible     bool
	}{
		{name: "no reduction is identity", tVS: 1000, d: 0, c1: 1, q1: 1, want: 1000},
		// Target alone is the bottleneck at 500µs per call on 1 core: 2000 rps.
		// Its pauses do not touch it, so t_vs stays 2000 and halving it
		// predicts 4000.
		{name: "halving a lone bottleneck doubles it", tVS: 2000, d: 250e-6, c1: 1, q1: 1, want: 4000},
		{name: "two calls per request", tVS: 500, d: 100e-6, c1: 2, q1: 1, want: 1 / (1.0/500 - 200e-6)},
		{name: "two cores halve the correction", tVS: 500, d: 100e-6, c1: 2, q1: 2, want: 1 / (1.0/500 - 100e-6)},
		{name: "denominator zero", tVS: 1000, d: 1e-3, c1: 1, q1: 1, wantErr: true, infeasible: true},
		{name: "denominator negative", tVS: 1000, d: 2e-3, c1: 1, q1: 1, wantErr: true, infeasible: true},
		{name: "zero throughput", tVS: 0, d: 1e-4, c1: 1, q1: 1, wantErr: true},
		{name: "NaN throughput", tVS: math.NaN(), d: 1e-4, c1: 1, q1: 1, wantErr: true},
		{name: "negative d", tVS: 100, d: -1, c1: 1, q1: 1, wantErr: true},
		{name: "zero c1", tVS: 100, d: 1e-4, c1: 0, q1: 1, wantErr: true},
		{name: "zero q1", tVS: 100, d: 1e-4, c1: 1, q1: 0, wantErr: true},
		{name: "infinite q1", tVS: 100, d: 1e-4, c1: 1, q1: math.Inf(1), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Predict(tt.tVS, tt.d, tt.c1, tt.q1)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.infeasible != errors.Is(err, ErrInfeasible) {
				t.Fatalf("err = %v, want infeasible %v", err, tt.infeasible)
			}
			if err == nil && math.Abs(got-tt.want) > 1e-6*tt.want {
				t.Fatalf("Predict = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPredictDelay(t *testing.T) {
	tests := []struct {
		name       string
		tVS, delay float64
		want       float64
		wantErr    bool
	}{
		{name: "no delay is identity", tVS: 1000, delay: 0, want: 1000},
		{name: "the model's delay is Predict's", tVS: 500, delay: 200e-6, want: 1 / (1.0/500 - 200e-6)},
		{name: "a measured delay above nominal predicts more", tVS: 500, delay: 480e-6, want: 1 / (1.0/500 - 480e-6)},
		{name: "infeasible", tVS: 1000, delay: 1e-3, wantErr: true},
		{name: "negative delay", tVS: 1000, delay: -1e-6, wantErr: true},
		{name: "NaN delay", tVS: 1000, delay: math.NaN(), wantErr: true},
		{name: "zero throughput", tVS: 0, delay: 1e-4, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PredictDelay(tt.tVS, tt.delay)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && math.Abs(got-tt.want) > 1e-9*tt.want {
				t.Fatalf("PredictDelay = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSlowdownForInvertsPredict(t *testing.T) {
	for _, tOpt := range []float64{10, 1234.5, 1e5} {
		for _, d := range []float64{0, 1e-5, 3e-4} {
			tVS, err := SlowdownFor(tOpt, d, 1.5, 2)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Predict(tVS, d, 1.5, 2)
			if err != nil || math.Abs(back-tOpt) > 1e-9*tOpt {
				t.Fatalf("Predict(SlowdownFor(%v)) = %v, %v", tOpt, back, err)
			}
		}
	}
}

func TestPauseIdentity(t *testing.T) {
	// Per-round pause B*d/q1 equals per-call pause times the calls i sees per round.
	const batch, c1, q1 = 100, 2.0, 1.0
	d := 300 * time.Microsecond
	round := PausePerRound(batch, d, q1)
	if round != 30*time.Millisecond {
		t.Fatalf("PausePerRound = %v", round)
	}
	for _, ci := range []float64{0.5, 1, 3} {
		perCall := PausePerCall(d, c1, q1, ci)
		callsPerRound := batch * ci / c1
		if got := time.Duration(float64(perCall) * callsPerRound); absDur(got-round) > time.Microsecond {
			t.Errorf("ci=%v: per-call %v x %v calls = %v, want %v", ci, perCall, callsPerRound, got, round)
		}
	}
	if PausePerRound(0, d, 1) != 0 || PausePerRound(10, d, 0) != 0 || PausePerCall(d, 1, 1, 0) != 0 {
		t.Error("degenerate inputs must give zero pause")
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func TestParseReductions(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
		errHas  string // with wantErr: what the error must say
	}{
		{in: "0,10,...,90%", want: []string{"0%", "10%", "20%", "30%", "40%", "50%", "60%", "70%", "80%", "90%"}},
		{in: "0,25,...,75%", want: []string{"0%", "25%", "50%", "75%"}},
		{in: "10%, 20%", want: []string{"10%", "20%"}},
		{in: "300us", want: []string{"300us"}},
		{in: "100,200us", want: []string{"100us", "200us"}},
		{in: "2x", want: []string{"2x"}},
		{in: "1->2", want: []string{"1->2"}},
		{in: "", wantErr: true},
		{in: "10", wantErr: true},
		{in: "100%", wantErr: true},
		{in: "-5%", wantErr: true},
		{in: "0.5x", wantErr: true},
		{in: "2->1", wantErr: true},
		{in: "...,90%", wantErr: true},
		{in: "0,10,...", wantErr: true},
		{in: "20,10,...,90%", wantErr: true},
		{in: "abc", wantErr: true},
		{in: "10%,,20%", wantErr: true},
		{in: "nan%", wantErr: true, errHas: "not a number"},
		{in: "inf%", wantErr: true, errHas: "not a number"},
		{in: "nanx", wantErr: true},
		{in: "infx", wantErr: true},
		{in: "NaN->2", wantErr: true},
		{in: "1->inf", wantErr: true},
		{in: "nan", wantErr: true},
		{in: "50%%", wantErr: true, errHas: "separate values with commas"},
		{in: "25;50%", wantErr: true, errHas: "separate values with commas"},
		{in: "150%", wantErr: true, errHas: "in [0, 100)"},
		{in: "1-", wantErr: true, errHas: "quote"}, // what the shell leaves of an unquoted 1->2
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseReductions(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Errorf("error %q does not say %q", err, tt.errHas)
				}
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d reductions %v, want %v", len(got), got, tt.want)
			}
			for i := range got {
				if got[i].Text != tt.want[i] {
					t.Errorf("[%d] = %q, want %q", i, got[i].Text, tt.want[i])
				}
			}
		})
	}
}

func TestResolve(t *testing.T) {
	const u1 = 400e-6
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{in: "25%", want: 100e-6},
		{in: "300us", want: 300e-6},
		{in: "2x", want: 200e-6},
		{in: "1->4", want: 300e-6},
		{in: "1ms", want: 1e-3}, // absolute may exceed u1: the user knows better
	}
	for _, tt := range tests {
		rs, err := ParseReductions(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rs[0].Resolve(u1)
		if (err != nil) != tt.wantErr || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: Resolve = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	rs, _ := ParseReductions("10%")
	if _, err := rs[0].Resolve(0); err == nil {
		t.Error("percentage without u1 must fail")
	}
	if PercentOf(100e-6, u1) != 25 || PercentOf(1, 0) != 0 {
		t.Error("PercentOf")
	}
}

func TestWithoutOverhead(t *testing.T) {
	tests := []struct {
		name                 string
		tvs, overhead, floor float64
		want                 float64
	}{
		{"no overhead", 500, 0, 0, 500},
		{"removed", 500, 100e-6, 0, 1 / (1/500.0 - 100e-6)},
		{"floor binds", 500, 500e-6, 1.9e-3, 1 / 1.9e-3},
		{"floor above the run", 500, 100e-6, 2.5e-3, 500},
		{"overhead beyond the run", 500, 3e-3, 0, 500},
		{"negative overhead", 500, -1e-4, 0, 500},
		{"no throughput", 0, 1e-4, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WithoutOverhead(tt.tvs, tt.overhead, tt.floor); math.Abs(got-tt.want) > 1e-9*math.Max(1, tt.want) {
				t.Fatalf("WithoutOverhead(%g, %g, %g) = %g, want %g", tt.tvs, tt.overhead, tt.floor, got, tt.want)
			}
		})
	}
}

func TestPredictCorrected(t *testing.T) {
	const us = 1e-6
	tests := []struct {
		name                        string
		tvs, overhead, delay, floor float64
		want                        float64
		err                         error
	}{
		{name: "no overhead", tvs: 500, delay: 400 * us, want: 1 / (2e-3 - 400*us)},
		{name: "removed", tvs: 500, overhead: 100 * us, delay: 400 * us, want: 1 / (2e-3 - 500*us)},
		{name: "optimized demand caps", tvs: 500, overhead: 500 * us, delay: 400 * us, floor: 1.3e-3, want: 1 / 1.3e-3},
		// The target's demand 1.9 ms before the cut of 400 µs: capping
		// before the delay would give 1/(1.9 ms - 500 µs), past the
		// optimized target's 1/1.5 ms.
		{name: "a delay past the cut", tvs: 500, overhead: 500 * us, delay: 500 * us, floor: 1.5e-3, want: 1 / 1.5e-3},
		{name: "uncorrected past the cap stays", tvs: 500, overhead: 500 * us, delay: 700 * us, floor: 1.5e-3, want: 1 / 1.3e-3},
		{name: "floor above the uncorrected prediction", tvs: 500, overhead: 100 * us, delay: 400 * us, floor: 1.7e-3, want: 1 / 1.6e-3},
		{name: "no floor", tvs: 500, overhead: 1.5e-3, delay: 400 * us, want: 1 / 100e-6},
		{name: "a correction past the run is not made", tvs: 500, overhead: 1.7e-3, delay: 400 * us, want: 1 / 1.6e-3},
		{name: "a cap of 0 or less with a correction past the run", tvs: 500, overhead: 1.7e-3, delay: 400 * us, floor: -100 * us, want: 1 / 1.6e-3},
		{name: "infeasible without it", tvs: 500, overhead: 100 * us, delay: 2e-3, err: ErrInfeasible},
		{name: "negative overhead", tvs: 500, overhead: -1e-4, delay: 400 * us, want: 1 / 1.6e-3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PredictCorrected(tt.tvs, tt.overhead, tt.delay, tt.floor)
			if !errors.Is(err, tt.err) || math.Abs(got-tt.want) > 1e-9*math.Max(1, tt.want) {
				t.Fatalf("PredictCorrected(%g, %g, %g, %g) = %g, %v; want %g, %v", tt.tvs, tt.overhead, tt.delay, tt.floor, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestDeployedBound(t *testing.T) {
	const us = 1e-6
	tests := []struct {
		name               string
		tput, machine, tgt float64
		cut                float64
		cores              int
		want               float64
	}{
		// 1000 req/s on 2 cores spending 2000 µs per request: saturated.
		// The target's 800 µs cut by 400: the cores allow 2/1600 µs.
		{"cores bind", 1000, 2000 * us, 800 * us, 400 * us, 2, 1250},
		// Half busy (1000 µs of 2 cores at 1000 req/s): the cores allow
		// 2/600 µs, the target's own time 1000*800/400.
		{"target's time binds", 1000, 1000 * us, 800 * us, 400 * us, 2, 2000},
		{"no cut", 1000, 2000 * us, 800 * us, 0, 2, 1000},
		{"cut takes all of the target, cores unknown", 1000, 0, 800 * us, 900 * us, 0, math.Inf(1)},
		{"cut takes all of the target, cores known", 1000, 2000 * us, 800 * us, 900 * us, 2, 2 / (1200 * us)},
		{"no throughput", 0, 2000 * us, 800 * us, 400 * us, 2, 0},
		{"no target CPU", 1000, 2000 * us, 0, 400 * us, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DeployedBound(tt.tput, tt.machine, tt.tgt, tt.cut, tt.cores)
			if math.IsInf(tt.want, 1) {
				if !math.IsInf(got, 1) {
					t.Fatalf("DeployedBound = %v, want +Inf", got)
				}
				return
			}
			if math.Abs(got-tt.want) > 1e-6*max(1, tt.want) {
				t.Fatalf("DeployedBound = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGainBound(t *testing.T) {
	tests := []struct {
		name    string
		p, busy float64
		want    float64
	}{
		// Half the CPU of a service whose core was saturated: at most 2x.
		{"bound service, half its cost", 0.5, 1, 1},
		// A service busy 10% of the time, half its cost: 1/0.95 - 1.
		{"little busy", 0.5, 0.1, 1/0.95 - 1},
		{"busy above 1 counts as 1", 0.5, 3, 1},
		{"whole cost of a saturated service", 1, 1, math.Inf(1)},
		{"no cut", 0, 1, 0},
		{"no CPU", 0.5, 0, 0},
		{"NaN", math.NaN(), 0.5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GainBound(tt.p, tt.busy)
			if math.IsInf(tt.want, 1) {
				if !math.IsInf(got, 1) {
					t.Fatalf("GainBound(%v, %v) = %v, want +Inf", tt.p, tt.busy, got)
				}
				return
			}
			if math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("GainBound(%v, %v) = %v, want %v", tt.p, tt.busy, got, tt.want)
			}
		})
	}
}

// TestGainBoundHoldsForThePrediction checks the bound against the
// model's own prediction: whatever throughput the slowed-down run
// measures (at most the baseline's), Predict stays within it.
func TestGainBoundHoldsForThePrediction(t *testing.T) {
	const t0, u1, c1, q1 = 500.0, 400e-6, 1.0, 1.0 // busy 0.2
	busy := t0 * u1 * c1 / q1
	for _, p := range []float64{0.1, 0.25, 0.5, 0.9} {
		bound := t0 * (1 + GainBound(p, busy))
		for _, tvs := range []float64{t0, 0.9 * t0, 0.5 * t0} {
			got, err := Predict(tvs, p*u1, c1, q1)
			if err != nil {
				t.Fatal(err)
			}
			if got > bound*(1+1e-12) {
				t.Errorf("p %v, t_vs %v: prediction %v above the bound %v", p, tvs, got, bound)
			}
		}
	}
}

func TestBusyBound(t *testing.T) {
	tests := []struct {
		share float64
		cores int
		want  float64
	}{
		{0.01, 2, 0.02},
		{0.3, 2, 0.6},
		{0.7, 2, 1},
		{0, 2, 0},
		{0.1, 0, 0},
	}
	for _, tt := range tests {
		if got := BusyBound(tt.share, tt.cores); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("BusyBound(%v, %d) = %v, want %v", tt.share, tt.cores, got, tt.want)
		}
	}
}
