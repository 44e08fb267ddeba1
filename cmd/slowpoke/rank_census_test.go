package main

import (
	"math"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// The census bounds each service by its share of the CPU: on 2 cores,
// with the headroom of 2, a service of 0.7% can be at most 2.8% busy,
// so half of it gains at most 1/(1-0.014)-1; one with a third of the CPU
// may bind (busy 1), so half of it may double throughput; a service
// whose CPU was not read gets no bound, and none does where nothing was
// read.
func TestCensusBounds(t *testing.T) {
	us := map[string]float64{"big": 3300, "small": 70, "tiny": 0, "rest": 6630}
	got := censusBounds(us, []string{"big", "small", "tiny", "unread"}, 0.5, 2)
	want := map[string]censusBound{
		"big":   {sharePct: 33, gainPct: 100},
		"small": {sharePct: 0.7, gainPct: 100 * (1/(1-0.5*censusHeadroom*2*0.007) - 1)},
		"tiny":  {sharePct: 0, gainPct: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("censusBounds = %v, want %v", got, want)
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok || math.Abs(g.sharePct-w.sharePct) > 1e-9 || math.Abs(g.gainPct-w.gainPct) > 1e-9 {
			t.Errorf("%s: %+v, want %+v", name, g, w)
		}
	}
	if got := censusBounds(map[string]float64{"a": 0}, []string{"a"}, 0.5, 2); got != nil {
		t.Errorf("no CPU read: %v, want nil", got)
	}
	// A cut of all of a service that may bind has no cap.
	if g := censusBounds(us, []string{"big"}, 1, 2)["big"]; !math.IsInf(g.gainPct, 1) {
		t.Errorf("a cut of 100%% of a binding service: %v, want +Inf", g.gainPct)
	}
}

func TestPlacementCores(t *testing.T) {
	tests := []struct {
		name          string
		target, other []int
		services      map[string][]int
		want          int
	}{
		{"shared", []int{1}, []int{0}, nil, 2},
		{"keep: both name every core", []int{0, 1}, []int{0, 1}, nil, 2},
		{"dedicated", []int{1}, []int{0}, map[string][]int{"a": {2, 3}, "b": {4}}, 5},
		{"nothing", nil, nil, nil, 0},
	}
	for _, tt := range tests {
		if got := placementCores(tt.target, tt.other, tt.services); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

// A bounded service is skipped, says its share, its cap and the minimum,
// and an infinite cap is left out of the JSON fields.
func TestBoundedEntry(t *testing.T) {
	e := boundedEntry("s7", censusBound{sharePct: 0.7, gainPct: 1.4}, "50%", 5)
	if e.Verdict != report.VerdictSkipped || e.Stage != report.StageBounded {
		t.Errorf("verdict %q stage %q", e.Verdict, e.Stage)
	}
	for _, want := range []string{"0.7%", "50%", "+1.4%", "5%"} {
		if !strings.Contains(e.Reason, want) {
			t.Errorf("reason %q lacks %q", e.Reason, want)
		}
	}
	var inf report.RankEntry
	setBound(&inf, censusBound{sharePct: 40, gainPct: math.Inf(1)})
	if inf.CPUSharePct == nil || *inf.CPUSharePct != 40 || inf.GainBoundPct != nil {
		t.Errorf("infinite cap: share %v bound %v", inf.CPUSharePct, inf.GainBoundPct)
	}
}
