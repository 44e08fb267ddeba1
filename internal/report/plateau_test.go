package report

import (
	"math"
	"strings"
	"testing"
)

// pt is a point at d µs (u1 = 1000 µs) with a prediction, a flag set and,
// when truth > 0, a ground truth and its error.
func pt(d, pred float64, bound bool, truth float64) Point {
	p := Point{ReductionPct: d / 10, ReductionUS: d, PredictedRPS: pred, StdErrPct: d / 1000, Flags: []string{}}
	if bound {
		p.Flags = append(p.Flags, FlagSharedBound)
	}
	if truth > 0 {
		e := (pred - truth) / truth * 100
		p.TrueRPS, p.ErrorPct = &truth, &e
	}
	return p
}

func TestLevelSharedBound(t *testing.T) {
	infeasible := pt(800, 0, true, 0)
	infeasible.Flags = append(infeasible.Flags, FlagInfeasible)
	for _, tc := range []struct {
		name      string
		in        []Point
		want      []float64 // predicted_rps after
		raw       []float64 // raw_predicted_rps after (0: unchanged)
		onset     int
		capacity  float64
		plateaued bool
	}{
		{
			name: "no shared-bound point: nothing changes, even where the curve falls",
			in:   []Point{pt(200, 1400, false, 0), pt(400, 1300, false, 0)},
			want: []float64{1400, 1300}, raw: []float64{0, 0}, onset: -1,
		},
		{
			name: "the issue's hotel run: the falling tail carries the largest shared-bound prediction",
			in:   []Point{pt(200, 1440, false, 0), pt(400, 1887, false, 0), pt(600, 2008, true, 0), pt(800, 1819, true, 0), pt(1000, 1813, true, 0)},
			want: []float64{1440, 1887, 2008, 2008, 2008}, raw: []float64{0, 0, 0, 1819, 1813},
			onset: 2, capacity: 2008, plateaued: true,
		},
		{
			name: "a later shared-bound point measured the capacity higher: every shared-bound point carries it",
			in:   []Point{pt(200, 2574, false, 0), pt(400, 2778, true, 0), pt(600, 2900, true, 0), pt(800, 3093, true, 0), pt(1000, 2775, true, 0)},
			want: []float64{2574, 3093, 3093, 3093, 3093}, raw: []float64{0, 2778, 2900, 0, 2775},
			onset: 1, capacity: 3093, plateaued: true,
		},
		{
			name: "never below a target-bound point at a smaller reduction",
			in:   []Point{pt(200, 1500, false, 0), pt(400, 1400, true, 0), pt(600, 1350, true, 0)},
			want: []float64{1500, 1500, 1500}, raw: []float64{0, 1400, 1350},
			onset: 1, capacity: 1500, plateaued: true,
		},
		{
			name: "a point not flagged after the onset is left alone",
			in:   []Point{pt(200, 1400, false, 0), pt(400, 1600, true, 0), pt(600, 1500, false, 0), pt(800, 1450, true, 0)},
			want: []float64{1400, 1600, 1500, 1600}, raw: []float64{0, 0, 0, 1450},
			onset: 1, capacity: 1600, plateaued: true,
		},
		{
			name: "infeasible points are left alone and do not set the capacity",
			in:   []Point{pt(200, 1400, false, 0), pt(600, 1600, true, 0), infeasible},
			want: []float64{1400, 1600, 0}, raw: []float64{0, 0, 0},
			onset: 1, capacity: 1600, plateaued: true,
		},
		{
			name: "points in any order",
			in:   []Point{pt(1000, 1813, true, 0), pt(200, 1440, false, 0), pt(600, 2008, true, 0)},
			want: []float64{2008, 1440, 2008}, raw: []float64{1813, 0, 0},
			onset: 2, capacity: 2008, plateaued: true,
		},
		{
			name: "a shared-bound point at no reduction does not count",
			in:   []Point{pt(0, 1100, true, 0), pt(200, 1000, false, 0)},
			want: []float64{1100, 1000}, raw: []float64{0, 0}, onset: -1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onset, capacity, ok := LevelSharedBound(tc.in)
			if onset != tc.onset || capacity != tc.capacity || ok != tc.plateaued {
				t.Errorf("onset %d, capacity %v, ok %v; want %d, %v, %v", onset, capacity, ok, tc.onset, tc.capacity, tc.plateaued)
			}
			for i, p := range tc.in {
				if p.PredictedRPS != tc.want[i] || p.RawPredictedRPS != tc.raw[i] {
					t.Errorf("point %v µs: predicted %v, raw %v; want %v, %v", p.ReductionUS, p.PredictedRPS, p.RawPredictedRPS, tc.want[i], tc.raw[i])
				}
			}
		})
	}
}

