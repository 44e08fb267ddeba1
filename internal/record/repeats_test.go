package record

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

func TestSplitWords(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"a b  c", []string{"a", "b", "c"}},
		{`a 'b c' d\'e`, []string{"a", "b c", "d'e"}},
		{`--note 'it'\''s' x`, []string{"--note", "it's", "x"}},
		{`"f \"g\" \\" h`, []string{`f "g" \`, "h"}},
		{`''`, []string{""}},
		{"", nil},
	} {
		if got := splitWords(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCommandKey(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`slowpoke-lab bench methods -f a.yaml --reps 2 --out /tmp/x --note 'run 1 of 3'`, "slowpoke-lab bench methods -f a.yaml --reps 2"},
		{`slowpoke-lab bench methods --out=/tmp/y -f a.yaml --record /r --note 'it'\''s' --reps 2`, "slowpoke-lab bench methods -f a.yaml --reps 2"},
		{`slowpoke-lab bench rank --rank-args '--seed 1' --out /o`, "slowpoke-lab bench rank --rank-args '--seed 1'"},
		{`X=3 test/kube/multinode-e2e.sh -run '^T$'`, `X=3 test/kube/multinode-e2e.sh -run '^T$'`},
	} {
		if got := commandKey(tt.in); got != tt.want {
			t.Errorf("commandKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// repeatRecord is a methods record of one variant whose points predict
// preds against truths of two runs each, relSD apart.
func repeatRecord(day int, commit, cmd string, preds, truths []float64, relSD float64) Record {
	r := Record{Version: Version, Benchmark: "methods", Date: time.Date(2026, 12, day, 9, 0, 0, 0, time.UTC),
		Commit: commit, Command: cmd, Placement: "shared"}
	for i := range preds {
		t := truths[i]
		runs := []float64{t * (1 - relSD/math.Sqrt2), t * (1 + relSD/math.Sqrt2)}
		e := 100 * (preds[i]/t - 1)
		p := report.Point{ReductionUS: float64(200 * (i + 1)), PredictedRPS: preds[i], TrueRuns: runs, ErrorPct: &e,
			IntervalLowRPS: preds[i] * 0.9, IntervalHighRPS: preds[i] * 1.1, Estimate: report.EstimateValue, Flags: []string{}}
		r.Rows = append(r.Rows, RowOf("social", "home-timeline", "cores", p))
	}
	r.Summarize()
	return r
}

// Runs of one command on one build are pooled: each point's mean
// prediction against its truth's mean, the mean error per run, and the
// floor the truth's own noise sets; other commands, other builds and
// single runs are not.
func TestRepeats(t *testing.T) {
	cmd := func(out string) string {
		return "slowpoke-lab bench methods -f apps/social/app.yaml --reps 2 --out " + out + " --note 'run of 3'"
	}
	recs := []Record{
		repeatRecord(1, "abc", cmd("/tmp/1"), []float64{1100, 2200}, []float64{1000, 2000}, 0.1),
		repeatRecord(2, "abc-dirty", cmd("/tmp/2"), []float64{900, 1800}, []float64{1000, 2000}, 0.1),
		repeatRecord(3, "def", cmd("/tmp/3"), []float64{900, 1800}, []float64{1000, 2000}, 0.1),             // another build
		repeatRecord(4, "abc", cmd("/tmp/4")+" --reps 3", []float64{900, 1800}, []float64{1000, 2000}, 0.1), // another command
		{Version: Version, Benchmark: "rank", Commit: "abc", Command: cmd("/tmp/5")},                        // no points
	}
	groups := Repeats(recs)
	if len(groups) != 1 || len(groups[0].Records) != 2 || groups[0].Commit != "abc" {
		t.Fatalf("Repeats: %d groups %+v, want one of the first two records", len(groups), groups)
	}
	if want := "slowpoke-lab bench methods -f apps/social/app.yaml --reps 2"; groups[0].Command != want {
		t.Errorf("command %q, want %q", groups[0].Command, want)
	}
	vs := groups[0].Variants()
	if len(vs) != 1 {
		t.Fatalf("variants %+v", vs)
	}
	v := vs[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if v.Runs != 2 || !near(v.RMSEs[0], 10) || !near(v.RMSEs[1], 10) || !near(v.Means[0], 10) || !near(v.Means[1], -10) {
		t.Errorf("per run: %d runs, RMSE %v, mean %v; want 2, 10%% each, +10%% and -10%%", v.Runs, v.RMSEs, v.Means)
	}
	if v.PooledRMSEPct == nil || !near(*v.PooledRMSEPct, 0) || len(v.PooledErrors) != 2 {
		t.Errorf("pooled: %v %v, want 0%% at both points (the runs' errors cancel)", v.PooledRMSEPct, v.PooledErrors)
	}
	if !near(v.TruthRelSD, 0.1) || !near(v.FloorPct(1), 10/math.Sqrt2) || !near(v.FloorPct(2), 5) {
		t.Errorf("truth noise %v, floors %v and %v; want 0.1, 7.07%% and 5%%", v.TruthRelSD, v.FloorPct(1), v.FloorPct(2))
	}
	out := RenderAccuracy(recs)
	for _, want := range []string{"### The same command run again, pooled", "2 runs of social (home-timeline), commit abc",
		"| cores | 10.00% (10.00% to 10.00%) | +0.00% (-10.00% to +10.00%) | +0.0%, +0.0% | 0.00% | 10.0% | 7.1% | 5.0% |"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered page lacks %q:\n%s", want, out)
		}
	}

	// Runs whose points differ are not pooled point by point.
	odd := []Record{recs[0], repeatRecord(2, "abc", cmd("/tmp/2"), []float64{900}, []float64{1000}, 0.1)}
	if g := Repeats(odd); len(g) != 1 || g[0].Variants()[0].PooledRMSEPct != nil {
		t.Errorf("runs of 2 and 1 points pooled: %+v", g)
	}
}
