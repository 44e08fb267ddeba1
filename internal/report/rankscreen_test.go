package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

// Which screened services go on to confirmation, from their screening
// intervals: those whose interval does not rule out a gain above the
// minimum, the most promising first.
func TestPassesScreen(t *testing.T) {
	const minGain = 5
	tests := []struct {
		name string
		e    RankEntry
		want bool
	}{
		{"gain shown", RankEntry{Verdict: VerdictGain, GainPct: 40, GainLowPct: f(30), GainHighPct: f(50)}, true},
		{"interval reaches above the minimum", RankEntry{Verdict: VerdictNoGain, GainPct: 1, GainLowPct: f(-6), GainHighPct: f(8)}, true},
		{"interval ends below the minimum", RankEntry{Verdict: VerdictNoGain, GainPct: -1, GainLowPct: f(-5), GainHighPct: f(3)}, false},
		{"interval ends at the minimum", RankEntry{Verdict: VerdictNoGain, GainPct: 0, GainLowPct: f(-5), GainHighPct: f(5)}, false},
		{"lower bound below the minimum", RankEntry{Verdict: VerdictNoGain, GainPct: 2, GainLowPct: f(2)}, true},
		{"no interval, within two standard errors", RankEntry{Verdict: VerdictNoGain, GainPct: 3, GainStdErrPct: 2}, true},
		{"no interval, well below", RankEntry{Verdict: VerdictNoGain, GainPct: 0, GainStdErrPct: 1}, false},
		{"failed", RankEntry{Verdict: VerdictFailed}, false},
		{"skipped", RankEntry{Verdict: VerdictSkipped}, false},
		{"not called", RankEntry{Verdict: VerdictNotCalled}, false},
		{"not reached", RankEntry{Verdict: VerdictNotReached}, false},
	}
	for _, tt := range tests {
		if got := PassesScreen(tt.e, minGain, 3); got != tt.want {
			t.Errorf("%s: PassesScreen = %v, want %v", tt.name, got, tt.want)
		}
	}
	screened := []RankEntry{
		{Service: "a", Verdict: VerdictNoGain, GainPct: 1, GainLowPct: f(-6), GainHighPct: f(8)},
		{Service: "b", Verdict: VerdictGain, GainPct: 40, GainLowPct: f(30), GainHighPct: f(50)},
		{Service: "c", Verdict: VerdictNoGain, GainPct: -1, GainLowPct: f(-5), GainHighPct: f(3)},
		{Service: "d", Verdict: VerdictFailed},
		{Service: "e", Verdict: VerdictNoGain, GainPct: 1, GainLowPct: f(1)},
	}
	if got, want := Candidates(screened, minGain, 3), []string{"b", "a", "e"}; !slices.Equal(got, want) {
		t.Errorf("Candidates = %v, want %v", got, want)
	}
}

// The bar a screening interval must reach above: the minimum gain plus
// the low half-width a full measurement of fullRuns runs would have.
func TestScreenBar(t *testing.T) {
	screened := func(runs int, gain, lo, hi float64) RankEntry {
		return RankEntry{Verdict: VerdictNoGain, GainPct: gain, GainLowPct: f(lo), GainHighPct: f(hi),
			Results: &Results{Points: []Point{{ReductionPct: 50, SlowdownRuns: make([]float64, runs)}}}}
	}
	tests := []struct {
		name     string
		e        RankEntry
		fullRuns int
		bar      float64
		pass     bool
	}{
		// One run against three: the full measurement's half-width is
		// 12/sqrt(3) = 6.9, so a gain must be possible above 11.9%.
		{"one run, interval short of the bar", screened(1, 0, -12, 11), 3, 5 + 12/math.Sqrt(3), false},
		{"one run, interval past the bar", screened(1, 3, -9, 15), 3, 5 + 12/math.Sqrt(3), true},
		// As many runs as the full measurement: the bar is the minimum
		// plus its own half-width, so only an estimate above the minimum
		// passes.
		{"three runs, estimate below the minimum", screened(3, 4, -2, 10), 3, 11, false},
		{"three runs, estimate above the minimum", screened(3, 6, 0, 12), 3, 11, true},
		{"more runs than the full measurement", screened(4, 4, -2, 10), 3, 11, false},
		{"disturbed: baselines 400 and 700", func() RankEntry {
			e := screened(3, -9, -29, 10)
			e.Results.Baseline.Runs = []float64{700, 400, 650, 700}
			return e
		}(), 3, 25, true},
		{"gain shown", RankEntry{Verdict: VerdictGain, GainPct: 40, GainLowPct: f(30), GainHighPct: f(50), Results: &Results{Points: []Point{{SlowdownRuns: []float64{1}}}}}, 3, 5 + 10/math.Sqrt(3), true},
	}
	for _, tt := range tests {
		if bar := ScreenBar(tt.e, 5, tt.fullRuns); math.Abs(bar-tt.bar) > 1e-9 {
			t.Errorf("%s: bar %.2f, want %.2f", tt.name, bar, tt.bar)
		}
		if got := PassesScreen(tt.e, 5, tt.fullRuns); got != tt.pass {
			t.Errorf("%s: passes %v, want %v", tt.name, got, tt.pass)
		}
	}
}