// The standard error and the error of a levelled point are those of the
// value it carries; the measured error stays in raw_error_pct.
func TestLevelSharedBoundErrors(t *testing.T) {
	ps := []Point{pt(600, 2008, true, 2191), pt(800, 1819, true, 2185)}
	LevelSharedBound(ps)
	p := ps[1]
	if p.StdErrPct != ps[0].StdErrPct {
		t.Errorf("std err %v, want the 600 µs point's %v", p.StdErrPct, ps[0].StdErrPct)
	}
	if p.ErrorPct == nil || p.RawErrorPct == nil {
		t.Fatalf("error %v, raw error %v: want both", p.ErrorPct, p.RawErrorPct)
	}
	if want := (2008.0 - 2185) / 2185 * 100; math.Abs(*p.ErrorPct-want) > 1e-9 {
		t.Errorf("error %v, want %v", *p.ErrorPct, want)
	}
	if want := (1819.0 - 2185) / 2185 * 100; math.Abs(*p.RawErrorPct-want) > 1e-9 {
		t.Errorf("raw error %v, want %v", *p.RawErrorPct, want)
	}
	if ps[0].RawErrorPct != nil || ps[0].RawPredictedRPS != 0 {
		t.Errorf("the capacity's own point changed: %+v", ps[0])
	}
}

func TestApplyPlateau(t *testing.T) {
	results := func(ps ...Point) *Results {
		return &Results{
			Kind: KindValidate, Target: "profile", C1: 1, Q1: 1, U1US: 1000,
			Baseline: Baseline{RPS: 1146},
			Settings: Settings{Placement: map[string][]int{"profile": {1}, "search": {0}, "frontend": {0}}},
			Points:   ps,
		}
	}
	for _, tc := range []struct {
		name     string
		r        *Results
		plateau  bool
		stopUS   float64
		rmse     float64
		rawRMSE  float64 // 0: none
		describe string
	}{
		{
			name: "the issue's run: gains stop between 400 and 600 µs, where the target's curve reaches the capacity",
			r: results(pt(200, 1440, false, 1459), pt(400, 1887, false, 1935), pt(600, 2008, true, 2191),
				pt(800, 1819, true, 2185), pt(1000, 1813, true, 2194)),
			plateau: true,
			// 400 µs + (1/1887 - 1/2008) s
			stopUS:   400 + (1/1887.0-1/2008.0)*1e6,
			rmse:     rmseOf(1440/1459.0, 1887/1935.0, 2008/2191.0, 2008/2185.0, 2008/2194.0),
			rawRMSE:  rmseOf(1440/1459.0, 1887/1935.0, 2008/2191.0, 1819/2185.0, 1813/2194.0),
			describe: "gains stop at about 43% (432 µs): beyond it the cores shared by frontend, search are the limit, at least 2008 req/s",
		},
		{
			name:    "bound from the first point: from the baseline",
			r:       results(pt(200, 1300, true, 1300), pt(400, 1250, true, 1300)),
			plateau: true,
			stopUS:  (1/1146.0 - 1/1300.0) * 1e6,
			rmse:    0, rawRMSE: rmseOf(1, 1250/1300.0),
		},
		{
			name:    "the target's curve is above the measured capacity already: the stop is at the last point it bound, the level its prediction",
			r:       results(pt(200, 1500, false, 0), pt(400, 1450, true, 0)),
			plateau: true, stopUS: 200, describe: "gains stop at about 20% (200 µs): beyond it the cores shared by frontend, search are the limit, at least 1500 req/s",
		},
		{
			name: "the curve ends on a point not shared-bound: no plateau",
			r:    results(pt(200, 1300, true, 0), pt(400, 1500, false, 0)),
		},
		{
			name: "nothing shared-bound",
			r:    results(pt(200, 1300, false, 1300), pt(400, 1500, false, 1500)),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			if r.Points[0].ErrorPct != nil {
				var sq float64
				for _, p := range r.Points {
					sq += *p.ErrorPct * *p.ErrorPct
				}
				rmse := math.Sqrt(sq / float64(len(r.Points)))
				r.RMSEPct = &rmse
			}
			ApplyPlateau(r)
			if (r.Plateau != nil) != tc.plateau {
				t.Fatalf("plateau %+v, want one: %v", r.Plateau, tc.plateau)
			}
			if r.Plateau != nil {
				if math.Abs(r.Plateau.StopUS-tc.stopUS) > 1e-6 || math.Abs(r.Plateau.StopPct-tc.stopUS/10) > 1e-6 {
					t.Errorf("stop at %v µs (%v%%), want %v µs", r.Plateau.StopUS, r.Plateau.StopPct, tc.stopUS)
				}
				if tc.describe != "" && r.Plateau.Describe() != tc.describe {
					t.Errorf("Describe() = %q\nwant          %q", r.Plateau.Describe(), tc.describe)
				}
			}
			if tc.rawRMSE == 0 {
				if r.RawRMSEPct != nil {
					t.Errorf("raw RMSE %v, want none", *r.RawRMSEPct)
				}
				return
			}
			if r.RMSEPct == nil || math.Abs(*r.RMSEPct-tc.rmse) > 1e-9 {
				t.Errorf("RMSE %v, want %v", r.RMSEPct, tc.rmse)
			}
			if r.RawRMSEPct == nil || math.Abs(*r.RawRMSEPct-tc.rawRMSE) > 1e-9 {
				t.Errorf("raw RMSE %v, want %v", r.RawRMSEPct, tc.rawRMSE)
			}
		})
	}
}

