package pools

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Poly is a polynomial fitted on x scaled to [-1, 1] (which keeps the least
// squares well conditioned at degree 8).
type Poly struct {
	Coef   []float64 // lowest degree first, in the scaled variable
	Lo, Hi float64   // the x range mapped onto [-1, 1]
}

// Degree is the polynomial's degree.
func (p Poly) Degree() int { return len(p.Coef) - 1 }

// At evaluates the polynomial at x.
func (p Poly) At(x float64) float64 {
	u := p.scale(x)
	v := 0.0
	for i := len(p.Coef) - 1; i >= 0; i-- {
		v = v*u + p.Coef[i]
	}
	return v
}

func (p Poly) scale(x float64) float64 {
	if p.Hi == p.Lo {
		return 0
	}
	return 2*(x-p.Lo)/(p.Hi-p.Lo) - 1
}

// FitPoly fits a polynomial of the given degree to the points by least
// squares.
func FitPoly(x, y []float64, degree int) (Poly, error) {
	if len(x) != len(y) {
		return Poly{}, fmt.Errorf("x has %d points and y %d", len(x), len(y))
	}
	if degree < 0 || len(x) < degree+1 {
		return Poly{}, fmt.Errorf("%d points cannot fit a polynomial of degree %d", len(x), degree)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range x {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	p := Poly{Lo: lo, Hi: hi}
	a := mat.NewDense(len(x), degree+1, nil)
	for i, v := range x {
		u, pow := p.scale(v), 1.0
		for j := 0; j <= degree; j++ {
			a.Set(i, j, pow)
			pow *= u
		}
	}
	var c mat.VecDense
	if err := c.SolveVec(a, mat.NewVecDense(len(y), append([]float64(nil), y...))); err != nil {
		return Poly{}, fmt.Errorf("least squares of degree %d: %w", degree, err)
	}
	p.Coef = make([]float64, degree+1)
	for j := range p.Coef {
		p.Coef[j] = c.AtVec(j)
	}
	return p, nil
}

// FitCV fits polynomials of every degree in [minDeg, maxDeg] and keeps the
// one with the least mean squared error in k-fold cross-validation (point i
// is in fold i mod k, so folds interleave along a sweep). It returns the
// chosen fit, refitted on all points, and the cross-validated root mean
// squared error of each degree tried (NaN where a degree could not be
// fitted).
func FitCV(x, y []float64, minDeg, maxDeg, k int) (Poly, []float64, error) {
	if minDeg < 0 || maxDeg < minDeg || k < 2 {
		return Poly{}, nil, fmt.Errorf("bad cross-validation settings: degrees %d..%d, %d folds", minDeg, maxDeg, k)
	}
	n := len(x)
	cvErr := make([]float64, maxDeg-minDeg+1)
	best, bestErr := -1, math.Inf(1)
	for deg := minDeg; deg <= maxDeg; deg++ {
		cvErr[deg-minDeg] = math.NaN()
		if n-(n+k-1)/k < deg+2 { // the smallest training set must overdetermine the fit
			continue
		}
		var sse float64
		ok := true
		for f := 0; f < k && ok; f++ {
			var tx, ty, vx, vy []float64
			for i := range x {
				if i%k == f {
					vx, vy = append(vx, x[i]), append(vy, y[i])
				} else {
					tx, ty = append(tx, x[i]), append(ty, y[i])
				}
			}
			p, err := FitPoly(tx, ty, deg)
			if err != nil {
				ok = false
				break
			}
			for i := range vx {
				e := p.At(vx[i]) - vy[i]
				sse += e * e
			}
		}
		if !ok {
			continue
		}
		e := math.Sqrt(sse / float64(n))
		cvErr[deg-minDeg] = e
		if e < bestErr {
			best, bestErr = deg, e
		}
	}
	if best < 0 {
		return Poly{}, cvErr, errors.New("too few samples to fit goodput against concurrency")
	}
	p, err := FitPoly(x, y, best)
	return p, cvErr, err
}
