package pools

import (
	"errors"
	"math"
	"testing"
)

func arange(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i)
	}
	return x
}

func scale(a []float64, k float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = a[i] * k
	}
	return out
}

// The published examples of the kneed Python package (its tests, with
// interp_method "interp1d", i.e. no smoothing), and the figure 2 curve of
// the Kneedle paper.
func TestKneeMatchesKneed(t *testing.T) {
	concaveInc := []float64{0, 60, 80, 85, 90, 95, 96, 97, 98, 99}
	concaveDec := []float64{99, 98, 97, 96, 95, 90, 85, 80, 60, 0}
	convexInc := []float64{1, 2, 3, 4, 5, 10, 15, 20, 40, 100}
	convexDec := []float64{100, 40, 20, 15, 10, 5, 4, 3, 2, 1}
	fig2x := make([]float64, 10)
	fig2y := make([]float64, 10)
	for i := range fig2x {
		fig2x[i] = float64(i) / 9
		fig2y[i] = -1/(fig2x[i]+0.1) + 5
	}
	flatX := arange(18)
	flatY := []float64{1, 0.787701317715959, 0.7437774524158126, 0.6559297218155198, 0.5065885797950219,
		0.36749633967789164, 0.2547584187408492, 0.16251830161054173, 0.10395314787701318, 0.06734992679355783,
		0.043923865300146414, 0.027818448023426062, 0.01903367496339678, 0.013177159590043924,
		0.010248901903367497, 0.007320644216691069, 0.005856515373352855, 0.004392386530014641}
	x10 := arange(10)
	for _, tc := range []struct {
		name  string
		x, y  []float64
		curve Curve
		dir   Direction
		s     float64
		want  float64
	}{
		{"figure2", fig2x, fig2y, Concave, Increasing, 1, 2.0 / 9},
		{"concave increasing", x10, concaveInc, Concave, Increasing, 1, 2},
		{"concave decreasing", x10, concaveDec, Concave, Decreasing, 1, 7},
		{"convex increasing", x10, convexInc, Convex, Increasing, 1, 7},
		{"convex decreasing", x10, convexDec, Convex, Decreasing, 1, 2},
		{"concave increasing truncated", scale(x10, 0.1, 7), scale(concaveInc, 0.1, 7), Concave, Increasing, 1, 0.2},
		{"concave decreasing truncated", scale(x10, 0.1, 7), scale(concaveDec, 0.1, 7), Concave, Decreasing, 1, 0.4},
		{"convex increasing truncated", scale(x10, 0.1, 7), scale(convexInc, 0.1, 7), Convex, Increasing, 1, 0.4},
		{"convex decreasing truncated", scale(x10, 0.1, 7), scale(convexDec, 0.1, 7), Convex, Decreasing, 1, 0.2},
		{"bumpy", arange(len(bumpy)), bumpy, Convex, Decreasing, 1, 26},
		{"flat maxima S=0", flatX, flatY, Convex, Decreasing, 0, 1},
		{"flat maxima S=1", flatX, flatY, Convex, Decreasing, 1, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Kneedle{Curve: tc.curve, Direction: tc.dir, Sensitivity: tc.s}.Knee(tc.x, tc.y)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("knee %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNoKnee(t *testing.T) {
	for _, tc := range []struct {
		name  string
		x, y  []float64
		curve Curve
		dir   Direction
	}{
		{"kneed y_no_knee", []float64{1, 2, 3}, []float64{0.90483742, 0.81873075, 0.74081822}, Convex, Decreasing},
		{"constant", arange(10), make([]float64, 10), Concave, Increasing},
		{"two points", []float64{1, 2}, []float64{1, 2}, Concave, Increasing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k, err := (Kneedle{Curve: tc.curve, Direction: tc.dir, Sensitivity: 1}).Knee(tc.x, tc.y); !errors.Is(err, ErrNoKnee) {
				t.Errorf("knee %v, err %v; want ErrNoKnee", k, err)
			}
		})
	}
	if _, err := (Kneedle{Sensitivity: 1}).Knee([]float64{1, 1, 2}, []float64{1, 2, 3}); err == nil || errors.Is(err, ErrNoKnee) {
		t.Errorf("repeated x: %v, want an error about x", err)
	}
}

// kneed's test_sine: online knees of sin(x) on [0, 10) in steps of 0.1.
func TestKneeOnlineSine(t *testing.T) {
	x := make([]float64, 100)
	y := make([]float64, 100)
	for i := range x {
		x[i] = float64(i) * 0.1
		y[i] = math.Sin(x[i])
	}
	for _, tc := range []struct {
		dir   Direction
		curve Curve
		want  float64
	}{
		{Decreasing, Convex, 4.5},
		{Increasing, Convex, 4.9},
		{Increasing, Concave, 7.7},
		{Decreasing, Concave, 1.8},
	} {
		got, err := Kneedle{Curve: tc.curve, Direction: tc.dir, Sensitivity: 1, Online: true}.Knee(x, y)
		if err != nil || math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("direction %v curve %v: knee %v (%v), want %v", tc.dir, tc.curve, got, err, tc.want)
		}
	}
}

// bumpy is kneed's DataGenerator.bumpy().
var bumpy = []float64{
	7305.0, 6979.0, 6666.6, 6463.2, 6326.5, 6048.8, 6032.8, 5762.0, 5742.8, 5398.2,
	5256.8, 5227.0, 5001.7, 4942.0, 4854.2, 4734.6, 4558.7, 4491.1, 4411.6, 4333.0,
	4234.6, 4139.1, 4056.8, 4022.5, 3868.0, 3808.3, 3745.3, 3692.3, 3645.6, 3618.3,
	3574.3, 3504.3, 3452.4, 3401.2, 3382.4, 3340.7, 3301.1, 3247.6, 3190.3, 3180.0,
	3154.2, 3089.5, 3045.6, 2989.0, 2993.6, 2941.3, 2875.6, 2866.3, 2834.1, 2785.1,
	2759.7, 2763.2, 2720.1, 2660.1, 2690.2, 2635.7, 2632.9, 2574.6, 2556.0, 2545.7,
	2513.4, 2491.6, 2496.0, 2466.5, 2442.7, 2420.5, 2381.5, 2388.1, 2340.6, 2335.0,
	2318.9, 2319.0, 2308.2, 2262.2, 2235.8, 2259.3, 2221.0, 2202.7, 2184.3, 2170.1,
	2160.0, 2127.7, 2134.7, 2102.0, 2101.4, 2066.4, 2074.3, 2063.7, 2048.1, 2031.9,
}
