package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// Stages of a ranked service (RankEntry.Stage): how far rank's screening
// and confirmation got with it.
const (
	// StageScreened: measured by the screening pass only (a short run at
	// one reduction): its screening interval ruled out a gain above the
	// minimum, or it was a candidate that was not confirmed (the budget
	// ran out, or the ranking was interrupted; the ranking is then
	// partial).
	StageScreened = "screened"
	// StageConfirmed: measured in full (every reduction, repetitions
	// until the interval is tight) after passing the screening.
	StageConfirmed = "confirmed"
	// StageFailed: its screening or its confirmation failed.
	StageFailed = "failed"
	// StageNotReached: not measured at all: the budget ran out or the
	// ranking was interrupted before its turn.
	StageNotReached = "not-reached"
	// StageBounded: not screened, since its share of the application's
	// CPU, from the census before the screening, caps its gain at the
	// screening's reduction below the minimum (verdict skipped;
	// RankEntry.GainBoundPct); or screened no further than its first
	// baseline, which found the other services setting the throughput
	// (verdict skipped; RankScreening.OthersBind).
	StageBounded = "bounded"
)

// RankCensus is the one baseline run that rank measures before the
// screening, reading every service's CPU time: each service's share of
// the application's CPU per request bounds the gain that cutting it can
// give (model.GainBound, model.BusyBound), and the services whose bound
// is below the minimum gain are not screened (StageBounded).
type RankCensus struct {
	// RPS is the run's throughput; WarmupS and DurationS its warm-up and
	// window, s.
	RPS       float64 `json:"rps"`
	WarmupS   float64 `json:"warmup_s"`
	DurationS float64 `json:"duration_s"`
	// Cycles is how many request cycles (connections / throughput) its
	// window held; with fewer than CensusSteadyCycles it measured a
	// transient, and no service is bounded.
	Cycles float64 `json:"cycles"`
	// ServicesUS is each service's CPU time per completed request, µs;
	// Cores the cores the application's services ran on.
	ServicesUS map[string]float64 `json:"services_us"`
	Cores      int                `json:"cores"`
	// Headroom is the factor the bound allows the application's CPU per
	// request to fall by at a higher throughput (docs/method.md).
	Headroom float64 `json:"headroom"`
	// Reduction is the reduction the bounds are for (the screening's).
	Reduction string `json:"reduction"`
	// Bounded are the services not screened, their bound below the
	// minimum gain.
	Bounded []string `json:"bounded"`
	// ElapsedS is how long the census took, s.
	ElapsedS float64 `json:"elapsed_s"`
}

// VerdictNotReached: the service was not measured (the budget ran out or
// the ranking was interrupted first); like failed, it makes the ranking
// incomplete.
const VerdictNotReached = "not-reached"

// RankScreening is how rank's screening pass was made (absent for a full
// ranking, --screen=false).
type RankScreening struct {
	// Reduction is the one reduction every service was screened at (the
	// largest of the ranking's); WarmupS and DurationS the screening
	// runs' warm-up and measurement window.
	Reduction string  `json:"reduction"`
	WarmupS   float64 `json:"warmup_s"`
	DurationS float64 `json:"duration_s"`
	// Seed is the seed of the random order; Order the services in the
	// order they were screened.
	Seed  uint64   `json:"seed"`
	Order []string `json:"order"`
	// Candidates are the services whose screening interval did not rule
	// out a gain above min_gain_pct, in the order they were (or were to
	// be) confirmed.
	Candidates []string `json:"candidates"`
	// ElapsedS is how long the screening pass took.
	ElapsedS float64 `json:"elapsed_s"`
	// FullRuns is the slowdown runs a full measurement's point gets at
	// most (--max-reps), which the bar a screening must reach assumes
	// (ScreenBar).
	FullRuns int `json:"full_runs"`
	// OthersBind are the services whose screening ended at its first
	// baseline (stage bounded, verdict skipped): with the service on
	// cores of its own, the shared cores were saturated while it was
	// mostly idle, so the other services set the throughput.
	OthersBind []string `json:"others_bind,omitempty"`
}

