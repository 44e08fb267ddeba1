package experiment

import (
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// The 0% point's distance from the baseline is recorded, and warned of
// where it is beyond the noise of the two.
func TestArmedCost(t *testing.T) {
	tests := []struct {
		name     string
		base     []float64
		zero     []float64 // the 0% point's slowdown runs; nil: no such point
		wantCost bool
		wantWarn bool
	}{
		{"no 0% point", []float64{1000, 1004}, nil, false, false},
		{"within noise", []float64{1000, 1040}, []float64{990, 1030}, true, false},
		{"beyond noise", []float64{1000, 1004}, []float64{900, 903}, true, true},
		{"one run each: not judged", []float64{1000}, []float64{900}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &report.Results{Baseline: report.Baseline{RPS: report.Median(tt.base), Runs: tt.base}}
			out.Points = append(out.Points, report.Point{ReductionUS: 100, SlowdownRuns: []float64{800}, SlowdownRPS: 800})
			if tt.zero != nil {
				out.Points = append(out.Points, report.Point{ReductionUS: 0, SlowdownRuns: tt.zero, SlowdownRPS: report.Median(tt.zero)})
			}
			w := (&Runner{}).armedCost(out)
			if (out.ArmedCostPct != nil) != tt.wantCost {
				t.Fatalf("armed_cost_pct %v, want one %v", out.ArmedCostPct, tt.wantCost)
			}
			if (w != "") != tt.wantWarn || tt.wantWarn && !strings.Contains(w, "0% point") {
				t.Fatalf("warning %q, want one %v", w, tt.wantWarn)
			}
			if tt.wantCost && tt.zero != nil && *out.ArmedCostPct >= 0 == (report.Median(tt.zero) < report.Median(tt.base)) {
				t.Fatalf("armed_cost_pct %+.1f has the wrong sign", *out.ArmedCostPct)
			}
		})
	}
}
