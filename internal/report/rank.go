package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aclements/go-moremath/stats"
)

// KindRank is the kind of a causal profile of every service (slowpoke rank).
const KindRank = "rank"

// Verdicts of a ranked service.
const (
	// VerdictGain: optimizing the service raises throughput by more than
	// the noise of the estimate.
	VerdictGain = "gain"
	// VerdictNoGain: the predicted gain is within the noise (or nothing):
	// the bottleneck is elsewhere.
	VerdictNoGain = "no-gain"
	// VerdictNotCalled: the workload never calls the service.
	VerdictNotCalled = "not-called"
	// VerdictSkipped: the service was not measured (or measured no
	// further than a baseline) for a reason that is itself the answer:
	// its rounds were to follow its CPU time, and it used almost none;
	// the census's share of the CPU caps its gain below the minimum; or
	// its baseline found the other services setting the throughput. A
	// cheaper one would not change throughput.
	VerdictSkipped = "skipped"
	// VerdictFailed: no prediction could be made (see the entry's reason).
	VerdictFailed = "failed"
)

// Rank is the outcome of slowpoke rank, stored as results.json: one entry
// per service, in rank order (largest predicted gain first).
type Rank struct {
	Version   int       `json:"version"` // Version
	Kind      string    `json:"kind"`    // KindRank
	App       string    `json:"app"`
	CreatedAt time.Time `json:"created_at"`
	// Reductions are the reductions every service was given, as typed.
	Reductions []string `json:"reductions"`
	// Services are the services asked for with --services (empty: all);
	// MinGainPct is --min-gain.
	Services   []string `json:"services,omitempty"`
	MinGainPct float64  `json:"min_gain_pct"`
	// ElapsedS is how long the whole profile took, start-up included.
	ElapsedS float64     `json:"elapsed_s"`
	Entries  []RankEntry `json:"entries"`
	// Incomplete says that some services failed (Failed, in rank order):
	// the ranking speaks only for the others. Order sets both.
	Incomplete bool     `json:"incomplete,omitempty"`
	Failed     []string `json:"failed,omitempty"`
	// NotReached are the services not measured at all (verdict
	// not-reached): the budget ran out or the ranking was interrupted
	// first. They make the ranking incomplete too. Order sets it.
	NotReached []string `json:"not_reached,omitempty"`
	// Screening is how the screening pass was made; absent for a full
	// ranking (--screen=false). Drift is what the baselines showed of the
	// machine's speed moving.
	Screening *RankScreening `json:"screening,omitempty"`
	Drift     *RankDrift     `json:"drift,omitempty"`
	// Census is the run before the screening that bounds each service's
	// gain by its share of the CPU; absent where none was made (a full
	// ranking, --bound=false, reductions given as times, Kubernetes).
	Census *RankCensus `json:"census,omitempty"`
	// BudgetS is --budget, s (absent: none). Partial says that the
	// ranking stopped before measuring everything it meant to (the budget
	// ran out, or it was interrupted: PartialReason): candidates screened
	// but not confirmed, or services not reached.
	BudgetS       float64  `json:"budget_s,omitempty"`
	Partial       bool     `json:"partial,omitempty"`
	PartialReason string   `json:"partial_reason,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

// RankEntry is one service's place in the ranking.
type RankEntry struct {
	Rank    int    `json:"rank"` // 1 for the most worth optimizing
	Service string `json:"service"`
	// Stage is how far the ranking got with the service (Stage*):
	// screened, confirmed, failed or not-reached; absent in a full
	// ranking (--screen=false). Screen is, for a confirmed service, what
	// its screening measured.
	Stage  string      `json:"stage,omitempty"`
	Screen *RankScreen `json:"screen,omitempty"`
	// GainPct is the predicted throughput gain over the baseline at the
	// largest reduction, %, and GainStdErrPct its standard error. Where
	// the shared cores bind there (results.plateau), that is the gain at
	// which the curve stops: their capacity.
	GainPct       float64 `json:"gain_pct"`
	GainStdErrPct float64 `json:"gain_std_err_pct"`
	// GainLowPct and GainHighPct are the gain at the ends of that
	// point's 90% interval (version 2): a gain counts only where
	// GainLowPct is above min_gain_pct. GainHighPct is absent where the
	// point is a lower bound (no upper end); both where it has no
	// interval.
	GainLowPct  *float64 `json:"gain_low_pct,omitempty"`
	GainHighPct *float64 `json:"gain_high_pct,omitempty"`
	Verdict     string   `json:"verdict"` // Verdict*
	// Reason says the verdict in words: where the bottleneck is for
	// no-gain, what went wrong for failed.
	Reason string `json:"reason,omitempty"`
	// Results is the service's experiment as predict writes it (nil when
	// it failed before any measurement).
	Results *Results `json:"results,omitempty"`
	// CPUSharePct is the service's share of the application's CPU per
	// request in the census (Rank.Census), %, and GainBoundPct the most
	// gain, %, that the screening's reduction of it can give by that
	// share; both absent without a census, GainBoundPct also where
	// nothing caps the gain (a cut of all of a service that may bind).
	CPUSharePct  *float64 `json:"cpu_share_pct,omitempty"`
	GainBoundPct *float64 `json:"gain_bound_pct,omitempty"`
	// ScreenNoise is, for a screened service, the run-to-run noise its
	// baselines are judged against (ScreenDisturbed): that of the other
	// services' screening baselines, pooled with the prior that every
	// interval assumes; absent for a full ranking.
	ScreenNoise *Noise `json:"screen_noise,omitempty"`
}

// Noise is a run-to-run noise: the relative standard deviation of one
// run, %, and how many degrees of freedom it was estimated with.
type Noise struct {
	Pct float64 `json:"pct"`
	DOF int     `json:"dof"`
}

// entryPlateau returns where the gains of e stop, or nil where they do not
// (or it has no prediction).
func entryPlateau(e RankEntry) *Plateau {
	if e.Results == nil || (e.Verdict != VerdictGain && e.Verdict != VerdictNoGain) {
		return nil
	}
	return e.Results.Plateau
}

// LargestPoint returns the point of r with the largest reduction, or nil.
func LargestPoint(r *Results) *Point {
	if r == nil || len(r.Points) == 0 {
		return nil
	}
	ps := sortedPoints(r)
	p := ps[len(ps)-1]
	return &p
}

// Judge fills e's gain, standard error and verdict from e.Results, unless
// the entry already failed, was skipped or not reached, or was found not
// called without results. A gain counts where the low
// end of the point's 90% interval is above minGainPct; in results without
// intervals (version 1), where it is larger than twice its standard error
// and than minGainPct.
func Judge(e *RankEntry, minGainPct float64) {
	if e.Verdict == VerdictFailed || e.Verdict == VerdictSkipped || e.Verdict == VerdictNotReached || e.Verdict == VerdictNotCalled && e.Results == nil {
		return
	}
	r := e.Results
	p := LargestPoint(r)
	switch {
	case r == nil || p == nil:
		e.Verdict, e.Reason = VerdictFailed, "no measurement"
		return
	case r.C1 == 0:
		e.Verdict, e.Reason = VerdictNotCalled, "the workload does not call it"
		return
	case p.Infeasible() || r.Baseline.RPS <= 0:
		e.Verdict, e.Reason = VerdictFailed, "no feasible prediction at "+trimFloat(p.ReductionPct)+"% (see its flags)"
		return
	}
	e.GainPct = (p.PredictedRPS/r.Baseline.RPS - 1) * 100
	// The gain's error combines the point's and the baseline's.
	baseSE := 0.0
	if n := len(r.Baseline.Runs); n > 1 {
		baseSE = stats.StdDev(r.Baseline.Runs) / math.Sqrt(float64(n)) / r.Baseline.RPS * 100
	}
	e.GainStdErrPct = math.Hypot(p.StdErrPct, baseSE)
	if p.Estimate == "" || p.IntervalLowRPS <= 0 && p.IntervalHighRPS <= 0 {
		if e.GainPct > minGainPct && e.GainPct > 2*e.GainStdErrPct {
			e.Verdict = VerdictGain
		} else {
			e.Verdict = VerdictNoGain
		}
		return
	}
	// The gain is the prediction over the baseline: its interval is the
	// point's, widened in quadrature by the baseline's own (a baseline
	// measured low makes a gain that is not there).
	// sign is -1 for the interval's low end, +1 for its high end.
	hb := r.Baseline.HalfWidthPct / 100
	gain := func(rps, sign float64) *float64 {
		if pred := p.PredictedRPS; pred > 0 && hb > 0 {
			rps = pred * (1 + sign*math.Hypot(rps/pred-1, hb))
		}
		g := (rps/r.Baseline.RPS - 1) * 100
		return &g
	}
	e.GainLowPct = gain(p.IntervalLowRPS, -1)
	if p.IntervalHighRPS > 0 {
		e.GainHighPct = gain(p.IntervalHighRPS, +1)
	}
	if *e.GainLowPct > minGainPct {
		e.Verdict = VerdictGain
	} else {
		e.Verdict = VerdictNoGain
	}
}

// GainText is e's gain in words: "+12.3% (90%: +5.0 to +20.1)", with a
// lower bound's ">= +5.0", or with the standard error where e has no
// interval ("+12.3% ± 1.0").
func (e RankEntry) GainText() string {
	switch {
	case e.GainLowPct == nil:
		return fmt.Sprintf("%+.1f%% ± %.1f", e.GainPct, e.GainStdErrPct)
	case e.GainHighPct == nil:
		return fmt.Sprintf("%+.1f%% (90%%: >= %+.1f)", e.GainPct, *e.GainLowPct)
	}
	return fmt.Sprintf("%+.1f%% (90%%: %+.1f to %+.1f)", e.GainPct, *e.GainLowPct, *e.GainHighPct)
}

// Settled says whether e's verdict, judged (Judge), is one that more
// runs would not change, and why in words: a gain whose interval lies
// wholly above minGainPct, or a no-gain whose interval lies wholly at or
// below it. More runs only narrow such an interval. A gain without an
// interval, or an interval that straddles minGainPct, is not settled.
func (e RankEntry) Settled(minGainPct float64) (bool, string) {
	switch {
	case e.GainLowPct == nil:
		return false, ""
	case e.Verdict == VerdictGain:
		return true, fmt.Sprintf("%s's gain is settled: its 90%% interval, %s, lies above the minimum gain of %s%%", e.Service, e.rangeText(), trimFloat(minGainPct))
	case e.Verdict == VerdictNoGain && e.GainHighPct != nil && *e.GainHighPct <= minGainPct:
		return true, fmt.Sprintf("%s's no-gain is settled: its 90%% interval, %s, lies at or below the minimum gain of %s%%", e.Service, e.rangeText(), trimFloat(minGainPct))
	}
	return false, ""
}

// Separated says whether e's and o's gain intervals do not overlap, so
// that more runs of either would not change which of them ranks above
// the other. Either without an interval is not separated; a lower bound
// is separated only from an interval wholly below it.
func (e RankEntry) Separated(o RankEntry) bool {
	if e.GainLowPct == nil || o.GainLowPct == nil {
		return false
	}
	above := func(a, b RankEntry) bool { return b.GainHighPct != nil && *a.GainLowPct > *b.GainHighPct }
	return above(e, o) || above(o, e)
}

// rangeText is e's interval, "+5.0% to +20.1%" (">= +5.0%" for a lower
// bound).
func (e RankEntry) rangeText() string {
	if e.GainHighPct == nil {
		return fmt.Sprintf(">= %+.1f%%", *e.GainLowPct)
	}
	return fmt.Sprintf("%+.1f%% to %+.1f%%", *e.GainLowPct, *e.GainHighPct)
}

// GainRange is the range e's gain chart bar spans as its error: its 90%
// interval (up to twice the gain's standard error above it for a lower
// bound), or twice its standard error either side.
func (e RankEntry) GainRange() (lo, hi float64) {
	lo, hi = e.GainPct-2*e.GainStdErrPct, e.GainPct+2*e.GainStdErrPct
	if e.GainLowPct != nil {
		lo = *e.GainLowPct
		hi = max(e.GainPct, hi)
		if e.GainHighPct != nil {
			hi = *e.GainHighPct
		}
	}
	return lo, hi
}

// intervalText is e's gain interval in words.
func (e RankEntry) intervalText() string {
	if e.GainHighPct == nil {
		return fmt.Sprintf("its prediction is only a lower bound (the target starved during the pauses), a gain of at least %+.1f%%", *e.GainLowPct)
	}
	return fmt.Sprintf("its 90%% interval, %+.1f%% to %+.1f%%, reaches above the minimum gain", *e.GainLowPct, *e.GainHighPct)
}

// mayGain says whether e, judged no-gain, has an interval that reaches
// above minGainPct: the run could not rule a gain out.
func (e RankEntry) mayGain(minGainPct float64) bool {
	return e.Verdict == VerdictNoGain && e.GainLowPct != nil && (e.GainHighPct == nil || *e.GainHighPct > minGainPct)
}

// Order sorts the entries into rank order and numbers them: services that
// gain first (largest gain first), then those that gain nothing, those the
// workload does not call, those skipped, and those that failed; it marks
// the ranking incomplete where any failed, and says where the bottleneck
// is for each service that gains nothing, speaking only for the services
// measured.
func (r *Rank) Order() {
	order := map[string]int{VerdictGain: 0, VerdictNoGain: 1, VerdictNotCalled: 2, VerdictSkipped: 3, VerdictFailed: 4, VerdictNotReached: 5}
	slices.SortStableFunc(r.Entries, func(a, b RankEntry) int {
		if c := cmp.Compare(order[a.Verdict], order[b.Verdict]); c != 0 {
			return c
		}
		if c := cmp.Compare(b.GainPct, a.GainPct); c != 0 {
			return c
		}
		// Then the larger census bound first, no bound counting as none
		// lower than any.
		bound := func(e RankEntry) float64 {
			if e.GainBoundPct == nil {
				return math.Inf(1)
			}
			return *e.GainBoundPct
		}
		return cmp.Compare(bound(b), bound(a))
	})
	for i := range r.Entries {
		r.Entries[i].Rank = i + 1
	}
	r.Failed = r.withVerdict(VerdictFailed)
	r.NotReached = r.withVerdict(VerdictNotReached)
	r.Incomplete = len(r.Failed) > 0 || len(r.NotReached) > 0
	reason := r.noGainReason()
	for i := range r.Entries {
		e := &r.Entries[i]
		switch {
		case r.unconfirmed(*e) && (e.Verdict == VerdictGain || e.Verdict == VerdictNoGain):
			e.Reason = "screened only: a candidate not confirmed (" + r.PartialReason + "); its screening at " + r.Screening.Reduction + " gave " + e.GainText()
		case e.Verdict != VerdictNoGain:
		case e.Stage == StageScreened && r.Screening != nil && e.GainLowPct != nil && e.GainHighPct != nil && *e.GainHighPct > r.MinGainPct:
			e.Reason = fmt.Sprintf("ruled out by its screening: its 90%% interval, %+.1f%% to %+.1f%%, reaches above the minimum gain but not above %.1f%%, the least a full measurement could show as a gain", *e.GainLowPct, *e.GainHighPct, ScreenBar(*e, r.MinGainPct, r.Screening.FullRuns))
		case e.mayGain(r.MinGainPct):
			e.Reason = "not shown to gain: " + e.intervalText() + ", so a gain above the minimum is not ruled out; measure it with more repetitions or validate it"
		default:
			e.Reason = reason
		}
	}
	if w := r.placementWarning(); w != "" && !slices.Contains(r.Warnings, w) {
		r.Warnings = append(r.Warnings, w)
	}
}

// unconfirmed says whether e is a screening candidate that was not
// confirmed (a partial ranking).
func (r *Rank) unconfirmed(e RankEntry) bool {
	return e.Stage == StageScreened && r.Screening != nil && slices.Contains(r.Screening.Candidates, e.Service)
}

// unmeasured lists the services that failed or were not reached, in
// words: "a, b failed", "c not reached".
func (r *Rank) unmeasured() string {
	var parts []string
	if len(r.Failed) > 0 {
		parts = append(parts, strings.Join(r.Failed, ", ")+" failed")
	}
	if len(r.NotReached) > 0 {
		parts = append(parts, strings.Join(r.NotReached, ", ")+" not reached")
	}
	return strings.Join(parts, ", ")
}

// notReachedOf counts the services of names that were not reached.
func (r *Rank) notReachedOf(names []string) int {
	n := 0
	for _, name := range names {
		if slices.Contains(r.NotReached, name) {
			n++
		}
	}
	return n
}

// withVerdict lists the services with verdict v, in entry order.
func (r *Rank) withVerdict(v string) []string {
	var out []string
	for _, e := range r.Entries {
		if e.Verdict == v {
			out = append(out, e.Service)
		}
	}
	return out
}

// noGainReason says where the bottleneck is for the services that gain
// nothing: at the services that gain, or, where none does, why none of the
// services measured does. With services that failed, it claims nothing
// for them: any of them may be the bottleneck.
func (r *Rank) noGainReason() string {
	if gainers := r.withVerdict(VerdictGain); len(gainers) > 0 {
		return fmt.Sprintf("the bottleneck is elsewhere: %s limits throughput", strings.Join(gainers, ", "))
	}
	if r.Incomplete {
		which := "a service that failed"
		if len(r.Failed) == 0 {
			which = "a service not measured"
		} else if len(r.NotReached) > 0 {
			which = "a service that failed or was not measured"
		}
		why := "no measured service's optimization gains (" + strings.Join(r.withVerdict(VerdictNoGain), ", ") + "), but the ranking is incomplete: " +
			r.unmeasured() + ", and the bottleneck may be in " + which
		if r.sharedSaturated() {
			why += "; the shared cores were busy through the baselines measured, so throughput may also be limited by the services on them together, or by the load generator"
		}
		return why
	}
	if r.sharedSaturated() {
		return "no single service's optimization gains: the shared cores (the services other than the target, the load generator and the controllers) were busy through the baselines, so throughput is limited by all of them together, or by the load generator"
	}
	return "no service's optimization gains: the bottleneck is outside the services' CPU time (the load generator, the connections, or a resource they share)"
}

// IncompleteText says, where some services failed, that the ranking is
// incomplete and which failed; "" where none did.
func (r *Rank) IncompleteText() string {
	if len(r.Failed) == 0 && len(r.NotReached) == 0 {
		return ""
	}
	measured := 0
	for _, e := range r.Entries {
		if e.Verdict == VerdictGain || e.Verdict == VerdictNoGain {
			measured++
		}
	}
	if len(r.NotReached) == 0 {
		return fmt.Sprintf("the ranking is incomplete: %d of %d services failed (%s), so it speaks only for the %d measured",
			len(r.Failed), len(r.Entries), strings.Join(r.Failed, ", "), measured)
	}
	return fmt.Sprintf("the ranking is incomplete: of %d services, %s, so it speaks only for the %d measured",
		len(r.Entries), r.unmeasured(), measured)
}

// sharedSaturated reports whether the shared cores were idle less than 5%
// of the time in the median service's baseline, under shared placement.
func (r *Rank) sharedSaturated() bool {
	var idle []float64
	for _, e := range r.Entries {
		if e.Results != nil && e.Results.Settings.PlacementMode == "shared" && e.Results.Baseline.RPS > 0 {
			idle = append(idle, e.Results.Baseline.SharedIdlePct)
		}
	}
	return len(idle) > 0 && Median(idle) < 5
}

// placementWarning says when the services' baselines differ by more than
// their noise explains, which happens where the target of the moment gets
// cores of its own and the others share theirs: each service's gain is
// then measured on a different placement of the application.
func (r *Rank) placementWarning() string {
	type base struct {
		service string
		rps     float64
	}
	var bs []base
	var spread []float64
	for _, e := range r.Entries {
		if e.Results != nil && e.Results.Baseline.RPS > 0 {
			bs = append(bs, base{e.Service, e.Results.Baseline.RPS})
			spread = append(spread, e.Results.Baseline.SpreadPct)
		}
	}
	if len(bs) < 2 {
		return ""
	}
	slices.SortFunc(bs, func(a, b base) int { return cmp.Compare(b.rps, a.rps) })
	top, rest := bs[0], bs[1:]
	var others []float64
	for _, b := range rest {
		others = append(others, b.rps)
	}
	med := Median(others)
	// Twice the typical spread of one baseline's runs, and at least 15%.
	if top.rps <= med*(1+max(0.15, 2*Median(spread)/100)) {
		return ""
	}
	return fmt.Sprintf("the baselines differ with the placement: with %s on cores of its own the application ran at %.0f req/s, against %.0f (median) with each other service there. "+
		"Each service's gain is measured with that service on cores of its own, so the gains compare placements as well as optimizations; "+
		"giving %s cores of its own is itself worth about %+.0f%% here. With a core for every service (--placement dedicated, where the machine has them) the placement does not change between services",
		top.service, top.rps, med, top.service, (top.rps/med-1)*100)
}

// WriteRankTable writes the ranking as a table: one row per service in rank
// order with the predicted throughput at each reduction and the gain at
// the largest, then what each verdict means for the others.
func WriteRankTable(w io.Writer, r *Rank) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "app %s: %d services, reductions %s, %s\n", r.App, len(r.Entries), strings.Join(r.Reductions, ","), (time.Duration(r.ElapsedS * float64(time.Second))).Round(time.Second))
	for _, warn := range r.Warnings {
		fmt.Fprintf(ew, "warning: %s\n", warn)
	}
	if text := r.PartialText(); text != "" {
		fmt.Fprintf(ew, "PARTIAL: %s\n", text)
	}
	if text := r.IncompleteText(); text != "" {
		fmt.Fprintf(ew, "INCOMPLETE: %s\n", text)
	}
	if cen := r.Census; cen != nil {
		fmt.Fprintf(ew, "census: %.0f req/s over %ss (%.0f request cycles) on %d cores; ", cen.RPS, trimFloat(cen.DurationS), cen.Cycles, cen.Cores)
		if cen.Bounded == nil && cen.Cycles < CensusSteadyCycles {
			fmt.Fprintf(ew, "too few cycles to read how the services share the CPU, so every service was screened\n")
		} else if len(cen.Bounded) == 0 {
			fmt.Fprintf(ew, "every service screened: each one's share of the CPU allows a cut of %s more than the minimum gain of %s%%\n",
				cen.Reduction, trimFloat(r.MinGainPct))
		} else {
			fmt.Fprintf(ew, "%d of %d services not screened, their share of the CPU capping a cut of %s at no more than the minimum gain of %s%%\n",
				len(cen.Bounded), len(r.Entries), cen.Reduction, trimFloat(r.MinGainPct))
		}
	}
	if sc := r.Screening; sc != nil {
		fmt.Fprintf(ew, "screened %d of %d services at %s (%s windows after %s warm-up, random order, seed %d) in %s; %s confirmed at %s: %s\n",
			len(sc.Order)-r.notReachedOf(sc.Order), len(sc.Order), sc.Reduction, trimFloat(sc.DurationS)+"s", trimFloat(sc.WarmupS)+"s", sc.Seed,
			(time.Duration(sc.ElapsedS * float64(time.Second))).Round(time.Second), plural(len(r.withStage(StageConfirmed)), "candidate"), strings.Join(r.Reductions, ","), orNone(sc.Candidates))
		if len(sc.OthersBind) > 0 {
			fmt.Fprintf(ew, "%d of them measured no further than a baseline, in which the other services set the throughput: %s\n", len(sc.OthersBind), strings.Join(sc.OthersBind, ", "))
		}
	}
	if text := r.Drift.Text(); text != "" {
		fmt.Fprintf(ew, "baseline drift: %s\n", text)
	}
	fmt.Fprintln(ew)
	tw := tabwriter.NewWriter(ew, 0, 8, 2, ' ', tabwriter.AlignRight)
	cols := []string{"rank", "service", "baseline req/s", "calls/req", "µs/call"}
	for _, red := range r.Reductions {
		cols = append(cols, red)
	}
	cols = append(cols, "gain", "")
	fmt.Fprintf(tw, "%s\t  verdict\n", strings.Join(cols, "\t"))
	for _, e := range r.Entries {
		row := []string{fmt.Sprint(e.Rank), e.Service}
		res := e.Results
		if res == nil {
			row = append(row, "-", "-", "-")
		} else {
			calls, cpu := fmt.Sprintf("%.3g", res.C1), fmt.Sprintf("%.1f", res.U1US)
			if res.PerRequest() {
				calls, cpu = "-", cpu+"/req"
			}
			row = append(row, fmt.Sprintf("%.0f", res.Baseline.RPS), calls, cpu)
		}
		for i := range r.Reductions {
			cell := "-"
			if p := e.PointAt(r.Reductions, i); p != nil && !p.Infeasible() {
				cell = fmt.Sprintf("%.0f", p.PredictedRPS)
			}
			row = append(row, cell)
		}
		gain := "-"
		if e.Verdict == VerdictGain || e.Verdict == VerdictNoGain {
			gain = e.GainText()
		}
		row = append(row, gain, "")
		verdict := e.Verdict
		if e.Verdict == VerdictFailed || e.Verdict == VerdictNotCalled || e.Verdict == VerdictSkipped || e.Verdict == VerdictNotReached {
			verdict += ": " + e.Reason
		}
		if pl := entryPlateau(e); pl != nil {
			verdict += fmt.Sprintf(" (gains stop at about %s%%: the shared cores bind)", trimFloat(math.Round(pl.StopPct)))
		}
		if e.Stage == StageScreened || e.Stage == StageConfirmed || e.Stage == StageBounded {
			verdict += " [" + e.Stage + "]"
		}
		fmt.Fprintf(tw, "%s\t  %s\n", strings.Join(row, "\t"), verdict)
	}
	tw.Flush()
	// Each no-gain reason once, naming the services it is given for.
	var reasons []string
	named := map[string][]string{}
	for _, e := range r.Entries {
		if e.Verdict == VerdictNoGain && !r.unconfirmed(e) {
			if named[e.Reason] == nil {
				reasons = append(reasons, e.Reason)
			}
			named[e.Reason] = append(named[e.Reason], e.Service)
		}
	}
	for _, reason := range reasons {
		fmt.Fprintf(ew, "\nno-gain (%s): %s\n", strings.Join(named[reason], ", "), reason)
	}
	return ew.err
}

// WriteRankJSON writes r to path as indented JSON, atomically, with each
// entry's results cleaned as WriteJSON cleans them.
func WriteRankJSON(path string, r *Rank) error {
	c := *r
	if c.Version == 0 {
		c.Version = Version
	}
	c.Kind = KindRank
	c.Reductions = cloneList(r.Reductions)
	c.Entries = cloneList(r.Entries)
	c.Warnings = slices.Clone(r.Warnings)
	for i := range c.Entries {
		if res := c.Entries[i].Results; res != nil {
			rc := res.clone()
			if rc.Version == 0 {
				rc.Version = Version
			}
			c.Entries[i].Results = rc
		}
	}
	var fixed []string
	for i := range c.Entries {
		e := &c.Entries[i]
		for _, f := range []*float64{&e.GainPct, &e.GainStdErrPct} {
			if math.IsNaN(*f) || math.IsInf(*f, 0) {
				fixed = append(fixed, fmt.Sprintf("non-finite gain of %s written as 0", e.Service))
				*f = 0
			}
		}
		if e.Results != nil {
			fixNonFiniteResults(e.Results)
		}
	}
	c.Warnings = append(c.Warnings, fixed...)
	return writeJSON(path, &c)
}

// ReadRankJSON reads a ranking written by WriteRankJSON.
func ReadRankJSON(path string) (*Rank, error) {
	var r Rank
	if err := readJSON(path, &r); err != nil {
		return nil, err
	}
	switch {
	case r.Kind != KindRank:
		return nil, fmt.Errorf("%s: not a slowpoke ranking (kind %q)", path, r.Kind)
	case r.Version > Version:
		return nil, newerVersion(path, r.Version)
	}
	return &r, nil
}

// fixNonFiniteResults zeroes r's non-finite numbers, as WriteJSON does.
func fixNonFiniteResults(r *Results) {
	fixNonFinite(reflect.ValueOf(r).Elem(), "", &r.Warnings)
}