// rmseOf is the RMSE (%) of predictions given as ratios to the truth.
func rmseOf(ratios ...float64) float64 {
	var sq float64
	for _, x := range ratios {
		sq += (x - 1) * 100 * (x - 1) * 100
	}
	return math.Sqrt(sq / float64(len(ratios)))
}

// The table, the report's headline and the ranking say where the gains
// stop, not the largest reduction's figure, and keep the measured values
// in sight.
func TestPlateauIsReported(t *testing.T) {
	r := &Results{
		Kind: KindValidate, App: "hotel", Target: "profile", C1: 1, Q1: 1, U1US: 1000,
		Baseline: Baseline{RPS: 1146, Runs: []float64{1146}},
		Settings: Settings{Placement: map[string][]int{"profile": {1}, "search": {0}, "frontend": {0}}},
		Points: []Point{pt(200, 1440, false, 1459), pt(400, 1887, false, 1935), pt(600, 2008, true, 2191),
			pt(800, 1819, true, 2185), pt(1000, 1813, true, 2194)},
	}
	ApplyPlateau(r)
	var b strings.Builder
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2008.0*", "Gains stop at about 43% (432 µs): beyond it the cores shared by frontend, search are the limit, at least 2008 req/s.",
		"as measured (raw_predicted_rps): 80% 1819.0, 100% 1813.0", "(as measured, before levelling: RMSE",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	headline, notes := resultsHeadline(r)
	if want := "from 1146 to at least 2008 req/s (+75.2%) and no further: gains stop at about 43% less CPU per call (432 µs), beyond which the cores shared by frontend, search are the limit."; !strings.Contains(headline, want) {
		t.Errorf("headline %q lacks %q", headline, want)
	}
	if strings.Contains(headline, "1813") {
		t.Errorf("headline %q quotes the largest reduction's measured figure", headline)
	}
	if n := strings.Join(notes, " "); !strings.Contains(n, "1819 at 80%, 1813 at 100%") {
		t.Errorf("notes lack the measured predictions: %q", n)
	}

	e := RankEntry{Service: "profile", Results: r}
	Judge(&e, 5)
	if want := (2008/1146.0 - 1) * 100; math.Abs(e.GainPct-want) > 1e-9 || e.Verdict != VerdictGain {
		t.Errorf("gain %v (%s), want %v (gain)", e.GainPct, e.Verdict, want)
	}
	rank := &Rank{App: "hotel", Reductions: []string{"200us", "400us", "600us", "800us", "1000us"}, Entries: []RankEntry{e}}
	rank.Order()
	b.Reset()
	if err := WriteRankTable(&b, rank); err != nil {
		t.Fatal(err)
	}
	if want := "gain (gains stop at about 43%: the shared cores bind)"; !strings.Contains(b.String(), want) {
		t.Errorf("rank table lacks %q:\n%s", want, b.String())
	}
	if h, _ := rankHeadline(rank); !strings.Contains(h, "gains stop at about 43% less CPU per call") {
		t.Errorf("rank headline %q does not say where the gains stop", h)
	}
}

