package experiment

import (
	"math"
	"testing"
	"time"

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
	got := predictions(samples, d, prof)
	want := []float64{1000, 1040, 0}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6 {
			t.Fatalf("predictions = %v, want %v", got, want)
		}
	}
}
