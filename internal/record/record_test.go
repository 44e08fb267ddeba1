package record

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

var update = flag.Bool("update", false, "rewrite docs/accuracy.md's section of recorded runs from records/")

const (
	recordsDir   = "../../records"
	accuracyPage = "../../docs/accuracy.md"
)

// docs/accuracy.md's section of recorded runs is what the records
// generate: a figure there is never copied by hand.
func TestAccuracyPage(t *testing.T) {
	recs, err := Load(recordsDir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(accuracyPage)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(string(page), RenderAccuracy(recs))
	if err != nil {
		t.Fatalf("%s: %v", accuracyPage, err)
	}
	if *update {
		if err := os.WriteFile(accuracyPage, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(page) != want {
		t.Fatalf("%s differs from what records/ generates: run\n\tgo test ./internal/record -run TestAccuracyPage -update\nand commit the page (first difference at byte %d)", accuracyPage, firstDiff(string(page), want))
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func sampleRecord() *Record {
	e := func(v float64) *float64 { return &v }
	truth := []float64{1000, 1020}
	r := &Record{Version: Version, Benchmark: "methods", Date: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC),
		Machine: Machine{Host: "box", CPUs: 2, Model: "cpu", Kernel: "6.1"}, Commit: "abc", Command: "slowpoke-lab bench methods -f x.yaml", Placement: "shared"}
	for _, v := range []struct {
		name       string
		pred, lo   float64
		err, nomin float64
	}{{"cores", 1050, 980, 3, 5}, {"cores/cpu", 1200, 1100, 18, 20}} {
		p := report.Point{ReductionUS: 500, PredictedRPS: v.pred, TrueRuns: truth, ErrorPct: e(v.err),
			IntervalLowRPS: v.lo, IntervalHighRPS: v.pred * 1.05, Estimate: report.EstimateValue, Flags: []string{},
			Diagnostics: &report.PointDiagnostics{ErrorNominalPct: e(v.nomin)}}
		r.Rows = append(r.Rows, RowOf("demo", "cart", v.name, p))
	}
	r.Summarize()
	return r
}

// Rows record whether the interval held the truth's mean, and the
// summary counts it per variant.
func TestSummarize(t *testing.T) {
	r := sampleRecord()
	if len(r.Summary) != 2 {
		t.Fatalf("summary %+v", r.Summary)
	}
	c, u := r.Summary[0], r.Summary[1]
	if c.Covered != 1 || c.WithInterval != 1 || u.Covered != 0 || u.WithInterval != 1 {
		t.Fatalf("coverage: cores %d/%d, cores/cpu %d/%d; want 1/1 and 0/1", c.Covered, c.WithInterval, u.Covered, u.WithInterval)
	}
	if c.RMSEPct != 3 || c.NominalRMSEPct == nil || *c.NominalRMSEPct != 5 || u.MaxAbsPct != 18 {
		t.Fatalf("summary %+v %+v", c, u)
	}
	out := RenderAccuracy([]Record{*r})
	for _, want := range []string{"held the truth (the mean of its runs) at 1 of 2 (50%)", "1050 (+3.0%)", "| cores | 1 | 3.00% | 5.00% |", "    slowpoke-lab bench methods -f x.yaml"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered page lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteLoad(t *testing.T) {
	dir := t.TempDir()
	r := sampleRecord()
	path, err := Write(filepath.Join(dir, "records"), r)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "20261127-090000-methods-demo.json" {
		t.Errorf("written as %s", path)
	}
	got, err := Load(filepath.Join(dir, "records"))
	if err != nil || len(got) != 1 {
		t.Fatalf("Load = %d records, %v", len(got), err)
	}
	if !reflect.DeepEqual(got[0], *r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got[0], *r)
	}
	if recs, err := Load(filepath.Join(dir, "none")); err != nil || len(recs) != 0 {
		t.Errorf("a missing directory: %d records, %v", len(recs), err)
	}
	if err := os.WriteFile(filepath.Join(dir, "records", "bad.json"), []byte(`{"version": 9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(dir, "records")); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("a record of a newer version: %v", err)
	}
}

func TestSplice(t *testing.T) {
	page := "a\n" + BeginMarker + "\nold\n" + EndMarker + "\nb\n"
	got, err := Splice(page, "new")
	if err != nil || got != "a\n"+BeginMarker+"\n\nnew\n"+EndMarker+"\nb\n" {
		t.Fatalf("Splice = %q, %v", got, err)
	}
	if _, err := Splice("no markers", "x"); err == nil {
		t.Fatal("Splice without markers: no error")
	}
}

func TestFileSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"methods-demo", "methods-demo"},
		{"placement-demo #1", "placement-demo_1"},
		{"methods-cores/cpu", "methods-cores_cpu"},
		{"a / b", "a_b"},
		{"hotel_profile v1.2", "hotel_profile_v1.2"},
	} {
		if got := fileUnsafe.ReplaceAllString(tc.in, "_"); got != tc.want {
			t.Errorf("%q made file-safe = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Version 1 records of bench placement are read with their "shared"
// variant marked for another placement, and the coverage counts it apart.
func TestUpgradeAndCoverage(t *testing.T) {
	covered := func(in bool) *bool { return &in }
	tests := []struct {
		name       string
		version    int
		benchmark  string
		own, other Count
	}{
		{name: "version 1 placement", version: 1, benchmark: "placement", own: Count{1, 1}, other: Count{0, 1}},
		{name: "version 1 methods", version: 1, benchmark: "methods", own: Count{1, 2}},
		{name: "version 2 placement, unmarked", version: 2, benchmark: "placement", own: Count{1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Record{Version: tc.version, Benchmark: tc.benchmark, Date: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC),
				Rows: []Row{{Config: "demo", Variant: "keep/cgroup", Covered: covered(true), Flags: []string{}},
					{Config: "demo", Variant: "shared", Covered: covered(false), Flags: []string{}}}}
			r.Summarize()
			dir := t.TempDir()
			if _, err := Write(dir, &r); err != nil {
				t.Fatal(err)
			}
			recs, err := Load(dir)
			if err != nil || len(recs) != 1 {
				t.Fatalf("Load = %d, %v", len(recs), err)
			}
			if recs[0].Version != Version {
				t.Errorf("version %d after Load, want %d", recs[0].Version, Version)
			}
			own, other := Coverage(recs)
			if own != tc.own || other != tc.other {
				t.Errorf("coverage own %+v, other %+v; want %+v, %+v", own, other, tc.own, tc.other)
			}
			page := RenderAccuracy(recs)
			if marked := strings.Contains(page, "(for another placement)"); marked != (tc.other.With > 0) {
				t.Errorf("page marks a variant for another placement: %v; want %v\n%s", marked, tc.other.With > 0, page)
			}
		})
	}
}

// A record of a run across nodes renders its round skews under its
// tables; a record without them renders none.
func TestRenderSkews(t *testing.T) {
	rec := Record{Benchmark: "multinode", Date: time.Date(2026, 11, 28, 13, 0, 0, 0, time.UTC),
		Rows: []Row{{Config: "demo #1", Target: "cart", Variant: "spread", ReductionUS: 300, TrueRPS: 700, PredictedRPS: 680, Flags: []string{}}}}
	rec.Summarize()
	if page := RenderAccuracy([]Record{rec}); strings.Contains(page, "Round skew") {
		t.Fatalf("a record without skews renders a skew table:\n%s", page)
	}
	rec.Skews = SkewsOf("demo #1", []report.NodeSkew{{Node: "slowpoke-n2", Rounds: 1023, StartP50US: 678, StartP99US: 13077, EndP50US: 2207, EndP99US: 19438, LongerP50US: 967, Timed: 363, Refrozen: 2},
		{Node: "slowpoke-n3", Rounds: 10, StartP50US: 300, StartP99US: 900, EndP50US: 400, EndP99US: 1000, DeliverStartP50US: 120, DeliverStartP99US: 700, DeliverEndP50US: 150, DeliverEndP99US: 800}})
	page := RenderAccuracy([]Record{rec})
	for _, want := range []string{"Round skew across nodes", "| demo #1 | slowpoke-n2 | 1023 | 0 | 678 | 13077 | 2207 | 19438 | +967 | 363 | 2 | – | – |",
		"| demo #1 | slowpoke-n3 | 10 | 0 | 300 | 900 | 400 | 1000 | +0 | 0 | 0 | 120 / 700 | 150 / 800 |"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}

// A truth of several noisy runs widens the interval it is checked
// against by the 90% half-width of its mean, in quadrature, on each side,
// the runs' spread pooled over the record's rows; a truth of one run, or
// a point without an interval, is not checked that way.
func TestCoveredNoisy(t *testing.T) {
	// Three truths of 950, 1000, 1050 (in units of their mean: 5%
	// relative standard deviation, 2 degrees of freedom each) and two of
	// 950, 1050 (7.07%, 1 each) pool to 5.59% over 8 degrees of
	// freedom, t 1.860: a three-run truth's half-width is 6.0% of its
	// mean, a two-run truth's 7.4%.
	point := func(low, high, mean float64, runs int) report.Point {
		var truth []float64
		switch runs {
		case 1:
			truth = []float64{mean}
		case 2:
			truth = []float64{0.95 * mean, 1.05 * mean}
		case 3:
			truth = []float64{0.95 * mean, mean, 1.05 * mean}
		}
		return report.Point{PredictedRPS: 1000, IntervalLowRPS: low, IntervalHighRPS: high, Estimate: report.EstimateValue, TrueRuns: truth}
	}
	tests := []struct {
		name          string
		p             report.Point
		strict, noisy *bool
	}{
		// Above 1100 by 15: sqrt(100² + 67²) = 120 reaches 1120.
		{"just outside, held with the truth's noise", point(900, 1100, 1115, 3), ptr(false), ptr(true)},
		{"far outside both", point(900, 1100, 1200, 3), ptr(false), ptr(false)},
		{"inside both", point(900, 1100, 1000, 3), ptr(true), ptr(true)},
		// Below 900 by 10: sqrt(100² + 66²) = 120 reaches 880.
		{"a lower bound, just below", point(900, 0, 890, 2), ptr(false), ptr(true)},
		{"one truth run", point(900, 1100, 1120, 1), ptr(false), nil},
		{"no interval", report.Point{PredictedRPS: 1000, TrueRuns: []float64{950, 1050}}, nil, nil},
	}
	var rows []Row
	for _, tt := range tests {
		rows = append(rows, RowOf("c", "t", tt.name, tt.p))
	}
	rec := Record{Date: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), Rows: rows}
	rec.Summarize()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := rec.Rows[i]
			if !sameBool(row.Covered, tt.strict) || !sameBool(row.CoveredNoisy, tt.noisy) {
				t.Fatalf("covered %v, allowing the truth's noise %v; want %v, %v", show(row.Covered), show(row.CoveredNoisy), show(tt.strict), show(tt.noisy))
			}
		})
	}
	noisy, strict, since := CoverageNoisy([]Record{rec})
	if noisy != (Count{3, 4}) || strict != (Count{1, 4}) || !since.Equal(rec.Date) {
		t.Errorf("CoverageNoisy = %+v, %+v, %v; want {3 4}, {1 4}, %v", noisy, strict, since, rec.Date)
	}
	// One row's two runs alone are too few to pool: nothing is checked.
	alone := Record{Rows: []Row{RowOf("c", "t", "v", point(900, 1100, 1120, 2))}}
	alone.Summarize()
	if alone.Rows[0].CoveredNoisy != nil {
		t.Errorf("a record whose truths have one degree of freedom checked a row: %v", show(alone.Rows[0].CoveredNoisy))
	}
}

func ptr(b bool) *bool { return &b }

func sameBool(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

// A fault benchmark's record renders, per fault, how many trials passed
// and thawed within their bound, the thaw times' spread, whether the
// run's error named the node, and the first trial's error; a run that
// was killed has no error to name anything. It writes and loads back.
func TestRenderFaults(t *testing.T) {
	rec := Record{Version: Version, Benchmark: "faults", Date: time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC), Command: "x", Placement: "spread over 2 nodes",
		Faults: []Fault{
			{Fault: "partition", Trial: 1, ThawedS: 0.1, BoundS: 0.3, Within: true, RunError: "node n1: lost", NamesNode: true, TrialS: 92, Passed: true},
			{Fault: "partition", Trial: 2, ThawedS: 0.4, BoundS: 0.3, RunError: "node n1: lost again", NamesNode: true, TrialS: 94},
			{Fault: "partition", Trial: 3, ThawedS: -1, BoundS: 0.3, RunError: "predict succeeded", TrialS: 90},
			{Fault: "orchestrator-killed", Trial: 1, ThawedS: 0.2, BoundS: 10, Within: true, TrialS: 46, Passed: true, Restarted: true},
		}}
	page := RenderAccuracy([]Record{rec})
	for _, want := range []string{
		"bench faults, partition, orchestrator-killed",
		"| partition | 3 | 1 | 1 | 0.10 / 0.40 / 0.40 s | 0.3 s | 2 | 0 | 90-94 s |",
		"| orchestrator-killed | 1 | 1 | 1 | 0.20 / 0.20 / 0.20 s | 10.0 s | – (the run was killed) | 1 | 46-46 s |",
		"- partition: `node n1: lost`",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "RMSE") || strings.Contains(page, "orchestrator-killed: `") {
		t.Errorf("a fault record renders a points table, or an error for a killed run:\n%s", page)
	}
	// A test stamps its record with the command it set itself; a record
	// without one says so.
	rec.Command = "SLOWPOKE_MULTINODE_FAULT_TRIALS=10 test/kube/multinode-e2e.sh"
	rec.Stamp(Start{Date: rec.Date}, nil)
	if rec.Command != "SLOWPOKE_MULTINODE_FAULT_TRIALS=10 test/kube/multinode-e2e.sh" {
		t.Errorf("Stamp without args set the command to %q", rec.Command)
	}
	none := rec
	none.Command = ""
	if page := RenderAccuracy([]Record{none}); !strings.Contains(page, "The command was not recorded.") {
		t.Errorf("a record without its command:\n%s", page)
	}
	dir := t.TempDir()
	if _, err := Write(dir, &rec); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0].Faults, rec.Faults) {
		t.Fatalf("Load = %+v, %v", got, err)
	}
}

// The truth column shows the median of the truth's runs, which the
// errors are against, and the mean, which the intervals are checked
// against, where they differ; a row from a point keeps both.
func TestTruthMedianAndMean(t *testing.T) {
	truth := 1523.0
	p := report.Point{ReductionUS: 1000, PredictedRPS: 1515, TrueRPS: &truth, TrueRuns: []float64{1523, 1400, 1931}}
	row := RowOf("demo", "cart", "cores", p)
	if row.TrueMedianRPS != 1523 || math.Abs(row.TrueRPS-1618) > 1e-9 {
		t.Fatalf("row truth median %.1f, mean %.1f; want 1523, 1618", row.TrueMedianRPS, row.TrueRPS)
	}
	rec := Record{Benchmark: "methods", Date: time.Date(2026, 11, 28, 20, 30, 0, 0, time.UTC), Rows: []Row{row}}
	rec.Summarize()
	if page := RenderAccuracy([]Record{rec}); !strings.Contains(page, "| 1000 | 1523 (mean 1618) |") {
		t.Errorf("page lacks the median and the mean:\n%s", page)
	}
	row.TrueMedianRPS = 0 // an older record
	rec.Rows = []Row{row}
	if page := RenderAccuracy([]Record{rec}); !strings.Contains(page, "| 1000 | 1618 |") {
		t.Errorf("an older record's truth:\n%s", page)
	}
}

// A rank record: one row per ranking, the planted service's place, the
// gains compared with the iteration's first variant, and the rankings
// read back as written.
func TestRenderRankings(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	rk := &report.Rank{App: "tree43", ElapsedS: 102, Entries: []report.RankEntry{
		{Service: "service20", Stage: report.StageConfirmed, Verdict: report.VerdictGain, GainPct: 71.5, GainLowPct: f(50.3), GainHighPct: f(92.6)},
		{Service: "service0", Stage: report.StageScreened, Verdict: report.VerdictNoGain, GainPct: -0.1},
		{Service: "service7", Stage: report.StageBounded, Verdict: report.VerdictSkipped},
		{Service: "service8", Stage: report.StageBounded, Verdict: report.VerdictSkipped},
		// Screened no further than its baseline: screened, not bounded
		// by the census.
		{Service: "service9", Stage: report.StageBounded, Verdict: report.VerdictSkipped},
	}, Screening: &report.RankScreening{OthersBind: []string{"service9"}},
		Drift: &report.RankDrift{NoisePct: 2.5, Services: 2, Shifts: []report.RankShift{{Service: "service20", ScreenRPS: 800, ConfirmRPS: 772, ShiftPct: -3.5}}}}
	census := RankingOf("tree43", "census", 1, "service20", rk)
	if census.Bounded != 2 || census.Screened != 3 || census.AtBaseline != 1 || !slices.Equal(census.Confirmed, []string{"service20"}) || len(census.Entries) != 2 {
		t.Fatalf("RankingOf = %+v", census)
	}
	wrong := Ranking{Config: "tree43", Variant: "no-census", Iteration: 1, Expected: "service20", ElapsedS: 700, Services: 4, Screened: 4,
		Entries: []RankedService{{Service: "service0", Verdict: report.VerdictGain, GainPct: 9}}}
	failed := Ranking{Config: "tree43", Variant: "full", Iteration: 1, Error: "rank: exit status 1"}
	rec := Record{Version: Version, Benchmark: "rank", Date: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC), Command: "x", Rankings: []Ranking{census, wrong, failed}}
	page := RenderAccuracy([]Record{rec})
	for _, want := range []string{
		"bench rank, tree43",
		"| tree43 | census | 1 | 1m42s | 5 | 2 | 3 (1 no further than a baseline) | service20 | service20 +71.5% (+50.3 to +92.6) | service20: first | service20 | – | service20 -3.5% |",
		"| tree43 | no-census | 1 | 11m40s | 4 | 0 | 4 | – | service0 +9.0% | service20: not first | service0 | no | – |",
		"| tree43 | full | 1 | 0s | 0 | 0 | 0 | – | failed: rank: exit status 1 | – | – | – | – |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	dir := t.TempDir()
	path, err := Write(dir, &rec)
	if err != nil || !strings.HasSuffix(path, "-rank-tree43.json") {
		t.Fatalf("Write = %q, %v", path, err)
	}
	got, err := Load(dir)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0].Rankings, rec.Rankings) {
		t.Fatalf("Load = %+v, %v", got, err)
	}
}

// A ranking's checks against validate: each service's place and
// interval beside its true gain, and whether the interval held it.
func TestRenderChecks(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	g := Ranking{Config: "tree43", Variant: "census", Iteration: 1, Expected: "service9", Entries: []RankedService{
		{Service: "service20", Verdict: report.VerdictGain, Stage: report.StageConfirmed, GainPct: 71.5, GainLowPct: f(50.3), GainHighPct: f(92.6)},
		{Service: "service30", Verdict: report.VerdictNoGain, Stage: report.StageScreened, GainPct: 1, GainLowPct: f(-8), GainHighPct: f(10)},
	}}
	first := CheckOf(g, "service20", "50%")
	if first.Place != 1 || first.GainPct == nil || *first.GainPct != 71.5 || first.Stage != report.StageConfirmed {
		t.Fatalf("CheckOf = %+v", first)
	}
	truth := 80.0
	first.SetTruth(&report.Results{Baseline: report.Baseline{RPS: 100}, Points: []report.Point{{PredictedRPS: 150, TrueRPS: &truth}, {PredictedRPS: 170, TrueRPS: f(190)}}})
	if first.TrueGainPct == nil || math.Abs(*first.TrueGainPct-90) > 1e-9 || first.ValidateGainPct == nil || math.Abs(*first.ValidateGainPct-70) > 1e-9 || !first.Covered() {
		t.Fatalf("SetTruth = %+v: want the last point's true gain, +90%%, within +50.3..+92.6, and its prediction, +70%%", first)
	}
	second := CheckOf(g, "service30", "50%")
	second.SetTruth(&report.Results{Baseline: report.Baseline{RPS: 100}, Points: []report.Point{{PredictedRPS: 100, TrueRPS: f(130)}}})
	missing := CheckOf(g, "service9", "50%")
	missing.Error = "validate: exit status 1"
	missing.SetTruth(nil)
	if missing.Place != 0 || missing.TrueGainPct != nil || missing.Covered() {
		t.Fatalf("a service the ranking did not measure: %+v", missing)
	}
	rec := Record{Version: Version, Benchmark: "rank", Date: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC), Command: "x",
		Rankings: []Ranking{g}, Checks: []RankCheck{first, second, missing}}
	page := RenderAccuracy([]Record{rec})
	for _, want := range []string{
		"Checked against `validate` (the ground truth at 50%; ranking: census, iteration 1)",
		"| tree43 | service20 | 1 | +71.5% (+50.3 to +92.6) | gain [confirmed] | +90.0% | yes | +70.0% |",
		"| tree43 | service30 | 2 | +1.0% (-8.0 to +10.0) | no-gain [screened] | +30.0% | no | +0.0% |",
		"| tree43 | service9 | not measured | – | – | failed: validate: exit status 1 | – | – |",
		"The ranking's intervals held 1 of 2 true gains.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	dir := t.TempDir()
	if _, err := Write(dir, &rec); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0].Checks, rec.Checks) {
		t.Fatalf("Load = %+v, %v", got, err)
	}
}

