package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/model"
)

func TestRankWarnings(t *testing.T) {
	entry := func(svc string, warnings ...string) report.RankEntry {
		return report.RankEntry{Service: svc, Results: &report.Results{Warnings: warnings}}
	}
	entries := []report.RankEntry{
		entry("cart", "only CPU 0 is left", "the baseline's repetitions varied by 9%"),
		entry("catalog", "only CPU 0 is left"),
		{Service: "broken"}, // failed: no experiment
		entry("frontend", "only CPU 0 is left", "the baseline's repetitions varied by 9%", "only CPU 0 is left"),
	}
	got := rankWarnings(entries)
	want := []string{"only CPU 0 is left", "cart, frontend: the baseline's repetitions varied by 9%"}
	if !slices.Equal(got, want) {
		t.Errorf("rankWarnings = %q, want %q", got, want)
	}
	if got := rankWarnings(nil); len(got) != 0 {
		t.Errorf("no entries: %q", got)
	}
}

// The budget: a step starts where it is expected to end within the
// budget; without an estimate, while the budget is not spent; always
// without a budget.
func TestFitsBudget(t *testing.T) {
	tests := []struct {
		elapsed, next, budget time.Duration
		want                  bool
	}{
		{time.Hour, time.Hour, 0, true},
		{time.Minute, 30 * time.Second, 2 * time.Minute, true},
		{time.Minute, time.Minute, 2 * time.Minute, true},
		{time.Minute, 61 * time.Second, 2 * time.Minute, false},
		{90 * time.Second, 0, 2 * time.Minute, true},
		{2 * time.Minute, 0, 2 * time.Minute, true},
		{121 * time.Second, 0, 2 * time.Minute, false},
	}
	for _, tt := range tests {
		if got := fitsBudget(tt.elapsed, tt.next, tt.budget); got != tt.want {
			t.Errorf("fitsBudget(%v, %v, %v) = %v, want %v", tt.elapsed, tt.next, tt.budget, got, tt.want)
		}
	}
}

// Screening is at the largest reduction where reductions compare, else
// at the last given.
func TestScreenReduction(t *testing.T) {
	for _, tt := range []struct{ reduce, want string }{
		{"25,50%", "50%"},
		{"50,25%", "50%"},
		{"0,10,...,90%", "90%"},
		{"2x,40%", "2x"},
		{"1->2,60%", "60%"},
		{"100us,300us", "300us"},
		{"300us,25%", "25%"},
	} {
		reds, err := model.ParseReductions(tt.reduce)
		if err != nil {
			t.Fatal(err)
		}
		if got := screenReduction(reds).Text; got != tt.want {
			t.Errorf("--reduce %s: screened at %s, want %s", tt.reduce, got, tt.want)
		}
	}
}

// A screened service's entry: judged by its screening, failed where it
// failed, not-called and skipped as a full ranking says them.
func TestScreenEntry(t *testing.T) {
	res := &report.Results{C1: 1, Baseline: report.Baseline{RPS: 1000}, Settings: report.Settings{Reductions: []string{"50%"}},
		Points: []report.Point{{ReductionPct: 50, PredictedRPS: 1010, Estimate: report.EstimateValue, IntervalLowRPS: 940, IntervalHighRPS: 1080}}}
	for _, tt := range []struct {
		name           string
		res            *report.Results
		err            error
		verdict, stage string
		pass           bool
	}{
		{"interval reaches the minimum", res, nil, report.VerdictNoGain, report.StageScreened, true},
		{"not called", nil, fmt.Errorf("x: %w", experiment.ErrNotCalled), report.VerdictNotCalled, report.StageScreened, false},
		{"no CPU", nil, fmt.Errorf("x: %w", experiment.ErrNoCPU), report.VerdictSkipped, report.StageScreened, false},
		{"error", nil, errors.New("configure x: refused"), report.VerdictFailed, report.StageFailed, false},
		// Its baseline found the other services setting the throughput:
		// bounded, skipped, the baseline kept for the table.
		{"others bind", &report.Results{Target: "svc", C1: 1, Baseline: report.Baseline{RPS: 662}}, &experiment.OthersBindError{Target: "svc", TargetBusyPct: 10}, report.VerdictSkipped, report.StageBounded, false},
	} {
		e := screenEntry("svc", tt.res, tt.err, 5)
		if e.Verdict != tt.verdict || e.Stage != tt.stage || report.PassesScreen(e, 5, 3) != tt.pass {
			t.Errorf("%s: verdict %s, stage %s, passes %v; want %s, %s, %v", tt.name, e.Verdict, e.Stage, report.PassesScreen(e, 5, 3), tt.verdict, tt.stage, tt.pass)
		}
		if tt.stage == report.StageBounded && (e.Results != tt.res || !strings.HasPrefix(e.Reason, "not screened further: the shared cores bound its own baseline")) {
			t.Errorf("%s: results %v, reason %q: want the baseline kept and the reason", tt.name, e.Results, e.Reason)
		}
	}
}

// The progress line: the pass, the service, the candidates so far and
// the time left, never past the budget.
func TestScreenProgress(t *testing.T) {
	p := &screenProgress{start: time.Now().Add(-time.Minute), budget: 90 * time.Second, toScreen: 10,
		screened: []time.Duration{10 * time.Second, 10 * time.Second}, screenedN: 2, candidates: []string{"cart"}}
	p.begin("screen", 2, 10, "catalog")
	line := p.prefix(2, 3)
	for _, want := range []string{"screen catalog 3/10 run 2/3", "candidates: cart", "about 30s left"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress %q lacks %q", line, want)
		}
	}
	p.budget = 0
	// 8 to screen at 10 s, and 1 + 4 confirmations expected at
	// confirmPerScreen screenings each.
	if left, want := p.left(0, 0), 80*time.Second+5*confirmPerScreen*10*time.Second; left != want {
		t.Errorf("left %v, want 80s + %v", left, want-80*time.Second)
	}
	p.begin("confirm", 0, 1, "cart")
	if line := p.prefix(0, 0); !strings.HasPrefix(line, "[confirm cart 1/1,") || strings.Contains(line, "candidates") {
		t.Errorf("confirming: %q", line)
	}
}
