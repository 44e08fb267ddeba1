package pools

import (
	"math"
	"math/rand/v2"
	"testing"
)

// model is the goodput of a service with a wait of w and CPU per call
// c0 + k*(n-1) at n calls in flight on one core: limited by concurrency
// below the best n, by the growing CPU cost above it.
func model(n, w, c0, k float64) float64 {
	c := c0 + k*(n-1)
	return math.Min(n/(w+c), 1/c)
}

func samplesOf(f func(float64) float64, levels []float64, per int, noise float64, seed uint64) []Sample {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []Sample
	for _, l := range levels {
		for range per {
			n := l * (1 + 0.03*r.NormFloat64())
			out = append(out, Sample{Limit: int(l), Concurrency: n, Goodput: f(n) * (1 + noise*r.NormFloat64())})
		}
	}
	return out
}

func TestAdviseFindsTheKnee(t *testing.T) {
	levels := []float64{1, 2, 3, 4, 6, 8, 11, 16, 23, 32}
	for _, tc := range []struct {
		name   string
		f      func(float64) float64
		lo, hi int
	}{
		// Best at about 7.5 in flight (3 ms wait, 300 us + 25 us per other
		// call in flight): the knee is just before the top.
		{"contention", func(n float64) float64 { return model(n, 3e-3, 300e-6, 25e-6) }, 5, 9},
		// No contention: goodput rises until the core is busy (at 11 in
		// flight) and stays there; the knee is where it levels off.
		{"saturating", func(n float64) float64 { return model(n, 3e-3, 300e-6, 0) }, 8, 13},
		// Only falls: the smallest concurrency is best.
		{"falling", func(n float64) float64 { return 1000 / n }, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				a, err := Advise(samplesOf(tc.f, levels, 15, 0.03, seed))
				if err != nil {
					t.Fatal(err)
				}
				if a.Recommended < tc.lo || a.Recommended > tc.hi {
					t.Errorf("seed %d: recommended %d (knee %.2f, peak %.2f, degree %d), want %d..%d",
						seed, a.Recommended, a.Knee, a.Peak, a.Degree, tc.lo, tc.hi)
				}
				if best := tc.f(a.Peak); tc.f(float64(a.Recommended)) < 0.85*best {
					t.Errorf("seed %d: goodput at the recommendation %.0f is below 85%% of %.0f", seed, tc.f(float64(a.Recommended)), best)
				}
			}
		})
	}
}

func TestAdviseRejectsBadSamples(t *testing.T) {
	few := []Sample{{Concurrency: 1, Goodput: 1}, {Concurrency: 2, Goodput: 2}}
	flat := make([]Sample, 40)
	for i := range flat {
		flat[i] = Sample{Concurrency: 4, Goodput: float64(i)}
	}
	nan := samplesOf(func(n float64) float64 { return n }, []float64{1, 2, 3, 4}, 5, 0, 1)
	nan[3].Goodput = math.NaN()
	zero := samplesOf(func(n float64) float64 { return 0 }, []float64{1, 2, 4, 8}, 5, 0, 1)
	for name, s := range map[string][]Sample{"few": few, "flat": flat, "nan": nan, "no good call": zero} {
		if _, err := Advise(s); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestFitPolyRecoversAPolynomial(t *testing.T) {
	var x, y []float64
	for i := range 30 {
		v := float64(i) / 3
		x, y = append(x, v), append(y, 2-3*v+0.5*v*v)
	}
	p, cv, err := FitCV(x, y, 1, 6, 5)
	if err != nil {
		t.Fatal(err)
	}
	if p.Degree() < 2 {
		t.Errorf("chose degree %d for a quadratic (cv %v)", p.Degree(), cv)
	}
	for _, v := range []float64{0, 2.5, 9.6} {
		if got, want := p.At(v), 2-3*v+0.5*v*v; math.Abs(got-want) > 1e-6 {
			t.Errorf("At(%v) = %v, want %v", v, got, want)
		}
	}
}

func TestLimitFor(t *testing.T) {
	var s []Sample
	for _, l := range []int{1, 2, 4, 8, 16, 32} {
		for range 5 {
			// The service runs half its limit: too little load reaches it.
			s = append(s, Sample{Limit: l, Concurrency: float64(l) / 2})
		}
	}
	for _, tc := range []struct {
		conc float64
		want int
	}{{0.5, 1}, {2, 4}, {3, 6}, {6, 12}, {16, 32}, {40, 32}} {
		if got := LimitFor(tc.conc, s); got != tc.want {
			t.Errorf("LimitFor(%v) = %d, want %d", tc.conc, got, tc.want)
		}
	}
	if got := LimitFor(6.4, []Sample{{Concurrency: 3}, {Concurrency: 9}}); got != 6 {
		t.Errorf("without limits: %d, want the concurrency rounded (6)", got)
	}
}