// The drift: the screening pairs' noise and largest change, and the
// confirmed services' baselines against their screening's.
func TestDriftOf(t *testing.T) {
	res := func(runs ...float64) *Results {
		return &Results{Baseline: Baseline{Runs: runs, RPS: Median(runs)}}
	}
	entries := []RankEntry{
		{Service: "a", Stage: StageScreened, Results: res(1000, 1020)},
		{Service: "b", Stage: StageScreened, Results: res(500, 400)},
		{Service: "c", Stage: StageConfirmed, Results: res(900, 910), Screen: &RankScreen{BaselineRPS: 1000}},
		{Service: "d", Stage: StageFailed},
		{Service: "e", Stage: StageConfirmed, Results: res(700), Screen: &RankScreen{BaselineRPS: 1000}},
	}
	for range 8 {
		entries = append(entries, RankEntry{Service: "q", Stage: StageScreened, Results: res(1000, 1004)})
	}
	d := DriftOf(entries)
	if d == nil || d.Services != 10 || d.MaxChangeService != "b" || d.MaxChangePct > -19.9 || d.MaxChangePct < -20.1 {
		t.Fatalf("drift %+v: want 10 services, the largest change b's -20%%", d)
	}
	if d.NoisePct < 4 || d.NoisePct > 6 {
		t.Errorf("noise %.2f%%, want about 5%%", d.NoisePct)
	}
	if len(d.Shifts) != 2 || d.Shifts[0].Service != "c" || d.Shifts[0].ShiftPct > -9 {
		t.Errorf("shifts %+v: want c's -9.5%% and e's -30%%", d.Shifts)
	}
	// Beyond three times the noise: b's pair and e's shift, not c's.
	if w := d.Warning(); !strings.Contains(w, "b -20% within its screening") || !strings.Contains(w, "e -30%") || strings.Contains(w, "c -") {
		t.Errorf("warning %q", w)
	}
	if DriftOf(nil) != nil {
		t.Error("drift without entries")
	}
	quiet := DriftOf(entries[:1])
	if quiet.Warning() != "" || !strings.Contains(quiet.Text(), "screening baselines of 1 services") {
		t.Errorf("quiet drift: %q, %q", quiet.Warning(), quiet.Text())
	}
}

