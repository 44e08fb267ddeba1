package pools

import (
	"errors"
	"fmt"
	"math"
)

// Curve is the shape of the curve Knee looks at.
type Curve int

// Shapes: a concave curve has a knee, a convex one an elbow.
const (
	Concave Curve = iota
	Convex
)

// Direction says whether the curve rises or falls with x.
type Direction int

// Directions.
const (
	Increasing Direction = iota
	Decreasing
)

// ErrNoKnee is returned when the curve has no knee (a straight line, a
// constant, or too few points).
var ErrNoKnee = errors.New("no knee")

// Kneedle finds knees (or elbows) with the Kneedle algorithm (Satopää et
// al., ICDCS-W 2011), as the kneed Python package computes it without
// smoothing: normalize both axes to [0, 1], turn the curve into a concave
// increasing one, take the difference curve y - x, and call a knee the x of
// a local maximum of the difference curve after which it falls below that
// maximum minus Sensitivity times the mean step of x (a local minimum on
// the way resets the threshold to 0).
type Kneedle struct {
	Curve     Curve
	Direction Direction
	// Sensitivity: the paper suggests 1; smaller finds knees sooner.
	Sensitivity float64
	// Online keeps looking after the first knee and returns the last one
	// found (kneed's online=True); otherwise the first is returned.
	Online bool
}

// Knee returns the knee of the curve through (x[i], y[i]); x must be
// strictly increasing.
func (k Kneedle) Knee(x, y []float64) (float64, error) {
	curve, dir, sensitivity := k.Curve, k.Direction, k.Sensitivity
	n := len(x)
	if n != len(y) {
		return 0, fmt.Errorf("x has %d points and y %d", n, len(y))
	}
	if n < 3 {
		return 0, ErrNoKnee
	}
	for i := 1; i < n; i++ {
		if !(x[i] > x[i-1]) {
			return 0, fmt.Errorf("x must be strictly increasing: x[%d]=%v after %v", i, x[i], x[i-1])
		}
	}
	xn, yn := normalize(x), normalize(y)
	if yn == nil {
		return 0, ErrNoKnee // constant
	}
	flipped := false
	switch {
	case dir == Decreasing && curve == Concave:
		reverse(yn)
		flipped = true
	case dir == Decreasing && curve == Convex:
		for i := range yn {
			yn[i] = 1 - yn[i]
		}
	case dir == Increasing && curve == Convex:
		for i := range yn {
			yn[i] = 1 - yn[i]
		}
		reverse(yn)
		flipped = true
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = yn[i] - xn[i]
	}
	// Local extrema, ties included, the ends compared with their one
	// neighbour (scipy's argrelextrema in "clip" mode).
	isMax := make([]bool, n)
	isMin := make([]bool, n)
	first := -1
	for i := range d {
		prev, next := d[max(i-1, 0)], d[min(i+1, n-1)]
		isMax[i] = d[i] >= prev && d[i] >= next
		isMin[i] = d[i] <= prev && d[i] <= next
		if isMax[i] && first < 0 {
			first = i
		}
	}
	if first < 0 {
		return 0, ErrNoKnee
	}
	step := (xn[n-1] - xn[0]) / float64(n-1) // mean of the x steps
	threshold, at, found := 0.0, -1, -1
	for i := first; i < n-1; i++ {
		if isMax[i] {
			threshold, at = d[i]-sensitivity*step, i
		}
		if isMin[i] {
			threshold = 0
		}
		if d[i+1] < threshold && at >= 0 {
			found = at
			if !k.Online {
				break
			}
		}
	}
	switch {
	case found < 0:
		return 0, ErrNoKnee
	case flipped:
		return x[n-1-found], nil
	}
	return x[found], nil
}

// normalize maps a onto [0, 1]; nil when a is constant.
func normalize(a []float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range a {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if !(hi > lo) {
		return nil
	}
	out := make([]float64, len(a))
	for i, v := range a {
		out[i] = (v - lo) / (hi - lo)
	}
	return out
}

func reverse(a []float64) {
	for i, j := 0, len(a)-1; i < j; i, j = i+1, j-1 {
		a[i], a[j] = a[j], a[i]
	}
}