// RankScreen is what the screening pass measured of a service that went
// on to confirmation.
type RankScreen struct {
	GainPct     float64  `json:"gain_pct"`
	GainLowPct  *float64 `json:"gain_low_pct,omitempty"`
	GainHighPct *float64 `json:"gain_high_pct,omitempty"`
	BaselineRPS float64  `json:"baseline_rps"`
}

// ScreenOf is e's screening as a confirmed entry keeps it.
func ScreenOf(e RankEntry) *RankScreen {
	s := &RankScreen{GainPct: e.GainPct, GainLowPct: e.GainLowPct, GainHighPct: e.GainHighPct}
	if e.Results != nil {
		s.BaselineRPS = e.Results.Baseline.RPS
	}
	return s
}

// RankDrift is what the ranking saw of the machine's speed moving: the
// screening's baselines (each service's measured before and after each of
// its slowdown runs) and, for each confirmed service, its
// confirmation's baseline against its screening's (the same placement,
// minutes apart).
type RankDrift struct {
	// NoisePct is the run-to-run noise of one baseline run (relative
	// standard deviation, %) pooled over the services' screening
	// baselines (each against its own mean), and Services how many
	// services' baselines it is read from.
	NoisePct float64 `json:"noise_pct"`
	Services int     `json:"services"`
	// MaxChangePct is the largest change between the first and the last
	// baseline of one service's screening, % of the first, and
	// MaxChangeService that service.
	MaxChangePct     float64 `json:"max_change_pct"`
	MaxChangeService string  `json:"max_change_service,omitempty"`
	// Shifts are the confirmed services' baselines against their
	// screening's.
	Shifts []RankShift `json:"shifts,omitempty"`
}

// CensusSteadyCycles is the fewest request cycles a census window must
// hold for its shares of the CPU to bound anything (experiment.Census).
const CensusSteadyCycles = 5

// BoundText says in words what e's census bound is, or "" where it has
// none.
func (e RankEntry) BoundText(reduction string) string {
	if e.CPUSharePct == nil || e.GainBoundPct == nil {
		return ""
	}
	return fmt.Sprintf("its %.1f%% of the application's CPU per request caps the gain of a cut of %s at %+.1f%%", *e.CPUSharePct, reduction, *e.GainBoundPct)
}

// RankShift is one confirmed service's baseline in its screening and in
// its confirmation.
type RankShift struct {
	Service    string  `json:"service"`
	ScreenRPS  float64 `json:"screen_rps"`
	ConfirmRPS float64 `json:"confirm_rps"`
	ShiftPct   float64 `json:"shift_pct"`
}

// ScreenBar is the gain (%) that e's screening interval must reach above
// for e to go on to confirmation: the smallest true gain that a full
// measurement of fullRuns slowdown runs could show as a gain, minGainPct
// plus the low half of the interval that measurement is expected to have.
// That half is the screening's own (its estimate less its low end) scaled
// by the square root of the screening's slowdown runs over fullRuns (no
// more than 1), as the noise of a mean of runs is: an interval that rules
// out a gain above the bar rules out the full measurement finding one,
// and a true gain between minGainPct and the bar would be "not shown" by
// it too. Where the entry has no interval, the bar is minGainPct.
func ScreenBar(e RankEntry, minGainPct float64, fullRuns int) float64 {
	p := LargestPoint(e.Results)
	if p == nil || e.GainLowPct == nil {
		return minGainPct
	}
	n := len(p.SlowdownRuns)
	if n == 0 {
		return minGainPct
	}
	low := max(0, e.GainPct-*e.GainLowPct)
	return minGainPct + low*math.Sqrt(float64(n)/float64(max(n, fullRuns)))
}

// PassesScreen says whether a screened entry (judged by Judge on its
// screening results) goes on to confirmation: unless its screening
// interval rules out a gain above ScreenBar. A gain shown (the low end
// above minGainPct) and a lower bound (no high end) pass; an entry
// without an interval passes where twice its standard error above its
// gain reaches past minGainPct. So does a screening whose baselines moved
// (ScreenDisturbed): it rules nothing out. Services that failed, were
// skipped or are not called do not pass.
func PassesScreen(e RankEntry, minGainPct float64, fullRuns int) bool {
	switch {
	case e.Verdict == VerdictGain:
		return true
	case e.Verdict != VerdictNoGain:
		return false
	case ScreenDisturbed(e):
		return true
	case e.GainLowPct == nil:
		return e.GainPct+2*e.GainStdErrPct > minGainPct
	}
	return e.GainHighPct == nil || *e.GainHighPct > ScreenBar(e, minGainPct, fullRuns)
}

