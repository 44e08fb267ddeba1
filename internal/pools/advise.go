package pools

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Sample is one sampling window of a service: its mean number of calls in
// flight and the rate of calls it completed within its threshold, and the
// admission limit in force (0: none).
type Sample struct {
	Limit       int     `json:"limit,omitempty"`
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
	// Recommended is the pool size: the smallest limit under which the
	// service ran the knee's concurrency (see LimitFor), at least 1.
	Recommended int `json:"recommended"`
	// Knee is the concurrency at the knee of the fitted curve, never past
	// Peak; KneeGoodput the fit there.
	Knee        float64 `json:"knee"`
	KneeGoodput float64 `json:"knee_goodput"`
	// Peak is the concurrency where the fitted goodput is highest.
	Peak        float64 `json:"peak"`
	PeakGoodput float64 `json:"peak_goodput"`
	// Degree of the polynomial chosen by cross-validation, and the
	// cross-validated RMSE of each degree tried (from MinDegree; 0 where
	// too few samples could fit it).
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
	// PlateauShare: the knee is never where the fit is below this share
	// of its peak.
	PlateauShare = 0.97
)

// Advise fits goodput against concurrency and finds the knee: the
// concurrency past which more calls in flight add little goodput, the
// Kneedle knee of the fit over every concurrency sampled (as Sora does),
// moved up to where the fit reaches PlateauShare of the peak (the best
// mean goodput of one limit, or the fit's highest point) if it is still
// below, and never past the fit's highest point. Where goodput only
// falls as concurrency grows, the knee is the smallest concurrency
// sampled.
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
	if slices.Max(y) <= 0 {
		return Advice{}, errors.New("no call ended within its threshold at any concurrency: the threshold is too tight for this service (a larger SLA, or fewer users)")
	}
	fit, cv, err := FitCV(x, y, MinDegree, MaxDegree, Folds)
	if err != nil {
		return Advice{}, err
	}
	for i := range cv {
		if math.IsNaN(cv[i]) {
			cv[i] = 0 // could not be fitted; JSON has no NaN
		}
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
	// Online: a fit that starts flatter than its chord makes a spurious
	// first knee at the lowest concurrency; the last knee is the one that
	// matters.
	k, err := Kneedle{Curve: Concave, Direction: Increasing, Sensitivity: 1, Online: true}.Knee(gx, gy)
	switch {
	case err == nil:
		knee = min(peak, int(math.Round((k-lo)/(hi-lo)*float64(gridSize-1))))
	case !errors.Is(err, ErrNoKnee):
		return Advice{}, err
	}
	// Kneedle's knee is where the normalized curve bends most; on a curve
	// that keeps climbing past it, a pool sized there leaves goodput
	// unused. The knee is moved up to where the fit comes within
	// PlateauShare of its peak: the smallest concurrency that gets
	// (nearly) the best goodput.
	// The peak compared with is the best mean goodput of any one limit
	// where the samples have limits: a polynomial's highest point can be
	// a wiggle at the end of its range.
	best := gy[peak]
	if m := bestLevelMean(samples); m > 0 && m < best {
		best = m
	}
	for knee < peak && gy[knee] < PlateauShare*best {
		knee++
	}
	a.Knee, a.KneeGoodput = gx[knee], gy[knee]
	a.Recommended = LimitFor(a.Knee, samples)
	return a, nil
}

// level is the mean of the samples taken under one limit.
type level struct {
	limit                int
	concurrency, goodput float64
}

// levels averages the samples per limit, in increasing limit order; none
// for samples without limits.
func levels(samples []Sample) []level {
	byLimit := map[int]*level{}
	n := map[int]float64{}
	for _, s := range samples {
		if s.Limit <= 0 {
			continue
		}
		l := byLimit[s.Limit]
		if l == nil {
			l = &level{limit: s.Limit}
			byLimit[s.Limit] = l
		}
		l.concurrency += s.Concurrency
		l.goodput += s.Goodput
		n[s.Limit]++
	}
	out := make([]level, 0, len(byLimit))
	for lim, l := range byLimit {
		out = append(out, level{limit: lim, concurrency: l.concurrency / n[lim], goodput: l.goodput / n[lim]})
	}
	slices.SortFunc(out, func(a, b level) int { return a.limit - b.limit })
	return out
}

// bestLevelMean is the highest mean goodput of the samples of one limit;
// 0 without limits.
func bestLevelMean(samples []Sample) float64 {
	best := 0.0
	for _, l := range levels(samples) {
		best = max(best, l.goodput)
	}
	return best
}

// LimitFor returns the smallest admission limit under which the samples
// show the service running conc calls at a time: where the offered load
// keeps a service at its limit, conc rounded; where the service ran below
// its limits (too little load reached it), the limit is interpolated
// between the limits sampled, by their mean concurrency. Samples without a
// limit count as running at their own concurrency.
func LimitFor(conc float64, samples []Sample) int {
	ls := levels(samples)
	if len(ls) == 0 {
		return max(1, int(math.Round(conc)))
	}
	prevL, prevC := 0.0, 0.0
	for _, l := range ls {
		if c := l.concurrency; c >= conc-0.5 { // within rounding of the knee
			if c <= prevC {
				return max(1, l.limit)
			}
			x := prevL + (float64(l.limit)-prevL)*(conc-prevC)/(c-prevC)
			return max(1, min(l.limit, int(math.Round(x))))
		}
		prevL, prevC = float64(l.limit), l.concurrency
	}
	return max(1, ls[len(ls)-1].limit)
}
