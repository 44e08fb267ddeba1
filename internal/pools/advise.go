package pools

import (
	"errors"
	"fmt"
	"math"
)

// Sample is one sampling window of a service: its mean number of calls in
// flight and the rate of calls it completed within its threshold.
type Sample struct {
	Concurrency float64 `json:"concurrency"`
	Goodput     float64 `json:"goodput"` // good calls per second
}

// Point is a point of the fitted curve.
type Point struct {
	Concurrency float64 `json:"concurrency"`
	Goodput     float64 `json:"goodput"`
}

// Advice is the recommended concurrency of one service and how it was found.
type Advice struct {
	// Recommended is the pool size: the knee's concurrency rounded, at
	// least 1.
	Recommended int `json:"recommended"`
	// Knee is the concurrency at the knee of the fitted curve, on its
	// rising part (up to Peak); KneeGoodput the fit there.
	Knee        float64 `json:"knee"`
	KneeGoodput float64 `json:"knee_goodput"`
	// Peak is the concurrency where the fitted goodput is highest.
	Peak        float64 `json:"peak"`
	PeakGoodput float64 `json:"peak_goodput"`
	// Degree of the polynomial chosen by cross-validation, and the
	// cross-validated RMSE of each degree tried (from MinDegree).
	Degree int       `json:"degree"`
	CVRMSE []float64 `json:"cv_rmse"`
	// Curve is the fit on a grid over the sampled concurrencies.
	Curve []Point `json:"curve"`
	Fit   Poly    `json:"-"`
}

// Fit settings: degrees tried and folds. Sora fits degree 5 to 8; lower
// degrees are tried too, so that few or flat samples are not overfitted.
const (
	MinDegree = 1
	MaxDegree = 8
	Folds     = 5
	gridSize  = 200
)

// Advise fits goodput against concurrency and finds the knee: the
// concurrency past which more calls in flight add little goodput (the
// Kneedle knee of the fit's rising part, up to its highest point). Where
// goodput only falls as concurrency grows, the knee is the smallest
// concurrency sampled.
func Advise(samples []Sample) (Advice, error) {
	if len(samples) < 2*Folds {
		return Advice{}, fmt.Errorf("%d samples are too few to fit goodput against concurrency (need at least %d)", len(samples), 2*Folds)
	}
	x := make([]float64, len(samples))
	y := make([]float64, len(samples))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, s := range samples {
		if math.IsNaN(s.Concurrency) || math.IsNaN(s.Goodput) || math.IsInf(s.Concurrency, 0) || math.IsInf(s.Goodput, 0) {
			return Advice{}, fmt.Errorf("sample %d is not finite: %+v", i, s)
		}
		x[i], y[i] = s.Concurrency, s.Goodput
		lo, hi = math.Min(lo, s.Concurrency), math.Max(hi, s.Concurrency)
	}
	if !(hi-lo >= 0.5) {
		return Advice{}, fmt.Errorf("concurrency hardly varied (%.2f to %.2f): no curve to fit", lo, hi)
	}
	fit, cv, err := FitCV(x, y, MinDegree, MaxDegree, Folds)
	if err != nil {
		return Advice{}, err
	}
	a := Advice{Fit: fit, Degree: fit.Degree(), CVRMSE: cv, Curve: make([]Point, gridSize)}
	gx := make([]float64, gridSize)
	gy := make([]float64, gridSize)
	peak := 0
	for i := range gx {
		gx[i] = lo + (hi-lo)*float64(i)/float64(gridSize-1)
		gy[i] = fit.At(gx[i])
		a.Curve[i] = Point{gx[i], gy[i]}
		if gy[i] > gy[peak] {
			peak = i
		}
	}
	a.Peak, a.PeakGoodput = gx[peak], gy[peak]
	knee := peak
	if peak >= 2 {
		// Online: a fit that starts flatter than its chord makes a
		// spurious first knee at the lowest concurrency; the last knee
		// before the peak is the one that matters.
		k, err := Kneedle{Curve: Concave, Direction: Increasing, Sensitivity: 1, Online: true}.Knee(gx[:peak+1], gy[:peak+1])
		switch {
		case err == nil:
			knee = int(math.Round((k - lo) / (hi - lo) * float64(gridSize-1)))
		case !errors.Is(err, ErrNoKnee):
			return Advice{}, err
		}
	}
	a.Knee, a.KneeGoodput = gx[knee], gy[knee]
	a.Recommended = max(1, int(math.Round(a.Knee)))
	return a, nil
}
