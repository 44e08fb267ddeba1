//go:build lab

package main

import (
	"math"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// The rows of bench placement judge every variant against the mean of
// the keep runs' truths of the same iteration, line up on the first keep
// run's time per call, and give the bound no interval.
func TestPlacementRows(t *testing.T) {
	truth := func(runs ...float64) []float64 { return runs }
	keepC := &report.Results{Points: []report.Point{
		{ReductionUS: 250, PredictedRPS: 1100, IntervalLowRPS: 1000, IntervalHighRPS: 1200, TrueRuns: truth(1000)},
		{ReductionUS: 500, PredictedRPS: 1500, IntervalLowRPS: 1400, IntervalHighRPS: 1600, TrueRuns: truth(1300)},
	}}
	keepS := &report.Results{Points: []report.Point{
		{ReductionUS: 240, PredictedRPS: 1200, IntervalLowRPS: 1150, IntervalHighRPS: 1300, TrueRuns: truth(1200)},
		{ReductionUS: 480, PredictedRPS: 1400, IntervalLowRPS: 1300, IntervalHighRPS: 1500, TrueRuns: truth(1500)},
	}}
	shared := &report.Results{Points: []report.Point{
		{ReductionUS: 260, PredictedRPS: 900, IntervalLowRPS: 850, IntervalHighRPS: 950, DeployedBoundRPS: 1210},
		{ReductionUS: 520, PredictedRPS: 1000, IntervalLowRPS: 900, IntervalHighRPS: 1100},
	}}
	variants := placementVariants([]string{"cgroup", "signal"})
	its := []placementIteration{{N: 2, Results: map[string]*report.Results{"keep/cgroup": keepC, "keep/signal": keepS, "shared": shared}}}
	rows := placementRows("demo", "cart", variants, its)
	type want struct {
		variant string
		red     float64
		pred    float64
		errPct  float64
		covered string // "yes", "no", "" for none
	}
	wants := []want{
		{"keep/cgroup", 250, 1100, 0, "yes"}, {"keep/cgroup", 500, 1500, 7.142857, "yes"},
		{"keep/signal", 250, 1200, 9.090909, "no"}, {"keep/signal", 500, 1400, 0, "yes"},
		{"shared", 250, 900, -18.181818, "no"}, {"shared", 500, 1000, -28.571429, "no"},
		{"bound", 250, 1210, 10, ""},
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(wants), rows)
	}
	for i, w := range wants {
		r := rows[i]
		cov := ""
		if r.Covered != nil {
			cov = map[bool]string{true: "yes", false: "no"}[*r.Covered]
		}
		if r.Config != "demo #2" || r.Variant != w.variant || r.ReductionUS != w.red || r.PredictedRPS != w.pred ||
			r.ErrorPct == nil || math.Abs(*r.ErrorPct-w.errPct) > 1e-5 || cov != w.covered {
			e := math.NaN()
			if r.ErrorPct != nil {
				e = *r.ErrorPct
			}
			t.Errorf("row %d: %s %s at %.0f µs: predicted %.0f, error %.6f, covered %q; want %+v", i, r.Config, r.Variant, r.ReductionUS, r.PredictedRPS, e, cov, w)
		}
	}
	if b := rows[len(rows)-1]; b.IntervalHighRPS != 0 || b.Estimate != "" {
		t.Errorf("the bound has an interval: %+v", b)
	}
}

// TestPlacementRowsRealChange: with a truth measured with the real change
// applied (--truth-on), every variant's point is read against it, not
// against ground truths the keep runs do not have.
func TestPlacementRowsRealChange(t *testing.T) {
	keep := &report.Results{Points: []report.Point{{ReductionUS: 400, PredictedRPS: 900, IntervalLowRPS: 800, IntervalHighRPS: 1050}}}
	shared := &report.Results{Points: []report.Point{{ReductionUS: 380, PredictedRPS: 500, IntervalLowRPS: 450, IntervalHighRPS: 550, DeployedBoundRPS: 1100}}}
	its := []placementIteration{{N: 1, Truth: 1000, Results: map[string]*report.Results{"keep/cgroup": keep, "shared": shared}}}
	rows := placementRows("boutique", "productcatalog", placementVariants([]string{"cgroup"}), its)
	want := map[string]float64{"keep/cgroup": -10, "shared": -50, "bound": 10}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for _, r := range rows {
		if r.TrueRPS != 1000 || r.ReductionUS != 400 || r.ErrorPct == nil || math.Abs(*r.ErrorPct-want[r.Variant]) > 1e-9 {
			t.Errorf("%s: truth %.0f at %.0f µs, error %v; want truth 1000 at 400 µs, error %.0f%%", r.Variant, r.TrueRPS, r.ReductionUS, r.ErrorPct, want[r.Variant])
		}
	}
	if c := rows[0].Covered; c == nil || !*c {
		t.Errorf("keep's interval 800-1050 holds 1000: covered %v", c)
	}

	// Without the truth run (it failed), nothing is compared.
	its[0].Truth = 0
	for _, r := range placementRows("boutique", "productcatalog", placementVariants([]string{"cgroup"}), its) {
		if r.ErrorPct != nil || r.TrueRPS != 0 {
			t.Errorf("%s: an error against no truth: %+v", r.Variant, r)
		}
	}
}