// screenDriftPct is the relative standard deviation (%) of a screening's
// baselines above which it rules nothing out, as a predict run warns of
// a baseline that varied by more (the experiment's driftPct).
const screenDriftPct = 7

// screenNoiseLevel is the confidence with which a screening's baselines
// are found to vary beyond the noise they are judged against.
const screenNoiseLevel = 0.95

// ScreenDisturbed says that e's screening baselines, measured around its
// slowdown runs, varied by more than screenDriftPct and, where the noise
// they are judged against is known (e.ScreenNoise), by more than it: an F
// test of their variance against it at screenNoiseLevel. The machine's
// speed then moved during the screening (on the shared 2-core machine,
// another process's tests halved one baseline), so its slowdown runs may
// have been measured at another speed than the baselines they are judged
// against, and the interval, which assumes the noise of steady runs,
// may miss the gain. Without the test, steady runs at the noise the demo
// and boutique show here (4-6% pooled) cross 7% in 3-25% of screenings
// (χ² with 1-3 degrees of freedom; 12-16% at 5%), which sent
// services that gain nothing to rounds and confirmations of their own
// (docs/notes/rank-screening.md).
func ScreenDisturbed(e RankEntry) bool {
	if e.Results == nil {
		return false
	}
	runs := e.Results.Baseline.Runs
	if len(runs) < 2 {
		return false
	}
	var m, ss float64
	for _, x := range runs {
		m += x / float64(len(runs))
	}
	if m <= 0 {
		return false
	}
	for _, x := range runs {
		ss += (x - m) * (x - m)
	}
	pct := 100 * math.Sqrt(ss/float64(len(runs)-1)) / m
	if pct <= screenDriftPct {
		return false
	}
	n := e.ScreenNoise
	if n == nil || !(n.Pct > 0) || n.DOF < 1 {
		return true
	}
	crit := distuv.F{D1: float64(len(runs) - 1), D2: float64(n.DOF)}.Quantile(screenNoiseLevel)
	return (pct/n.Pct)*(pct/n.Pct) > crit
}

// Candidates lists the services of the screened entries that pass the
// screening, the most promising first (the largest screening gain; by
// name where equal), so that a budget that runs out leaves the least
// likely unconfirmed.
func Candidates(screened []RankEntry, minGainPct float64, fullRuns int) []string {
	var pass []RankEntry
	for _, e := range screened {
		if PassesScreen(e, minGainPct, fullRuns) {
			pass = append(pass, e)
		}
	}
	slices.SortStableFunc(pass, func(a, b RankEntry) int {
		if c := cmp.Compare(b.GainPct, a.GainPct); c != 0 {
			return c
		}
		return cmp.Compare(a.Service, b.Service)
	})
	out := make([]string, len(pass))
	for i, e := range pass {
		out[i] = e.Service
	}
	return out
}

// DriftOf reads the drift from the screened entries (their results'
// baseline runs, in the order measured) and the confirmed ones (with
// their screening, Screen).
func DriftOf(entries []RankEntry) *RankDrift {
	d := &RankDrift{}
	var ss float64
	dof := 0
	for _, e := range entries {
		res := e.Results
		runs := []float64(nil)
		switch {
		case e.Stage == StageScreened && res != nil:
			runs = res.Baseline.Runs
		case e.Stage == StageConfirmed && res != nil && e.Screen != nil && e.Screen.BaselineRPS > 0 && res.Baseline.RPS > 0:
			d.Shifts = append(d.Shifts, RankShift{Service: e.Service, ScreenRPS: e.Screen.BaselineRPS, ConfirmRPS: res.Baseline.RPS,
				ShiftPct: (res.Baseline.RPS/e.Screen.BaselineRPS - 1) * 100})
		}
		if len(runs) < 2 || slices.Min(runs) <= 0 {
			continue
		}
		var m float64
		for _, x := range runs {
			m += x / float64(len(runs))
		}
		for _, x := range runs {
			ss += (x/m - 1) * (x/m - 1)
		}
		dof += len(runs) - 1
		d.Services++
		if pct := (runs[len(runs)-1]/runs[0] - 1) * 100; math.Abs(pct) > math.Abs(d.MaxChangePct) {
			d.MaxChangePct, d.MaxChangeService = pct, e.Service
		}
	}
	if dof > 0 {
		d.NoisePct = 100 * math.Sqrt(ss/float64(dof))
	}
	if d.Services == 0 && len(d.Shifts) == 0 {
		return nil
	}
	return d
}