// A partial screened ranking: a confirmed gain, a candidate left
// unconfirmed, a service ruled out by its screening and one not reached.
// The table says it is partial and incomplete, places each at its
// reductions, and speaks for no service it did not measure.
func TestRankPartialScreened(t *testing.T) {
	pt := func(text string, pct, pred, lo, hi float64) Point {
		return Point{ReductionPct: pct, PredictedRPS: pred, Estimate: EstimateValue, IntervalLowRPS: lo, IntervalHighRPS: hi}
	}
	results := func(target string, reds []string, pts ...Point) *Results {
		return &Results{Target: target, C1: 1, U1US: 100, Baseline: Baseline{RPS: 1000, Runs: []float64{990, 1010}}, Settings: Settings{Reductions: reds}, Points: pts}
	}
	r := &Rank{App: "shop", Reductions: []string{"25%", "50%"}, MinGainPct: 5, Partial: true, PartialReason: "the budget of 1m ran out",
		Screening: &RankScreening{Reduction: "50%", DurationS: 1.5, WarmupS: 0.5, Seed: 7, Order: []string{"cart", "cat", "cur", "front"}, Candidates: []string{"cart", "cur"}}}
	r.Entries = []RankEntry{
		{Service: "cur", Stage: StageScreened, Results: results("cur", []string{"50%"}, pt("50%", 50, 1030, 950, 1110))},
		{Service: "cart", Stage: StageConfirmed, Results: results("cart", []string{"25%", "50%"}, pt("25%", 25, 1300, 1250, 1350), pt("50%", 50, 1800, 1700, 1900))},
		{Service: "cat", Stage: StageScreened, Results: results("cat", []string{"50%"}, pt("50%", 50, 990, 960, 1020))},
		{Service: "front", Stage: StageNotReached, Verdict: VerdictNotReached, Reason: "not reached: the budget ran out"},
	}
	for i := range r.Entries {
		Judge(&r.Entries[i], r.MinGainPct)
	}
	r.Order()
	var got []string
	for _, e := range r.Entries {
		got = append(got, e.Service+":"+e.Verdict)
	}
	if want := []string{"cart:gain", "cur:no-gain", "cat:no-gain", "front:not-reached"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if !r.Incomplete || !slices.Equal(r.NotReached, []string{"front"}) || len(r.Failed) != 0 {
		t.Errorf("incomplete %v, not reached %v, failed %v", r.Incomplete, r.NotReached, r.Failed)
	}
	if !strings.HasPrefix(r.Entries[1].Reason, "screened only: a candidate not confirmed (the budget of 1m ran out)") {
		t.Errorf("cur's reason: %q", r.Entries[1].Reason)
	}
	if reason := r.Entries[2].Reason; !strings.Contains(reason, "cart limits throughput") {
		t.Errorf("cat's reason: %q", reason)
	}
	// A screening that reaches above the minimum, but not above the bar,
	// says it was ruled out by its screening.
	ruled := &Rank{App: "shop", Reductions: []string{"50%"}, MinGainPct: 5, Screening: &RankScreening{Reduction: "50%", FullRuns: 3},
		Entries: []RankEntry{{Service: "cat", Stage: StageScreened, Results: results("cat", []string{"50%"}, Point{ReductionPct: 50, PredictedRPS: 1000, Estimate: EstimateValue, IntervalLowRPS: 900, IntervalHighRPS: 1090, SlowdownRuns: []float64{950}})}}}
	Judge(&ruled.Entries[0], 5)
	ruled.Order()
	if reason := ruled.Entries[0].Reason; !strings.HasPrefix(reason, "ruled out by its screening: its 90% interval, -10.0% to +9.0%, reaches above the minimum gain but not above 10.8%") {
		t.Errorf("ruled out: %q", reason)
	}
	var b bytes.Buffer
	if err := WriteRankTable(&b, r); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	for _, want := range []string{"PARTIAL: the ranking is partial: the budget of 1m ran out; candidates screened but not confirmed: cur; not measured: front",
		"INCOMPLETE: the ranking is incomplete: of 4 services, front not reached, so it speaks only for the 3 measured",
		"screened 3 of 4 services at 50%", "[confirmed]", "[screened]"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	// cur was screened at 50% only: its prediction is in the 50% column,
	// none in the 25% column.
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(line, " cur ") {
			f := strings.Fields(line)
			if len(f) < 7 || f[5] != "-" || f[6] != "1030" {
				t.Errorf("cur's row: %q", line)
			}
		}
	}
	// Nothing is said of the service not reached.
	empty := &Rank{App: "shop", Reductions: []string{"50%"}, MinGainPct: 5, Entries: []RankEntry{
		{Service: "cat", Stage: StageScreened, Results: results("cat", []string{"50%"}, pt("50%", 50, 990, 960, 1020))},
		{Service: "front", Verdict: VerdictNotReached, Stage: StageNotReached},
	}}
	Judge(&empty.Entries[0], 5)
	empty.Order()
	if reason := empty.Entries[0].Reason; !strings.Contains(reason, "front not reached") || !strings.Contains(reason, "a service not measured") {
		t.Errorf("no-gain reason with a service not reached: %q", reason)
	}
	if _, err := newRankPage(r); err != nil {
		t.Fatal(err)
	}
}

// A census that bounded services: they come after the measured ones,
// the largest bound first, each says it was bounded, the table says how
// many the census ruled out, and the fields survive results.json. An
// unsteady census says that every service was screened, and so does one
// that ruled nothing out.
func TestRankCensus(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	r := &Rank{App: "tree", Reductions: []string{"50%"}, MinGainPct: 5,
		Census:    &RankCensus{RPS: 24, DurationS: 3, Cycles: 9.5, Cores: 2, Headroom: 2, Reduction: "50%", Bounded: []string{"s1", "s2"}, ServicesUS: map[string]float64{"s0": 25000, "s1": 300, "s2": 500}},
		Screening: &RankScreening{Reduction: "50%", Order: []string{"s0"}, Candidates: []string{"s0"}, FullRuns: 3}}
	r.Entries = []RankEntry{
		{Service: "s1", Stage: StageBounded, Verdict: VerdictSkipped, Reason: "not screened: ...", CPUSharePct: f(1.2), GainBoundPct: f(2.4)},
		{Service: "s2", Stage: StageBounded, Verdict: VerdictSkipped, Reason: "not screened: ...", CPUSharePct: f(1.9), GainBoundPct: f(3.9)},
		{Service: "s0", Stage: StageConfirmed, CPUSharePct: f(96.9), Results: &Results{Target: "s0", C1: 1, U1US: 25000,
			Baseline: Baseline{RPS: 24, Runs: []float64{24, 24}}, Settings: Settings{Reductions: []string{"50%"}},
			Points: []Point{{ReductionPct: 50, PredictedRPS: 40, Estimate: EstimateValue, IntervalLowRPS: 36, IntervalHighRPS: 44}}}},
	}
	for i := range r.Entries {
		Judge(&r.Entries[i], r.MinGainPct)
	}
	r.Order()
	var got []string
	for _, e := range r.Entries {
		got = append(got, e.Service+":"+e.Verdict)
	}
	if want := []string{"s0:gain", "s2:skipped", "s1:skipped"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if r.Incomplete {
		t.Error("bounded services make the ranking incomplete")
	}
	var b bytes.Buffer
	if err := WriteRankTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"census: 24 req/s over 3s (10 request cycles) on 2 cores; 2 of 3 services not screened, their share of the CPU capping a cut of 50% at no more than the minimum gain of 5%", "[bounded]", "screened 1 of 1 services"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	path := t.TempDir() + "/results.json"
	if err := WriteRankJSON(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRankJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Census == nil || !slices.Equal(back.Census.Bounded, []string{"s1", "s2"}) || back.Entries[1].GainBoundPct == nil || *back.Entries[1].GainBoundPct != 3.9 || back.Entries[1].Stage != StageBounded {
		t.Errorf("read back: census %+v, entry %+v", back.Census, back.Entries[1])
	}
	if _, err := newRankPage(r); err != nil {
		t.Fatal(err)
	}
	// An unsteady census, and a steady one that ruled nothing out (it
	// quotes no bound): both say every service was screened.
	for _, tc := range []struct {
		name   string
		census RankCensus
		want   string
	}{
		{"unsteady", RankCensus{RPS: 1, DurationS: 3, Cycles: 0.2, Cores: 2, Reduction: "50%"},
			"too few cycles to read how the services share the CPU, so every service was screened"},
		{"none bounded", RankCensus{RPS: 587, DurationS: 2.2, Cycles: 10, Cores: 2, Reduction: "50%"},
			"census: 587 req/s over 2.2s (10 request cycles) on 2 cores; every service screened: each one's share of the CPU allows a cut of 50% more than the minimum gain of 5%"},
	} {
		b.Reset()
		if err := WriteRankTable(&b, &Rank{App: "tree", Reductions: []string{"50%"}, MinGainPct: 5, Census: &tc.census}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s census: table lacks %q:\n%s", tc.name, tc.want, b.String())
		}
	}
}

// A screening's baselines rule it out of deciding (ScreenDisturbed) where
// they vary by more than 7% and, with the noise they are judged against,
// beyond it (an F test at 95%); without that noise, 7% alone decides.
func TestScreenDisturbed(t *testing.T) {
	tests := []struct {
		name  string
		runs  []float64
		noise *Noise
		want  bool
	}{
		{"9.9% against 4% noise", []float64{1000, 1150}, &Noise{Pct: 4, DOF: 20}, true},
		{"9.9% against 6% noise", []float64{1000, 1150}, &Noise{Pct: 6, DOF: 20}, false},
		{"9.9%, noise unknown", []float64{1000, 1150}, nil, true},
		{"5.4%, under the floor", []float64{1000, 1080}, &Noise{Pct: 1, DOF: 20}, false},
		{"a halved baseline", []float64{1000, 500}, &Noise{Pct: 6, DOF: 20}, true},
		{"one baseline", []float64{1000}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := RankEntry{Service: "s", Results: &Results{Baseline: Baseline{Runs: tt.runs}}, ScreenNoise: tt.noise}
			if got := ScreenDisturbed(e); got != tt.want {
				t.Errorf("disturbed %v, want %v", got, tt.want)
			}
		})
	}
}

// A screening that ended at its baseline: the table says which services
// were measured no further than that and shows the baseline in their row,
// and results.json keeps them (screening.others_bind).
func TestRankOthersBind(t *testing.T) {
	r := &Rank{App: "demo", Reductions: []string{"50%"}, MinGainPct: 5,
		Screening: &RankScreening{Reduction: "50%", Order: []string{"catalog", "cart"}, Candidates: []string{"cart"}, FullRuns: 3, OthersBind: []string{"catalog"}}}
	r.Entries = []RankEntry{
		{Service: "catalog", Stage: StageBounded, Verdict: VerdictSkipped, Reason: "not screened further: the shared cores bound its own baseline (idle 0.0%) while catalog kept its core busy 10% of the time",
			Results: &Results{Target: "catalog", C1: 1, U1US: 147.4, Baseline: Baseline{RPS: 662, Runs: []float64{662}}}},
		{Service: "cart", Stage: StageConfirmed, Results: &Results{Target: "cart", C1: 1, U1US: 1226,
			Baseline: Baseline{RPS: 780, Runs: []float64{780, 790}}, Settings: Settings{Reductions: []string{"50%"}},
			Points: []Point{{ReductionPct: 50, PredictedRPS: 1600, Estimate: EstimateValue, IntervalLowRPS: 1300, IntervalHighRPS: 1900}}}},
	}
	for i := range r.Entries {
		Judge(&r.Entries[i], r.MinGainPct)
	}
	r.Order()
	if r.Entries[0].Service != "cart" || r.Entries[1].Verdict != VerdictSkipped || r.Incomplete {
		t.Fatalf("entries %+v, incomplete %v: want cart first, catalog skipped, complete", r.Entries, r.Incomplete)
	}
	var b bytes.Buffer
	if err := WriteRankTable(&b, r); err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, " catalog ") {
			row = l
		}
	}
	if !strings.Contains(b.String(), "1 of them measured no further than a baseline, in which the other services set the throughput: catalog") ||
		!strings.Contains(row, "662") || !strings.Contains(row, "[bounded]") || !strings.Contains(row, "not screened further") {
		t.Errorf("table (catalog's row %q):\n%s", row, b.String())
	}
	path := t.TempDir() + "/results.json"
	if err := WriteRankJSON(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRankJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Screening == nil || !slices.Equal(back.Screening.OthersBind, []string{"catalog"}) || back.Entries[1].Results == nil {
		t.Errorf("read back: screening %+v, catalog %+v", back.Screening, back.Entries[1])
	}
	if _, err := newRankPage(r); err != nil {
		t.Fatal(err)
	}
}