// An attach benchmark's record renders each point's runs on both sides,
// the pairs' differences and whether the means are within 5%; a point
// one side never predicted has no verdict. It writes and loads back.
func TestRenderAttach(t *testing.T) {
	rec := Record{Version: Version, Benchmark: "attach", Date: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC), Command: "x", Placement: "shared",
		Attach: []AttachPoint{
			{Point: "baseline", Attached: []float64{700, 720}, Started: []float64{710, 700}, Paired: []float64{-1.4, 2.9}, MeanDiffPct: 0.7, RatioPct: 0.7, Within: true},
			{Point: "40%", Attached: []float64{1100}, Started: []float64{1000, 1000}, Paired: []float64{10}, MeanDiffPct: 10, RatioPct: 10},
			{Point: "60%", Started: []float64{1500}},
		}}
	page := RenderAccuracy([]Record{rec})
	for _, want := range []string{
		"bench attach, the demo attached against started",
		"| baseline | 700, 720 | 710, 700 | -1.4%, +2.9% | +0.7% | +0.7% | yes |",
		"| 40% | 1100 | 1000, 1000 | +10.0% | +10.0% | +10.0% | no |",
		"| 60% | – | 1500 | – | – | – | – |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "RMSE") {
		t.Errorf("an attach record renders a points table:\n%s", page)
	}
	dir := t.TempDir()
	if _, err := Write(dir, &rec); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil || len(got) != 1 || len(got[0].Attach) != 3 || got[0].Attach[1].RatioPct != 10 {
		t.Fatalf("loaded %+v, %v", got, err)
	}
}
