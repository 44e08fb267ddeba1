package experiment

import (
	"testing"
)

func TestQuantileCI(t *testing.T) {
	s := make([]float64, 1000)
	for i := range s {
		s[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		q      float64
		want   float64
		lo, hi float64
	}{
		{0.5, 500, 469, 531},
		{0.99, 990, 983, 996},
	} {
		v, ci := quantileCI(s, tc.q)
		if v != tc.want || ci[0] < tc.lo-2 || ci[0] > tc.lo+2 || ci[1] < tc.hi-2 || ci[1] > tc.hi+2 {
			t.Errorf("q%v: %v %v, want %v [%v, %v]", tc.q, v, ci, tc.want, tc.lo, tc.hi)
		}
	}
	if p := lowerP([]float64{1, 2, 3, 4, 5, 6, 7, 8}, []float64{11, 12, 13, 14, 15, 16, 17, 18}); p > 0.01 {
		t.Errorf("clearly lower sample: p = %v", p)
	}
	if p := lowerP([]float64{11, 12, 13, 14, 15, 16, 17, 18}, []float64{1, 2, 3, 4, 5, 6, 7, 8}); p < 0.9 {
		t.Errorf("clearly higher sample: p = %v", p)
	}
	if got := (saturated{cpu: 2000, calls: 1}).predictionRate(500, 500); got != 375 {
		t.Errorf("prediction rate %v, want 375 (a quarter of the cores' time freed)", got)
	}
	if got := (saturated{}).predictionRate(500, 500); got != 500 {
		t.Errorf("prediction rate without a measured cost %v, want the baseline's", got)
	}
}