func TestPlateauDescribePerRequest(t *testing.T) {
	pl := &Plateau{StopPct: 40, StopUS: 1200, CapacityRPS: 800, Shared: []string{"a"}}
	if got := pl.Describe(); strings.Contains(got, "per request") || !strings.Contains(got, "(1200 µs)") {
		t.Errorf("per call: %q", got)
	}
	pl.PerRequest = true
	if got := pl.Describe(); !strings.Contains(got, "(1200 µs per request)") {
		t.Errorf("per request: %q", got)
	}
}

// A point raised to the capacity runs' capacity before levelling keeps
// what it measured through the levelling, the points levelled to it
// theirs, and the table says where the capacity came from.
func TestCapacityRaisedPointLevelled(t *testing.T) {
	raised := pt(600, 2150, true, 2191)
	raised.RawPredictedRPS = 2008
	rawErr := (2008.0 - 2191) / 2191 * 100
	raised.RawErrorPct = &rawErr
	raised.Diagnostics = &PointDiagnostics{CapacityRPS: 2150}
	r := &Results{
		Kind: KindValidate, App: "hotel", Target: "profile", C1: 1, Q1: 1, U1US: 1000,
		Baseline: Baseline{RPS: 1146, Runs: []float64{1146}},
		Settings: Settings{Placement: map[string][]int{"profile": {1}, "search": {0}}},
		Points:   []Point{pt(400, 1887, false, 1935), raised, pt(800, 1819, true, 2185)},
	}
	ApplyPlateau(r)
	if p := r.Points[1]; p.PredictedRPS != 2150 || p.RawPredictedRPS != 2008 || p.RawErrorPct == nil || *p.RawErrorPct != rawErr {
		t.Errorf("raised point: prediction %.1f, raw %.1f, raw error %v; want 2150, 2008, %v", p.PredictedRPS, p.RawPredictedRPS, p.RawErrorPct, rawErr)
	}
	if p := r.Points[2]; p.PredictedRPS != 2150 || p.RawPredictedRPS != 1819 {
		t.Errorf("levelled point: prediction %.1f, raw %.1f; want 2150, 1819", p.PredictedRPS, p.RawPredictedRPS)
	}
	if r.RawRMSEPct == nil || r.RMSEPct == nil || *r.RawRMSEPct <= *r.RMSEPct {
		t.Errorf("RMSE %v, raw RMSE %v: want the raw one reported, and larger", r.RMSEPct, r.RawRMSEPct)
	}
	var b strings.Builder
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if r.Plateau == nil || !r.Plateau.Unslowed {
		t.Fatalf("plateau %+v: want it marked as the capacity runs' estimate", r.Plateau)
	}
	if want := "are the limit, about 2150 req/s."; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	if h, _ := resultsHeadline(r); !strings.Contains(h, "to about 2150 req/s") {
		t.Errorf("headline %q does not say about 2150 req/s", h)
	}
	if want := "* raised to the shared cores' capacity (the capacity runs measured 2150 req/s unslowed"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	if want := "as measured (raw_predicted_rps): 60% 2008.0, 80% 1819.0"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}
