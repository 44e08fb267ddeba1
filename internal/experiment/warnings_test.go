package experiment

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

func TestBaselineDriftWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs []float64
		want []string // substrings; none: no warning
	}{
		{"one run", []float64{700}, nil},
		{"steady", []float64{1000, 1040, 980}, nil},
		{"the demo on a calm spell", []float64{779, 721, 693, 731}, nil},
		{"moved", []float64{583, 662, 719, 700, 634, 787, 864, 1106}, []string{"varied by 22%", "583 to 1106 req/s over 8 runs", "--reps"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := baselineDriftWarning(tc.runs)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("warning for %v: %s", tc.runs, got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning %q lacks %q", got, w)
				}
			}
		})
	}
}

func TestOverCoresWarning(t *testing.T) {
	for _, tc := range []struct {
		name     string
		q, used  float64
		wantWarn bool
	}{
		{"within its cpus", 1, 0.95, false},
		{"a little over, noise", 1, 1.05, false},
		{"unlimited pod, cpus 1", 1, 1.5, true},
		{"two cpus, used two", 2, 2.1, false},
		{"two cpus, used three", 2, 3, true},
		{"no cpus stated", math.Inf(1), 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := overCoresWarning("cart", tc.q, tc.used)
			if (got != "") != tc.wantWarn {
				t.Fatalf("overCoresWarning(%g, %g) = %q, want a warning: %v", tc.q, tc.used, got, tc.wantWarn)
			}
			if tc.wantWarn && !strings.Contains(got, `"cart"`) {
				t.Errorf("warning does not name the target: %s", got)
			}
		})
	}
}

func TestBaselineP50DriftWarning(t *testing.T) {
	steady := report.LatencyDist{Request: "home", RunsP50MS: []float64{2.0, 2.1, 2.05}}
	moved := report.LatencyDist{Request: "checkout", RunsP50MS: []float64{2.27, 3.08, 3.04}}
	one := report.LatencyDist{Request: "cart", RunsP50MS: []float64{9}}
	if w := baselineP50DriftWarning([]report.LatencyDist{steady, one}); w != "" {
		t.Errorf("warning for steady runs: %s", w)
	}
	w := baselineP50DriftWarning([]report.LatencyDist{steady, moved})
	for _, want := range []string{`"checkout"`, "varied by 16%", "2.27 to 3.08 ms over 3"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
}

func TestBusyWarning(t *testing.T) {
	for _, tc := range []struct {
		busy     float64
		wantWarn bool
	}{
		{0, false}, // not measured
		{50, false},
		{84.9, false},
		{85, true},
		{97, true},
	} {
		got := busyWarning(tc.busy, 1254)
		if (got != "") != tc.wantWarn {
			t.Errorf("busyWarning(%g) = %q, want a warning: %v", tc.busy, got, tc.wantWarn)
		}
		if tc.wantWarn && (!strings.Contains(got, fmt.Sprintf("%.0f%% busy", tc.busy)) || !strings.Contains(got, "1254 req/s") || !strings.Contains(got, "--rate")) {
			t.Errorf("warning does not give the share, the rate and the remedy: %s", got)
		}
	}
}

func TestRunsBusy(t *testing.T) {
	rs := newRuns(1)
	if got := rs.busyPct(); got != 0 {
		t.Errorf("no runs: %v%% busy, want 0 (unknown)", got)
	}
	rs.add(openRun{lat: [][]float64{{1, 2, 3}}, busy: 0.6})
	rs.add(openRun{lat: [][]float64{{4}}}) // its share could not be read
	rs.add(openRun{lat: [][]float64{{5, 6}}, busy: 0.8})
	if got := rs.busyPct(); math.Abs(got-70) > 1e-9 {
		t.Errorf("%v%% busy, want 70 (the runs whose share is known)", got)
	}
	if got := rs.all(0); len(got) != 6 {
		t.Errorf("pooled %v, want the 6 latencies", got)
	}
	if got := rs.dist("home", 0).RunsP50MS; len(got) != 3 || got[0] != 2 || got[1] != 4 {
		t.Errorf("each run's p50 %v, want [2 4 5.5]", got)
	}
}
