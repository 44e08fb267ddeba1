package report

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rankResults is a service's experiment: a baseline of three runs around
// base and one point at 50% predicting pred with standard error se.
func rankResults(target string, c1, base, pred, se float64, flags ...string) *Results {
	return &Results{
		Target: target, C1: c1, U1US: 100,
		Baseline: Baseline{RPS: base, Runs: []float64{base * 0.99, base, base * 1.01}},
		Points: []Point{
			{ReductionPct: 25, PredictedRPS: (base + pred) / 2, StdErrPct: se},
			{ReductionPct: 50, PredictedRPS: pred, StdErrPct: se, Flags: flags},
		},
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name    string
		entry   RankEntry
		verdict string
		gain    float64
	}{
		{"a clear gain", RankEntry{Service: "cart", Results: rankResults("cart", 1, 1000, 1500, 1)}, VerdictGain, 50},
		{"below the minimum", RankEntry{Service: "a", Results: rankResults("a", 1, 1000, 1040, 0.5)}, VerdictNoGain, 4},
		{"within the noise", RankEntry{Service: "b", Results: rankResults("b", 1, 1000, 1100, 6)}, VerdictNoGain, 10},
		{"a loss", RankEntry{Service: "c", Results: rankResults("c", 1, 1000, 980, 1)}, VerdictNoGain, -2},
		{"never called", RankEntry{Service: "d", Results: rankResults("d", 0, 1000, 1000, 1)}, VerdictNotCalled, 0},
		{"infeasible", RankEntry{Service: "e", Results: rankResults("e", 1, 1000, 0, 1, FlagInfeasible)}, VerdictFailed, 0},
		{"no results", RankEntry{Service: "f"}, VerdictFailed, 0},
		{"failed before", RankEntry{Service: "g", Verdict: VerdictFailed, Reason: "boom"}, VerdictFailed, 0},
		{"skipped before", RankEntry{Service: "h", Verdict: VerdictSkipped, Reason: "used almost no CPU"}, VerdictSkipped, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.entry
			Judge(&e, 5)
			if e.Verdict != tt.verdict || math.Abs(e.GainPct-tt.gain) > 1e-9 {
				t.Errorf("verdict %q gain %.2f, want %q %.2f (reason %q)", e.Verdict, e.GainPct, tt.verdict, tt.gain, e.Reason)
			}
			if e.Verdict != VerdictGain && e.Verdict != VerdictNoGain && e.Reason == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestOrderAndTable(t *testing.T) {
	r := &Rank{App: "shop", Reductions: []string{"25%", "50%"}, MinGainPct: 5}
	for _, e := range []RankEntry{
		{Service: "catalog", Results: rankResults("catalog", 1, 1000, 1010, 1)},
		{Service: "broken", Verdict: VerdictFailed, Reason: "target \"broken\" used no measurable CPU"},
		{Service: "currency", Results: rankResults("currency", 1, 1000, 1200, 1)},
		{Service: "cart", Results: rankResults("cart", 2, 1000, 1600, 1)},
		{Service: "email", Results: rankResults("email", 0, 1000, 1000, 1)},
	} {
		Judge(&e, r.MinGainPct)
		r.Entries = append(r.Entries, e)
	}
	r.Order()
	var order []string
	for i, e := range r.Entries {
		order = append(order, e.Service)
		if e.Rank != i+1 {
			t.Errorf("%s ranked %d at position %d", e.Service, e.Rank, i+1)
		}
	}
	if got := strings.Join(order, ","); got != "cart,currency,catalog,email,broken" {
		t.Errorf("order %s", got)
	}
	if reason := r.Entries[2].Reason; !strings.Contains(reason, "cart, currency") {
		t.Errorf("catalog's reason does not name the bottlenecks: %q", reason)
	}

	var buf bytes.Buffer
	if err := WriteRankTable(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"rank", "cart", "+60.0%", "1600", "no-gain", "not-called", "failed: target \"broken\"", "no-gain (catalog): the bottleneck is elsewhere"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	path := filepath.Join(t.TempDir(), "results.json")
	r.Entries[0].Results.Points[0].SpreadPct = math.NaN()
	if err := WriteRankJSON(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRankJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Kind != KindRank || len(back.Entries) != 5 || back.Entries[0].Service != "cart" || back.Entries[0].Results.Target != "cart" || back.MinGainPct != 5 {
		t.Errorf("read back %+v", back)
	}
	if !math.IsNaN(r.Entries[0].Results.Points[0].SpreadPct) {
		t.Error("WriteRankJSON changed the caller's results")
	}
	one := filepath.Join(t.TempDir(), "one.json")
	if err := WriteJSON(one, rankResults("x", 1, 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRankJSON(one); err == nil {
		t.Error("ReadRankJSON accepted the results of one experiment")
	}
}

// Baselines far apart (the target of the moment on cores of its own
// changes the bottleneck) give a warning that names the service; no gain
// anywhere with busy shared cores says the shared cores limit throughput.
func TestPlacementWarning(t *testing.T) {
	r := &Rank{App: "shop", Reductions: []string{"50%"}, MinGainPct: 5}
	for _, svc := range []struct {
		name string
		base float64
	}{{"cart", 2000}, {"a", 1000}, {"b", 1100}, {"c", 950}} {
		res := rankResults(svc.name, 1, svc.base, svc.base*1.01, 1)
		res.Settings.PlacementMode = "shared"
		res.Baseline.SharedIdlePct = 1
		res.Baseline.SpreadPct = 3
		e := RankEntry{Service: svc.name, Results: res}
		Judge(&e, r.MinGainPct)
		r.Entries = append(r.Entries, e)
	}
	r.Order()
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "with cart on cores of its own the application ran at 2000 req/s") || !strings.Contains(r.Warnings[0], "+100%") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if reason := r.Entries[0].Reason; !strings.Contains(reason, "shared cores") {
		t.Errorf("reason %q does not name the shared cores", reason)
	}
	// Baselines within their noise: no warning.
	for i := range r.Entries {
		r.Entries[i].Results.Baseline.RPS = 1000 + float64(i)*20
	}
	r.Warnings = nil
	r.Order()
	if len(r.Warnings) != 0 {
		t.Errorf("warned of baselines within 6%%: %q", r.Warnings)
	}
}

// With intervals, a gain counts only where the interval's low end is
// above the minimum gain; a no-gain whose interval reaches above it says
// that a gain is not ruled out.
func TestJudgeByInterval(t *testing.T) {
	tests := []struct {
		name        string
		lo, hi      float64 // interval, req/s (hi 0: a lower bound)
		estimate    string
		verdict     string
		notRuledOut bool
		settled     bool // more runs would not change the verdict
	}{
		{"low end above the minimum", 1100, 1300, EstimateValue, VerdictGain, false, true},
		{"low end below, high end above", 1000, 1300, EstimateValue, VerdictNoGain, true, false},
		{"whole interval below", 980, 1040, EstimateValue, VerdictNoGain, false, true},
		{"a lower bound below the minimum", 1010, 0, EstimateLowerBound, VerdictNoGain, true, false},
		{"a lower bound above it", 1200, 0, EstimateLowerBound, VerdictGain, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := rankResults("cart", 1, 1000, 1150, 1)
			for i := range res.Points {
				res.Points[i].Estimate, res.Points[i].IntervalLowRPS, res.Points[i].IntervalHighRPS = tt.estimate, tt.lo, tt.hi
			}
			r := &Rank{MinGainPct: 5, Entries: []RankEntry{{Service: "cart", Results: res}}}
			Judge(&r.Entries[0], r.MinGainPct)
			r.Order()
			e := r.Entries[0]
			if e.Verdict != tt.verdict {
				t.Fatalf("verdict %q, want %q (gain %+.1f%%, low %v)", e.Verdict, tt.verdict, e.GainPct, e.GainLowPct)
			}
			if got := strings.Contains(e.Reason, "not ruled out"); got != tt.notRuledOut {
				t.Fatalf("reason %q: says a gain is not ruled out %v, want %v", e.Reason, got, tt.notRuledOut)
			}
			if (e.GainHighPct == nil) != (tt.hi == 0) {
				t.Fatalf("gain_high_pct %v for interval high %v", e.GainHighPct, tt.hi)
			}
			if ok, why := e.Settled(r.MinGainPct); ok != tt.settled || ok != strings.Contains(why, "cart's") {
				t.Fatalf("settled %v (%q), want %v", ok, why, tt.settled)
			}
		})
	}
}

// A ranking in which some services failed (an error, not a verdict) is
// marked incomplete and names them; what it says of the services that
// gain nothing never speaks for those that failed. A service skipped for
// using almost no CPU is named too, but leaves the ranking complete. (A
// ranking whose every target after the first failed at retargeting said
// "no single service's optimization gains", of services it never
// measured.)
func TestIncompleteRanking(t *testing.T) {
	const configureErr = "configure catalog: wire: peer reported an error: core 0 runs the target, which is never paused"
	const noCPU = `target "currency" used almost no CPU during pre-profiling (0.2% of a core, 9µs per request)`
	busy := func(name string, base, pred float64) *Results {
		res := rankResults(name, 1, base, pred, 1)
		res.Settings.PlacementMode = "shared"
		res.Baseline.SharedIdlePct = 1
		return res
	}
	failed := func(name, why string) RankEntry { return RankEntry{Service: name, Verdict: VerdictFailed, Reason: why} }
	skipped := RankEntry{Service: "currency", Verdict: VerdictSkipped, Reason: noCPU}
	tests := []struct {
		name       string
		entries    []RankEntry
		failed     []string // want Rank.Failed; none: complete
		order      string
		reason     []string // the no-gain reason contains each
		notReason  []string // and none of these
		table      []string // the table contains each
		notTable   []string
		headline   string // the HTML headline contains it
		firstNotes string // the first HTML note starts with it ("" any)
	}{
		{
			name:     "every service measured, none gains",
			entries:  []RankEntry{{Service: "cart", Results: busy("cart", 1000, 1010)}, {Service: "catalog", Results: busy("catalog", 1000, 1000)}},
			order:    "cart,catalog",
			reason:   []string{"no single service's optimization gains"},
			table:    []string{"no-gain (cart, catalog): no single service's optimization gains"},
			notTable: []string{"INCOMPLETE"}, headline: "No service's optimization gains",
		},
		{
			name:      "the first measured, the next failed at retargeting, one skipped",
			entries:   []RankEntry{{Service: "cart", Results: busy("cart", 1000, 1010)}, failed("catalog", configureErr), skipped, failed("frontend", "configure frontend: boom")},
			failed:    []string{"catalog", "frontend"},
			order:     "cart,currency,catalog,frontend",
			reason:    []string{"no measured service's optimization gains (cart)", "the ranking is incomplete: catalog, frontend failed"},
			notReason: []string{"no single service's optimization gains"},
			table: []string{"INCOMPLETE: the ranking is incomplete: 2 of 4 services failed (catalog, frontend), so it speaks only for the 1 measured",
				"failed: " + configureErr, "failed: configure frontend: boom", "skipped: " + noCPU},
			notTable:   []string{"no single service's optimization gains"},
			headline:   "but the ranking is incomplete",
			firstNotes: "Incomplete: catalog, frontend failed",
		},
		{
			name:       "a gain measured, another failed",
			entries:    []RankEntry{{Service: "cart", Results: busy("cart", 1000, 1600)}, {Service: "email", Results: busy("email", 1000, 1000)}, failed("catalog", configureErr)},
			failed:     []string{"catalog"},
			order:      "cart,email,catalog",
			reason:     []string{"the bottleneck is elsewhere: cart limits throughput"},
			table:      []string{"INCOMPLETE: the ranking is incomplete: 1 of 3 services failed (catalog)", "failed: " + configureErr},
			headline:   "cart is the most worth optimizing",
			firstNotes: "Incomplete: catalog failed",
		},
		{
			name:     "a service skipped for using no CPU: complete",
			entries:  []RankEntry{skipped, {Service: "cart", Results: busy("cart", 1000, 1010)}},
			order:    "cart,currency",
			reason:   []string{"no single service's optimization gains"},
			table:    []string{"skipped: " + noCPU},
			notTable: []string{"INCOMPLETE"},
			headline: "No service's optimization gains",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Rank{App: "shop", Reductions: []string{"25%", "50%"}, MinGainPct: 5}
			for _, e := range tt.entries {
				Judge(&e, r.MinGainPct)
				r.Entries = append(r.Entries, e)
			}
			r.Order()
			checkIncomplete(t, r, tt.failed)
			var order []string
			for _, e := range r.Entries {
				order = append(order, e.Service)
				if e.Verdict != VerdictNoGain {
					continue
				}
				for _, want := range tt.reason {
					if !strings.Contains(e.Reason, want) {
						t.Errorf("%s's reason %q lacks %q", e.Service, e.Reason, want)
					}
				}
				for _, not := range tt.notReason {
					if strings.Contains(e.Reason, not) {
						t.Errorf("%s's reason %q says %q", e.Service, e.Reason, not)
					}
				}
			}
			if got := strings.Join(order, ","); got != tt.order {
				t.Errorf("order %s, want %s", got, tt.order)
			}
			var buf bytes.Buffer
			if err := WriteRankTable(&buf, r); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.table {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("the table lacks %q:\n%s", want, &buf)
				}
			}
			for _, not := range tt.notTable {
				if strings.Contains(buf.String(), not) {
					t.Errorf("the table says %q:\n%s", not, &buf)
				}
			}
			headline, notes := rankHeadline(r)
			if !strings.Contains(headline, tt.headline) {
				t.Errorf("headline %q, want %q in it", headline, tt.headline)
			}
			if tt.firstNotes != "" && (len(notes) == 0 || !strings.HasPrefix(notes[0], tt.firstNotes)) {
				t.Errorf("notes %q, want the first to start %q", notes, tt.firstNotes)
			}
			path := filepath.Join(t.TempDir(), "results.json")
			if err := WriteRankJSON(path, r); err != nil {
				t.Fatal(err)
			}
			back, err := ReadRankJSON(path)
			if err != nil {
				t.Fatal(err)
			}
			checkIncomplete(t, back, tt.failed)
		})
	}
}

// checkIncomplete checks that r is incomplete, naming failed, where any
// failed, and complete otherwise.
func checkIncomplete(t *testing.T, r *Rank, failed []string) {
	t.Helper()
	if r.Incomplete != (len(failed) > 0) || !slices.Equal(r.Failed, failed) {
		t.Errorf("incomplete %v, failed %q; want %v, %q", r.Incomplete, r.Failed, len(failed) > 0, failed)
	}
}

// Two entries are separated when their gain intervals do not overlap; a
// lower bound only from an interval wholly below it, and an entry
// without an interval from none.
func TestSeparated(t *testing.T) {
	iv := func(lo, hi float64) RankEntry {
		e := RankEntry{GainLowPct: &lo}
		if !math.IsInf(hi, 1) {
			e.GainHighPct = &hi
		}
		return e
	}
	inf := math.Inf(1)
	tests := []struct {
		name string
		a, b RankEntry
		want bool
	}{
		{"apart", iv(30, 60), iv(5, 20), true},
		{"overlapping", iv(30, 60), iv(5, 35), false},
		{"a lower bound above an interval", iv(30, inf), iv(5, 20), true},
		{"a lower bound inside an interval", iv(30, inf), iv(5, 40), false},
		{"two lower bounds", iv(30, inf), iv(5, inf), false},
		{"no interval", RankEntry{GainPct: 50}, iv(5, 20), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, back := tt.a.Separated(tt.b), tt.b.Separated(tt.a); got != tt.want || back != tt.want {
				t.Errorf("separated %v, the other way %v; want %v", got, back, tt.want)
			}
		})
	}
}

// A gain's interval is the point's widened in quadrature by the
// baseline's own (Baseline.HalfWidthPct): a gain whose point interval
// alone clears the minimum is not shown where the baseline is uncertain
// enough, and the interval stays around the gain.
func TestJudgeBaselineUncertainty(t *testing.T) {
	for _, tt := range []struct {
		name      string
		halfWidth float64
		verdict   string
		low       float64 // gain_low_pct
	}{
		{"baseline exact", 0, VerdictGain, 6},
		// 1150 · (1 - hypot(90/1150, 6%)) = 1036.6 req/s.
		{"baseline ±6%", 6, VerdictNoGain, (1150*(1-math.Hypot(90/1150.0, 0.06))/1000 - 1) * 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := rankResults("cart", 1, 1000, 1150, 1)
			res.Baseline.HalfWidthPct = tt.halfWidth
			for i := range res.Points {
				res.Points[i].Estimate, res.Points[i].IntervalLowRPS, res.Points[i].IntervalHighRPS = EstimateValue, res.Points[i].PredictedRPS-90, res.Points[i].PredictedRPS+90
			}
			e := RankEntry{Service: "cart", Results: res}
			Judge(&e, 5)
			if e.Verdict != tt.verdict || math.Abs(*e.GainLowPct-tt.low) > 1e-9 {
				t.Fatalf("verdict %q, gain low %+.2f%%: want %q, %+.2f%%", e.Verdict, *e.GainLowPct, tt.verdict, tt.low)
			}
			if !(*e.GainLowPct < e.GainPct && e.GainPct < *e.GainHighPct) {
				t.Fatalf("interval %+.1f..%+.1f%% does not hold the gain %+.1f%%", *e.GainLowPct, *e.GainHighPct, e.GainPct)
			}
		})
	}
}