// driftWarnPct is the baseline change (%) beyond which the drift is
// warned about, where it is also beyond three times the noise.
const driftWarnPct = 7

// Text is the drift in words, for the table and the progress.
func (d *RankDrift) Text() string {
	if d == nil {
		return ""
	}
	var parts []string
	if d.Services > 0 {
		parts = append(parts, fmt.Sprintf("run-to-run noise %.1f%% over the screening baselines of %d services (largest change within one %+.1f%%, %s)", d.NoisePct, d.Services, d.MaxChangePct, d.MaxChangeService))
	}
	for _, s := range d.Shifts {
		parts = append(parts, fmt.Sprintf("%s %+.1f%% from screening to confirmation (%.0f to %.0f req/s)", s.Service, s.ShiftPct, s.ScreenRPS, s.ConfirmRPS))
	}
	return strings.Join(parts, "; ")
}

// Warning says where the baselines moved beyond the noise: the machine's
// speed drifted during the ranking; "" otherwise.
func (d *RankDrift) Warning() string {
	if d == nil {
		return ""
	}
	limit := max(driftWarnPct, 3*d.NoisePct)
	var moved []string
	for _, s := range d.Shifts {
		if math.Abs(s.ShiftPct) > limit {
			moved = append(moved, fmt.Sprintf("%s %+.0f%%", s.Service, s.ShiftPct))
		}
	}
	if math.Abs(d.MaxChangePct) > limit {
		moved = append(moved, fmt.Sprintf("%s %+.0f%% within its screening", d.MaxChangeService, d.MaxChangePct))
	}
	if len(moved) == 0 {
		return ""
	}
	return fmt.Sprintf("baseline drift: the baselines moved beyond %.0f%% (%s): the machine's speed changed during the ranking, so gains of that size are noise; stop other work on the machine", limit, strings.Join(moved, ", "))
}

// PartialText says, for a partial ranking, why and what it lacks; "" for
// one that is not partial.
func (r *Rank) PartialText() string {
	if !r.Partial {
		return ""
	}
	var unconfirmed []string
	for _, e := range r.Entries {
		if e.Stage == StageScreened && r.Screening != nil && slices.Contains(r.Screening.Candidates, e.Service) {
			unconfirmed = append(unconfirmed, e.Service)
		}
	}
	text := "the ranking is partial: " + r.PartialReason
	if len(unconfirmed) > 0 {
		text += "; candidates screened but not confirmed: " + strings.Join(unconfirmed, ", ")
	}
	if len(r.NotReached) > 0 {
		text += "; not measured: " + strings.Join(r.NotReached, ", ")
	}
	return text
}

// PointAt is the point of e's results at the ranking's reduction i of
// reductions (as typed), matched by the results' own reductions: nil
// where e's experiment did not measure it (a service that was only
// screened has the largest only).
func (e RankEntry) PointAt(reductions []string, i int) *Point {
	res := e.Results
	if res == nil || i >= len(reductions) {
		return nil
	}
	own := res.Settings.Reductions
	j := i
	if len(own) > 0 {
		j = slices.Index(own, reductions[i])
	}
	if j < 0 || j >= len(res.Points) {
		return nil
	}
	return &res.Points[j]
}

// withStage lists the services at stage st, in entry order.
func (r *Rank) withStage(st string) []string {
	var out []string
	for _, e := range r.Entries {
		if e.Stage == st {
			out = append(out, e.Service)
		}
	}
	return out
}

// orNone is the list joined with commas, or "none".
func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
