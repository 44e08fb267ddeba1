// This file renders results as report.html.
//
// WriteHTML (predict and validate) and WriteRankHTML (rank) write one
// self-contained page that a browser reads offline and on a narrow screen:
// the headline answer in words, the throughput curves (the gonum/plot figure
// of Plot, inlined as SVG), for a ranking each service's gain as bars, the
// call graph, the baseline, every flag on a point explained, the warnings,
// the settings and the command that reproduces the run. Everything is inline
// (CSS in a <style>, charts as SVG, no script), and a Content-Security-Policy
// forbids the page every network request. The page is made with
// html/template from report.html.tmpl, so that every name from the user's
// spec is escaped. docs/report.md describes the page.

package report

import (
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
)

//go:embed report.html.tmpl
var reportHTMLText string

// reportTemplate renders an htmlPage.
var reportTemplate = template.Must(template.New("report.html").Parse(reportHTMLText))

// WriteHTML writes the results of slowpoke predict or validate to path as a
// self-contained HTML page, atomically (see WriteJSON). r is not modified.
func WriteHTML(path string, r *Results) error {
	if r == nil {
		return errors.New("report: no results to write as HTML")
	}
	page, err := newResultsPage(r)
	if err != nil {
		return err
	}
	return writeHTMLPage(path, page)
}

// WriteRankHTML writes the ranking of slowpoke rank to path as a
// self-contained HTML page, atomically (see WriteJSON). r is not modified.
func WriteRankHTML(path string, r *Rank) error {
	if r == nil {
		return errors.New("report: no ranking to write as HTML")
	}
	page, err := newRankPage(r)
	if err != nil {
		return err
	}
	return writeHTMLPage(path, page)
}

func writeHTMLPage(path string, page *htmlPage) error {
	return atomicfile.WriteFunc(path, 0o644, func(w io.Writer) error {
		return reportTemplate.Execute(w, page)
	})
}

// htmlPage is what report.html.tmpl renders. Everything the user named
// (app, services, spec path, host) is a plain string that the template
// escapes; only the figures are template.HTML, made by this package.
type htmlPage struct {
	Kind       string // KindPredict, KindValidate, KindRank or KindPools
	Title      string
	Created    string
	CreatedISO string
	Headline   string
	Notes      []string // sentences that qualify the headline

	Figures []htmlFigure // throughput (and error) curves
	Bars    *htmlBars    // rank: gain per service
	Details []htmlFigure // rank: each service's own curve
	Points  *htmlPoints  // predict, validate: one row per point
	Ranked  *htmlRanked  // rank: one row per service
	Pools   *htmlPools   // pools: the advice and its validation
	Latency *htmlLatency // latency: per request type
	// NoGraph leaves out the call graph, the baseline and the flags
	// (pools, latency).
	NoGraph bool

	Graph     *htmlGraph
	GraphRows []htmlGraphRow

	Baselines     []htmlBaseline
	BaselineByRow bool   // one baseline per service (rank), or per placement
	BaselineLabel string // the head of the baselines' first column ("": "Experiment of")
	Model         []htmlSetting

	Flags    []htmlFlag
	Warnings []string

	Settings     []htmlSetting
	SettingsNote string
	Placement    []htmlPlacement
	Command      string
	CommandNote  string
}

// htmlFigure is a chart drawn by gonum/plot, inlined as SVG.
type htmlFigure struct {
	Title   string
	Caption string
	SVG     template.HTML
	Open    bool // rank details: shown unfolded
}

type htmlPoints struct {
	Validate     bool
	Rows         []htmlPointRow
	RMSE, MaxAbs string
}

type htmlPointRow struct {
	Reduction, D, Slowdown, Predicted, Interval, Speedup, Spread, StdErr, Delay, Correction, True, Error string
	Flags                                                                                                []string
}

type htmlRanked struct {
	Reductions []string
	Rows       []htmlRankRow
}

type htmlRankRow struct {
	Rank                    int
	Service, Verdict, Class string
	Gain, Baseline          string
	Predicted               []string // per reduction
	Calls, CPU, Reason      string
}

type htmlBaseline struct {
	Service, RPS, Spread, Runs, P50, P99, Errors string
}

type htmlSetting struct{ Name, Value string }

type htmlPlacement struct{ Service, CPUs, Role string }

type htmlFlag struct{ Name, Meaning, Where string }

type htmlGraphRow struct{ Service, Neighbours, Calls, CPU string }

// flagOrder is the order flags are explained in: that of docs/results.md.
var flagOrder = []string{
	FlagInfeasible, FlagErrors, FlagTargetStarved, FlagPauseShortfall, FlagNeighbourUnreachable,
	FlagStopsLate, FlagMechanismCost, FlagHoldLeak, FlagSharedBound, FlagNoisy,
}

// flagMeanings explain each flag in one sentence (docs/results.md#flags):
// what happened, then what to do.
var flagMeanings = map[string]flagText{
	FlagInfeasible: {"The correction for the inserted pauses left no positive throughput in at least one repetition, so the point has no prediction (its estimate is unknown)",
		[]advice{{text: "ask for a smaller reduction"}, {text: "more connections"}, {text: "a smaller batch"}}},
	FlagErrors: {"Requests failed or got non-2xx responses during the slowdown runs, so the throughput counts failures or the failures changed the work done",
		[]advice{{text: "check the services' logs (often a client timeout inside the application)"}}},
	FlagTargetStarved: {"The target was often idle while the other services were paused, as if it still had its original cost, so the prediction is a lower bound: the optimized system does at least this",
		[]advice{{text: "give it more queued work (more connections, a smaller batch)"}}},
	FlagPauseShortfall: {"The other services were paused noticeably less than requested",
		[]advice{{text: "give the services dedicated cores", done: dedicated}, {text: "stop other load on the machine"}, {text: "prefer a larger batch"}}},
	FlagNeighbourUnreachable: {"A controller failed to forward pause rounds, or a paused service received fewer rounds than the target started, so part of the application ran at full speed",
		[]advice{{text: "look at the controllers' lines in the services' logs"}}},
	FlagStopsLate: {"The paused services' stops started well after they were due, so services sharing cores ran while the others were stopped and the slowdown is not the one the model asks for",
		[]advice{{text: "give the services more cores"}, {text: "use a larger --batch"}}},
	FlagMechanismCost: {"What pausing itself cost the paused services' cores moves the prediction by more than twice its standard error and at least 3%, so the prediction is only as good as the correction for that cost (its interval takes in the prediction without it)",
		[]advice{{text: "use --pause cores", done: pausedBy("cores")}, {text: "a larger --batch"}, {text: "more cores"}}},
	FlagHoldLeak: {"With --pause cores, the holding threads ran less than 95% of the pauses, so something else ran on the held cores and slowpoke over-predicts",
		[]advice{{text: "check the kernel's real-time throttling (sched_rt_runtime_us)"}, {text: "use --pause signal"}}},
	FlagSharedBound: {"The cores the other services share, not the target, set the throughput of this point's slowdown runs, and co-located services do less work per request in the really faster system than under pauses (fewer context switches), so the prediction as measured is low; with --pause cores, capacity runs measure those cores' capacity unslowed and the point carries it",
		[]advice{{text: "give every service cores of its own (--placement dedicated)", done: dedicated}, {text: "check it with validate"}}},
	FlagNoisy: {"The repetitions disagree: the point's standard error stayed above 3% even after the extra repetitions",
		[]advice{{text: "allow more repetitions or a longer duration"}, {text: "pin the services to dedicated cores", done: dedicated}, {text: "quieten the machine"}}},
}

// flagText is what a flag means and what can be done about it.
type flagText struct {
	what   string
	advice []advice
}

// advice is one thing to do about a flag; done says whether a run's
// settings already did it (nil: never).
type advice struct {
	text string
	done func(Settings) bool
}

func dedicated(s Settings) bool { return s.PlacementMode == "dedicated" }

func pausedBy(method string) func(Settings) bool {
	return func(s Settings) bool { return s.PauseMethod == method }
}

// FlagMeaning explains a flag in one sentence, as docs/results.md does; an
// unknown flag gets a sentence that says so.
func FlagMeaning(flag string) string { return flagMeaningFor(flag, nil) }

// flagMeaningFor explains a flag for a run with settings s: advice that
// the run already followed is left out (all of it is given for nil).
func flagMeaningFor(flag string, s *Settings) string {
	m, ok := flagMeanings[flag]
	if !ok {
		return "This flag is not known to this version of slowpoke; see docs/results.md of the version that wrote the results."
	}
	var todo []string
	for _, a := range m.advice {
		if s == nil || a.done == nil || !a.done(*s) {
			todo = append(todo, a.text)
		}
	}
	if len(todo) == 0 {
		return m.what + "."
	}
	return m.what + "; " + strings.Join(todo, ", ") + "."
}

// newResultsPage builds the page of a predict or validate run.
func newResultsPage(r *Results) (*htmlPage, error) {
	kind := r.Kind
	if kind != KindValidate {
		kind = KindPredict
	}
	target := orDash(r.Target)
	page := &htmlPage{
		Kind:  kind,
		Title: fmt.Sprintf("slowpoke %s: %s, target %s", kind, orDash(r.App), target),
	}
	page.Created, page.CreatedISO = createdAt(r.CreatedAt)
	page.Headline, page.Notes = resultsHeadline(r)
	figures, err := resultsFigures(r, kind, target)
	if err != nil {
		return nil, err
	}
	page.Figures = figures
	page.Points = pointsTable(r)

	info := map[string]graphNodeInfo{}
	var extra []string
	if r.Target != "" {
		info[r.Target] = graphNodeInfo{Known: true, C1: r.C1, U1US: r.U1US, Class: "n-target"}
		extra = []string{r.Target}
	}
	page.Graph, page.GraphRows = callGraph(r.countedGraph(), extra, info)

	page.Baselines = []htmlBaseline{baselineRow("", r.Baseline)}
	if d := r.DeployedBaseline; d != nil {
		page.BaselineByRow, page.BaselineLabel = true, "Placement"
		page.Baselines = []htmlBaseline{baselineRow("slowpoke's", r.Baseline), baselineRow(map[bool]string{false: "as deployed, before slowpoke", true: "unpinned, before slowpoke's placement"}[d.Unpinned], *d)}
	}
	page.Model = resultsModel(r, target)
	page.Flags = explainFlags(&r.Settings, func(yield func(service string, p Point)) {
		for _, p := range sortedPoints(r) {
			yield("", p)
		}
	})
	page.Warnings = slices.Clone(r.Warnings)

	page.Settings = settingsRows(r.Settings)
	page.Placement = placementRows(r.Settings.Placement, map[string]string{r.Target: "target"})
	page.Command, page.CommandNote = reproduceResults(kind, r)
	return page, nil
}

// resultsFigures draws the throughput chart of a predict or validate run
// and, when some point has a prediction error, the error chart.
func resultsFigures(r *Results, kind, target string) ([]htmlFigure, error) {
	svg, err := throughputSVG(r, target, "plot")
	if err != nil {
		return nil, err
	}
	caption := "Predicted throughput (blue circles) against the reduction of " + target +
		"'s CPU time per call, with bars over each point's 90% interval; the dashed line is the baseline, red crosses mark flagged points and red squares infeasible ones."
	if kind == KindValidate {
		caption += " Green triangles are the true throughput with the target really made cheaper."
	}
	figures := []htmlFigure{{Title: "Throughput", Caption: caption, SVG: svg}}
	if !hasErrors(r) {
		return figures, nil
	}
	ep, err := newErrorPlot(r)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	svg, err = inlineSVG(ep, "Prediction error per point")
	if err != nil {
		return nil, err
	}
	return append(figures, htmlFigure{
		Title:   "Prediction error",
		Caption: "(predicted − true) / true of every point, %: above 0, slowpoke over-predicted. Red crosses mark flagged points.",
		SVG:     svg,
	}), nil
}

// throughputSVG draws the throughput chart of r (newPlot) for inlining,
// labelled with service, the target; an error drawing it is wrapped as
// "errPrefix: ...".
func throughputSVG(r *Results, service, errPrefix string) (template.HTML, error) {
	p, err := newPlot(r)
	if err != nil {
		return "", fmt.Errorf("%s: %w", errPrefix, err)
	}
	return inlineSVG(p, "Throughput against reduction of "+service+"'s CPU time per call")
}

// resultsModel lists the model's parameters of a predict or validate run:
// the target's calls and CPU, how its rounds were triggered, its cores.
func resultsModel(r *Results, target string) []htmlSetting {
	model := []htmlSetting{
		{"Target", target},
		{"Calls per request (c1)", num3(r.C1)},
		{"CPU per call (u1)", fmt.Sprintf("%.1f µs", r.U1US)},
	}
	if r.PerRequest() {
		model[1] = htmlSetting{"Calls per request (c1)", "not counted (not instrumented): a call is one request"}
		model[2] = htmlSetting{"CPU per request", fmt.Sprintf("%.1f µs", r.U1US)}
	}
	if r.TruthC1 != nil {
		model = append(model, htmlSetting{"Calls per request, from the ground-truth knob", num3(*r.TruthC1)})
	}
	if r.Trigger != "" {
		model = append(model, htmlSetting{"Rounds", triggerText(r)})
	}
	return append(model, []htmlSetting{
		{"Cores used by the model (q1)", fmt.Sprintf("%g of %g placed", r.Q1, r.Q1Assigned)},
		{"Target's CPU use in pre-profiling", fmt.Sprintf("%.2f cores p95, %.2f mean", r.TargetCoresP95, r.TargetCoresMean)},
	}...)
}

// rankScope says which services a ranking covers.
func rankScope(services []string) string {
	if len(services) == 0 {
		return "all services"
	}
	return "services " + strings.Join(services, ", ")
}

// newRankPage builds the page of a ranking.
func newRankPage(r *Rank) (*htmlPage, error) {
	page := &htmlPage{
		Kind:          KindRank,
		Title:         fmt.Sprintf("slowpoke rank: %s, %s", orDash(r.App), rankScope(r.Services)),
		BaselineByRow: true,
	}
	page.Created, page.CreatedISO = createdAt(r.CreatedAt)
	page.Headline, page.Notes = rankHeadline(r)
	figures, err := gainFigures(r)
	if err != nil {
		return nil, err
	}
	page.Figures = figures
	page.Bars = gainBars(r)
	addRanking(page, r)
	if page.Details, err = rankDetails(r); err != nil {
		return nil, err
	}

	var settings *Settings
	for _, e := range r.Entries {
		if e.Results != nil {
			settings = &e.Results.Settings
			break
		}
	}
	page.Flags = explainFlags(settings, func(yield func(service string, p Point)) {
		for _, e := range r.Entries {
			if e.Results != nil {
				for _, p := range sortedPoints(e.Results) {
					yield(e.Service, p)
				}
			}
		}
	})
	page.Warnings = rankWarnings(r)
	settingsFrom := firstWithResults(r)
	if settingsFrom >= 0 {
		e := r.Entries[settingsFrom]
		page.Settings = settingsRows(e.Results.Settings)
		page.Settings = slices.Insert(page.Settings, 1, htmlSetting{"Elapsed", (time.Duration(r.ElapsedS * float64(time.Second))).Round(time.Second).String()})
		page.SettingsNote = "As recorded by the experiment of " + e.Service + "; every service was run in turn as the target with the same flags, so the placement below is that experiment's."
		page.Placement = placementRows(e.Results.Settings.Placement, map[string]string{e.Service: "target"})
	}
	page.Command = reproduceRank(r, settingsFrom)
	return page, nil
}

// gainFigures draws the gain chart of a ranking; none when no service has
// a feasible point.
func gainFigures(r *Rank) ([]htmlFigure, error) {
	gp, ok, err := newGainPlot(r)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	if !ok {
		return nil, nil
	}
	svg, err := inlineSVG(gp, "Predicted throughput gain of every service against the reduction of its CPU time per call")
	if err != nil {
		return nil, err
	}
	return []htmlFigure{{
		Title:   "Gain per service",
		Caption: "Predicted throughput gain over each service's baseline (%) against the reduction of that service's CPU time per call, with bars over each point's 90% interval. Lines that stay at 0 are services whose optimization buys nothing.",
		SVG:     svg,
	}}, nil
}

// addRanking fills in page's ranking table, one row per entry, the call
// graph of all the entries' neighbours, and the baseline of every entry
// with results.
func addRanking(page *htmlPage, r *Rank) {
	ranked := &htmlRanked{Reductions: slices.Clone(r.Reductions)}
	info := map[string]graphNodeInfo{}
	var extra []string
	neighbours := map[string][]string{}
	for _, e := range r.Entries {
		ranked.Rows = append(ranked.Rows, rankRow(e, r.Reductions))
		extra = append(extra, e.Service)
		ni := graphNodeInfo{Class: "n-" + verdictClass(e.Verdict)}
		if res := e.Results; res != nil {
			ni.Known, ni.C1, ni.U1US = true, res.C1, res.U1US
			for s, ns := range res.countedGraph() {
				neighbours[s] = append(neighbours[s], ns...)
			}
			page.Baselines = append(page.Baselines, baselineRow(e.Service, res.Baseline))
		}
		info[e.Service] = ni
	}
	page.Ranked = ranked
	page.Graph, page.GraphRows = callGraph(neighbours, extra, info)
}

// rankRow is e's row of the ranking table: its verdict (and stage) and
// gain and, from its results when it has them, its prediction at each of
// the ranking's reductions that it measured, its baseline, calls and CPU.
func rankRow(e RankEntry, reductions []string) htmlRankRow {
	row := htmlRankRow{
		Rank: e.Rank, Service: e.Service, Verdict: e.Verdict, Class: verdictClass(e.Verdict),
		Gain: "–", Baseline: "–", Calls: "–", CPU: "–", Reason: e.Reason,
	}
	if e.Verdict == VerdictGain || e.Verdict == VerdictNoGain {
		row.Gain = e.GainText()
	}
	if e.Stage == StageScreened || e.Stage == StageConfirmed || e.Stage == StageBounded {
		row.Verdict += " (" + e.Stage + ")"
	}
	res := e.Results
	for j := range reductions {
		cell := "–"
		if p := e.PointAt(reductions, j); p != nil && !p.Infeasible() {
			cell = rps(p.PredictedRPS)
		}
		row.Predicted = append(row.Predicted, cell)
	}
	if res != nil {
		row.Baseline = rps(res.Baseline.RPS)
		row.Calls, row.CPU = num3(res.C1), fmt.Sprintf("%.1f", res.U1US)
		if res.PerRequest() {
			row.Calls, row.CPU = "not counted", fmt.Sprintf("%.1f per request", res.U1US)
		}
	}
	return row
}

// rankDetails draws every ranked service's own throughput chart, in rank
// order, the first unfolded.
func rankDetails(r *Rank) ([]htmlFigure, error) {
	var details []htmlFigure
	for i, e := range r.Entries {
		if e.Results == nil {
			continue
		}
		svg, err := throughputSVG(e.Results, e.Service, "plot of "+e.Service)
		if err != nil {
			return nil, err
		}
		details = append(details, htmlFigure{
			Title: fmt.Sprintf("%d. %s (%s)", e.Rank, e.Service, e.Verdict),
			SVG:   svg,
			Open:  i == 0,
		})
	}
	return details, nil
}

// rankWarnings are the ranking's warnings, then each service's own that
// the ranking does not have already, prefixed with the service, once each.
func rankWarnings(r *Rank) []string {
	warnings := slices.Clone(r.Warnings)
	for _, e := range r.Entries {
		if e.Results == nil {
			continue
		}
		for _, w := range e.Results.Warnings {
			if slices.Contains(r.Warnings, w) {
				continue // the ranking's own list has it already
			}
			if w := e.Service + ": " + w; !slices.Contains(warnings, w) {
				warnings = append(warnings, w)
			}
		}
	}
	return warnings
}

// firstWithResults is the index of the first entry of r with results,
// whose settings the rank page shows, or -1.
func firstWithResults(r *Rank) int {
	return slices.IndexFunc(r.Entries, func(e RankEntry) bool { return e.Results != nil })
}

// resultsHeadline says the answer of a predict or validate run in words:
// the throughput at the largest feasible reduction, or where the gains
// stop when the shared cores bind, and what qualifies it.
func resultsHeadline(r *Results) (string, []string) {
	target := orDash(r.Target)
	ps := sortedPoints(r)
	if len(ps) == 0 {
		return "These results hold no points: nothing was predicted.", nil
	}
	best := -1
	for i, p := range ps {
		if !p.Infeasible() && finite(p.PredictedRPS) {
			best = i
		}
	}
	if best < 0 {
		return fmt.Sprintf("No reduction of %s's CPU time gave a prediction: every point is infeasible (see the flags below).", target), nil
	}
	p := ps[best]
	var headline string
	var notes []string
	if r.Plateau != nil {
		var note string
		headline, note = plateauHeadline(r, target, ps)
		notes = append(notes, note)
	} else {
		headline = gainHeadline(r, target, p)
	}
	if note := DeployedNote(r); note != "" {
		notes = append(notes, note)
	}
	if len(p.Flags) > 0 {
		notes = append(notes, fmt.Sprintf("That point is flagged (%s): read the flags below before trusting it.", strings.Join(p.Flags, ", ")))
	}
	var beyond []string
	for _, q := range ps[best+1:] {
		beyond = append(beyond, trimFloat(q.ReductionPct)+"%")
	}
	if len(beyond) > 0 {
		notes = append(notes, fmt.Sprintf("Larger reductions (%s) have no prediction.", strings.Join(beyond, ", ")))
	}
	if p.TrueRPS != nil {
		notes = append(notes, truthNote(target, p))
	}
	if r.RMSEPct != nil {
		notes = append(notes, errorNote(r))
	}
	return headline, notes
}

// gainHeadline says the throughput that p, the largest feasible reduction
// of target's CPU time, predicts, against the baseline when there is one.
func gainHeadline(r *Results, target string, p Point) string {
	less := trimFloat(p.ReductionPct) + "% less CPU per call"
	if r.PerRequest() {
		less = trimFloat(p.ReductionPct) + "% less CPU"
	} else if r.U1US > 0 {
		less += fmt.Sprintf(" (%.1f of %.1f µs)", p.ReductionUS, r.U1US)
	}
	pred, interval := rps(p.PredictedRPS), ""
	switch {
	case p.Estimate == EstimateLowerBound:
		pred, interval = "at least "+pred, " (a lower bound: the target starved during the pauses)"
	case p.Estimate == EstimateValue && p.IntervalHighRPS > 0:
		interval = fmt.Sprintf(" (90%% interval %s to %s)", rps(p.IntervalLowRPS), rps(p.IntervalHighRPS))
	}
	if b := r.Baseline.RPS; b > 0 && finite(b) {
		return fmt.Sprintf("If %s took %s, throughput would go from %s to %s req/s%s (%+.1f%%).",
			target, less, rps(b), pred, interval, (p.PredictedRPS/b-1)*100)
	}
	return fmt.Sprintf("If %s took %s, throughput would be %s req/s%s (no baseline was measured).", target, less, pred, interval)
}

// plateauHeadline says where the gains of r stop, the shared cores binding
// (r.Plateau), and the note that goes with it: from which point on (of
// ps) the points are shared-bound, and their measured predictions.
func plateauHeadline(r *Results, target string, ps []Point) (headline, note string) {
	pl := r.Plateau
	stop := fmt.Sprintf("gains stop at about %s%% less CPU per call (%.0f µs%s), beyond which %s are the limit", trimFloat(math.Round(pl.StopPct)), pl.StopUS, pl.unit(), pl.limit())
	if b := r.Baseline.RPS; b > 0 && finite(b) {
		headline = fmt.Sprintf("If %s took less CPU per call, throughput would go from %s to %s %s req/s (%+.1f%%) and no further: %s.",
			target, rps(b), pl.level(), rps(pl.CapacityRPS), (pl.CapacityRPS/b-1)*100, stop)
	} else {
		headline = fmt.Sprintf("If %s took less CPU per call, throughput would reach %s %s req/s and no further: %s.", target, pl.level(), rps(pl.CapacityRPS), stop)
	}
	var raw []string
	for _, q := range ps {
		if q.RawPredictedRPS > 0 {
			raw = append(raw, fmt.Sprintf("%s at %s%%", rps(q.RawPredictedRPS), trimFloat(q.ReductionPct)))
		}
	}
	note = fmt.Sprintf("From %s%% on the points are shared-bound: each measures the shared cores' capacity under pauses, which comes out low, so they carry the largest of those measurements", trimFloat(pl.OnsetPct))
	if v := capacityRun(ps); v > 0 {
		note = fmt.Sprintf("From %s%% on the points are shared-bound: each measures the shared cores' capacity under pauses, which comes out low, so they carry what the capacity runs measured unslowed, with the queue at those cores (%s req/s), or what the faster target alone allows where lower", trimFloat(pl.OnsetPct), rps(v))
	}
	if len(raw) > 0 {
		note += " (as measured: " + strings.Join(raw, ", ") + " req/s)"
	}
	return headline, note + "."
}

// truthNote says what the application measured with target really made
// as cheap as p (validated), and how far off p's prediction is.
func truthNote(target string, p Point) string {
	s := fmt.Sprintf("With %s really made that much cheaper, the application measured %s req/s", target, rps(*p.TrueRPS))
	if p.ErrorPct != nil {
		s += fmt.Sprintf(": the prediction is off by %+.1f%%", *p.ErrorPct)
	}
	return s + "."
}

// errorNote says the prediction error over all of r's points (validate),
// and, where shared-bound points were levelled, the error as measured.
func errorNote(r *Results) string {
	s := fmt.Sprintf("Over all points, the prediction error is %.1f%% RMSE", *r.RMSEPct)
	if r.MaxAbsErrorPct != nil {
		s += fmt.Sprintf(", %.1f%% at most", *r.MaxAbsErrorPct)
	}
	if r.RawRMSEPct != nil {
		s += fmt.Sprintf(" (as measured, before levelling the shared-bound points: %.1f%% RMSE", *r.RawRMSEPct)
		if r.RawMaxAbsErrorPct != nil {
			s += fmt.Sprintf(", %.1f%% at most", *r.RawMaxAbsErrorPct)
		}
		s += ")"
	}
	return s + "."
}

// rankHeadline says which service is the most worth optimizing, or that
// none is.
func rankHeadline(r *Rank) (string, []string) {
	if len(r.Entries) == 0 {
		return "No services were ranked.", nil
	}
	var gainers []RankEntry
	for _, e := range r.Entries {
		if e.Verdict == VerdictGain {
			gainers = append(gainers, e)
		}
	}
	var headline string
	var notes []string
	if len(gainers) > 0 {
		top := gainers[0]
		at := ""
		if pl := entryPlateau(top); pl != nil {
			at = fmt.Sprintf(", and no more: gains stop at about %s%% less CPU per call, where the shared cores become the limit", trimFloat(math.Round(pl.StopPct)))
		} else if p := LargestPoint(top.Results); p != nil {
			at = " at " + trimFloat(p.ReductionPct) + "% less CPU per call"
		}
		headline = fmt.Sprintf("%s is the most worth optimizing: %+.1f%% throughput (± %.1f)%s.", top.Service, top.GainPct, top.GainStdErrPct, at)
		if len(gainers) > 1 {
			var others []string
			for _, e := range gainers[1:] {
				others = append(others, fmt.Sprintf("%s (%+.1f%%)", e.Service, e.GainPct))
			}
			notes = append(notes, "Next: "+strings.Join(others, ", ")+".")
		}
	} else {
		headline = noGainHeadline(r)
		for _, e := range r.Entries {
			if e.Verdict == VerdictNoGain && e.Reason != "" {
				notes = append(notes, upperFirst(e.Reason)+".")
				break
			}
		}
	}
	if failed := failedOf(r); len(failed) > 0 {
		notes = append([]string{"Incomplete: " + strings.Join(failed, ", ") +
			" failed and so could not be ranked; the bottleneck may be in a service that failed (see the reasons below)."}, notes...)
	}
	if text := r.PartialText(); text != "" {
		notes = append([]string{upperFirst(text) + "."}, notes...)
	}
	if cen := r.Census; cen != nil && len(cen.Bounded) > 0 {
		notes = append(notes, fmt.Sprintf("A census run before the screening ruled out %d of %d services by their share of the application's CPU: a cut of %s could not gain them more than the minimum gain.", len(cen.Bounded), len(r.Entries), cen.Reduction))
	}
	if sc := r.Screening; sc != nil {
		notes = append(notes, fmt.Sprintf("The services were screened at %s; the candidates (%s) were confirmed at %s.", sc.Reduction, orNone(sc.Candidates), strings.Join(r.Reductions, ", ")))
	}
	for _, v := range []struct{ verdict, words string }{
		{VerdictNoGain, "No gain beyond the noise"},
		{VerdictNotCalled, "Not called by the workload"},
		{VerdictSkipped, "Skipped: a cut of it cannot gain here, by its share of the CPU or because the other services set the throughput (see the reasons below)"},
		{VerdictFailed, "No prediction (see the reasons below)"},
		{VerdictNotReached, "Not measured: the ranking stopped first"},
	} {
		var names []string
		for _, e := range r.Entries {
			if e.Verdict == v.verdict {
				names = append(names, e.Service)
			}
		}
		if len(names) > 0 {
			notes = append(notes, v.words+": "+strings.Join(names, ", ")+".")
		}
	}
	return headline, notes
}

// noGainHeadline is the headline of a ranking in which no service gains:
// where some failed, it speaks only for those measured, if any.
func noGainHeadline(r *Rank) string {
	switch {
	case len(failedOf(r)) == 0 && len(r.NotReached) == 0:
		return "No service's optimization gains more than the noise of its estimate."
	case slices.ContainsFunc(r.Entries, func(e RankEntry) bool { return e.Verdict == VerdictNoGain }):
		return "No measured service's optimization gains more than the noise of its estimate, but the ranking is incomplete."
	}
	return "The ranking is incomplete: no service could be measured."
}

// failedOf lists the services of r that failed, in rank order, from its
// entries (a ranking written before Rank.Failed existed has none there).
func failedOf(r *Rank) []string {
	var out []string
	for _, e := range r.Entries {
		if e.Verdict == VerdictFailed {
			out = append(out, e.Service)
		}
	}
	return out
}

// pointsTable lists the points of r by reduction.
func pointsTable(r *Results) *htmlPoints {
	t := &htmlPoints{Validate: r.Kind == KindValidate}
	for _, p := range sortedPoints(r) {
		row := htmlPointRow{
			Reduction: trimFloat(p.ReductionPct) + "%",
			D:         fmt.Sprintf("%.1f", p.ReductionUS),
			Slowdown:  rps(p.SlowdownRPS),
			Predicted: "unknown", Interval: "–", Speedup: "–", Spread: "–", StdErr: "–",
			Delay: delayCell(p), Correction: correctionCell(p), True: "–", Error: optional(p.ErrorPct, "%+.1f%%"),
			Flags: p.Flags,
		}
		if p.TrueRPS != nil {
			row.True = rps(*p.TrueRPS)
		}
		if !p.Infeasible() {
			row.Predicted = rps(p.PredictedRPS)
			if p.Estimate == EstimateLowerBound {
				row.Predicted = "≥ " + row.Predicted
			}
			row.Interval = IntervalText(p)
			if b := r.Baseline.RPS; b > 0 {
				row.Speedup = fmt.Sprintf("%.2f×", p.PredictedRPS/b)
			}
			row.Spread = fmt.Sprintf("%.1f%%", p.SpreadPct)
			row.StdErr = fmt.Sprintf("%.1f%%", p.StdErrPct)
		}
		t.Rows = append(t.Rows, row)
	}
	if r.RMSEPct != nil || r.MaxAbsErrorPct != nil {
		t.RMSE, t.MaxAbs = optional(r.RMSEPct, "%.1f%%"), optional(r.MaxAbsErrorPct, "%.1f%%")
	}
	return t
}

func baselineRow(service string, b Baseline) htmlBaseline {
	runs := make([]string, len(b.Runs))
	for i, x := range b.Runs {
		runs[i] = rps(x)
	}
	row := htmlBaseline{
		Service: service,
		RPS:     rps(b.RPS),
		Spread:  fmt.Sprintf("± %.1f%%", b.SpreadPct),
		Runs:    fmt.Sprintf("%d (%s)", len(b.Runs), strings.Join(runs, ", ")),
		P50:     fmt.Sprintf("%.2f ms", b.P50MS),
		P99:     fmt.Sprintf("%.2f ms", b.P99MS),
		Errors:  "none",
	}
	if len(b.Runs) == 0 {
		row.Runs = "0"
	}
	if b.Errors > 0 || b.Non2xx > 0 {
		row.Errors = fmt.Sprintf("%d failed, %d non-2xx", b.Errors, b.Non2xx)
	}
	return row
}

// explainFlags explains every flag that some point carries, in the order
// of docs/results.md, with where it was seen. points yields every point
// with its service ("" for a single experiment).
func explainFlags(s *Settings, points func(yield func(service string, p Point))) []htmlFlag {
	where := map[string][]string{}
	var order []string
	points(func(service string, p Point) {
		at := trimFloat(p.ReductionPct) + "%"
		if service != "" {
			at = service + " at " + at
		}
		for _, f := range p.Flags {
			if _, ok := where[f]; !ok {
				order = append(order, f)
			}
			if !slices.Contains(where[f], at) {
				where[f] = append(where[f], at)
			}
		}
	})
	slices.SortStableFunc(order, func(a, b string) int {
		ia, ib := slices.Index(flagOrder, a), slices.Index(flagOrder, b)
		if ia < 0 {
			ia = len(flagOrder)
		}
		if ib < 0 {
			ib = len(flagOrder)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	var out []htmlFlag
	for _, f := range order {
		out = append(out, htmlFlag{Name: f, Meaning: flagMeaningFor(f, s), Where: strings.Join(where[f], ", ")})
	}
	return out
}

func settingsRows(s Settings) []htmlSetting {
	rows := []htmlSetting{
		{"Spec", orDash(s.Spec)},
		{"Reductions", orDash(strings.Join(s.Reductions, ", "))},
		{"Connections", strconv.Itoa(s.Connections)},
		{"Warm-up", seconds(s.WarmupS)},
		{"Duration", seconds(s.DurationS)},
	}
	reps := strconv.Itoa(s.Repetitions)
	if s.MaxRepetitions > s.Repetitions {
		reps += fmt.Sprintf(" (noisy points up to %d, until their standard error is within %g%%)", s.MaxRepetitions, s.PrecisionPct)
	}
	rows = append(rows, htmlSetting{"Repetitions", reps})
	batch := "chosen per point"
	if s.Batch > 0 {
		batch = fmt.Sprintf("%d target calls per pause round", s.Batch)
	}
	rows = append(rows, htmlSetting{"Batch", batch})
	rows = append(rows, htmlSetting{"Longest pause", fmt.Sprintf("%g ms", s.MaxPauseMS)})
	method := orDash(s.PauseMethod)
	if s.PauseLeadMS > 0 {
		method += fmt.Sprintf(" (stops due %g ms after each round's trigger)", s.PauseLeadMS)
	}
	rows = append(rows, htmlSetting{"Pause method", method})
	rows = append(rows, htmlSetting{"Placement", orDash(s.PlacementMode)})
	rows = append(rows, htmlSetting{"Load generator and controllers' CPUs", orDash(cpuList(s.LoadCPUs))})
	rows = append(rows, htmlSetting{"Host", fmt.Sprintf("%s, %d CPUs", orDash(s.Host), s.NumCPU)})
	if sw := researchSwitches(s); len(sw) > 0 {
		rows = append(rows, htmlSetting{"Research switches", strings.Join(sw, " ")})
	}
	return rows
}

// researchSwitches are the flags of slowpoke bench accuracy that s records.
func researchSwitches(s Settings) []string {
	t := s.Tuning
	if t == nil {
		return nil
	}
	var out []string
	for _, sw := range []struct {
		on   bool
		flag string
	}{
		{t.GraphRounds, "--graph-rounds"},
		{t.Uncoordinated, "--uncoordinated"},
		{t.NoColocatedExtension, "--no-colocated-extension"},
		{t.NoPeerExtension, "--no-peer-extension"},
		{t.OverheadCorrection, "--overhead-correction"},
		{t.NoGrowthCorrection, "--no-growth-correction"},
		{t.NoIdleCorrection, "--no-idle-correction"},
		{t.ShortPausesOnly, "short pauses only"},
		{t.LongPauseCapMS > 0, fmt.Sprintf("long pauses capped at %g ms", t.LongPauseCapMS)},
		{t.OpenLoopRate > 0, fmt.Sprintf("open loop at %g req/s", t.OpenLoopRate)},
	} {
		if sw.on {
			out = append(out, sw.flag)
		}
	}
	return out
}

func placementRows(placement map[string][]int, roles map[string]string) []htmlPlacement {
	var out []htmlPlacement
	for _, s := range slices.Sorted(maps.Keys(placement)) {
		out = append(out, htmlPlacement{Service: s, CPUs: orDash(cpuList(placement[s])), Role: roles[s]})
	}
	return out
}

// reproduceResults returns the command line that repeats a predict or
// validate run, and a note when the run used switches it cannot repeat.
func reproduceResults(kind string, r *Results) (string, string) {
	s := r.Settings
	args := []string{"slowpoke", kind, "-f", orPlaceholder(s.Spec, "SPEC"), "--target", orPlaceholder(r.Target, "SERVICE")}
	if len(s.Reductions) > 0 {
		args = append(args, "--reduce", strings.Join(s.Reductions, ","))
	}
	args = append(args, runArgs(s)...)
	if s.Batch > 0 {
		args = append(args, "--batch", strconv.Itoa(s.Batch))
	}
	note := ""
	if sw := researchSwitches(s); len(sw) > 0 {
		note = "This run also used " + strings.Join(sw, " ") + ", which only slowpoke bench accuracy offers; the command above runs without them."
	}
	return shellJoin(args), note
}

// reproduceRank returns the command line that repeats a ranking, with the
// settings recorded by entry i's experiment (-1: none known) and the
// ranking's own (--services, --min-gain).
func reproduceRank(r *Rank, i int) string {
	var s Settings
	if i >= 0 {
		s = r.Entries[i].Results.Settings
	}
	args := []string{"slowpoke", "rank", "-f", orPlaceholder(s.Spec, "SPEC")}
	if len(r.Reductions) > 0 {
		args = append(args, "--reduce", strings.Join(r.Reductions, ","))
	}
	if len(r.Services) > 0 {
		args = append(args, "--services", strings.Join(r.Services, ","))
	}
	if r.MinGainPct > 0 {
		args = append(args, "--min-gain", strconv.FormatFloat(r.MinGainPct, 'g', -1, 64))
	}
	return shellJoin(append(args, runArgs(s)...))
}

// runArgs are the flags predict, validate and rank share, as s records
// them; those s does not record are left out.
func runArgs(s Settings) []string {
	var args []string
	if s.Repetitions > 0 {
		args = append(args, "--reps", strconv.Itoa(s.Repetitions))
	}
	if s.MaxRepetitions > 0 {
		args = append(args, "--max-reps", strconv.Itoa(s.MaxRepetitions))
	}
	if s.PrecisionPct > 0 {
		args = append(args, "--precision", strconv.FormatFloat(s.PrecisionPct, 'g', -1, 64))
	}
	if s.Connections > 0 {
		args = append(args, "--connections", strconv.Itoa(s.Connections))
	}
	if s.WarmupS > 0 {
		args = append(args, "--warmup", seconds(s.WarmupS))
	}
	if s.DurationS > 0 {
		args = append(args, "--duration", seconds(s.DurationS))
	}
	if s.MaxPauseMS > 0 {
		args = append(args, "--max-pause", seconds(s.MaxPauseMS/1000))
	}
	if s.PauseMethod != "" {
		args = append(args, "--pause", s.PauseMethod)
	}
	if s.PlacementMode != "" && s.PlacementMode != "cluster" { // a cluster's scheduler places the pods
		args = append(args, "--placement", s.PlacementMode)
	}
	return args
}

// shellJoin joins args into a command line a POSIX shell splits back into
// args: words with characters the shell would interpret are single-quoted.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:,=%+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func verdictClass(v string) string {
	switch v {
	case VerdictGain, VerdictNoGain, VerdictNotCalled, VerdictSkipped, VerdictFailed, VerdictNotReached:
		return v
	}
	return "unknown"
}

// createdAt formats t for people and for the datetime attribute.
func createdAt(t time.Time) (human, iso string) {
	if t.IsZero() {
		return "at an unknown time", ""
	}
	return t.Format("2006-01-02 15:04:05 MST"), t.Format(time.RFC3339)
}

// rps formats a throughput: whole requests from 100 req/s up, one decimal
// below.
func rps(x float64) string {
	if math.Abs(x) >= 100 || !finite(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

func num3(x float64) string { return fmt.Sprintf("%.3g", x) }

// seconds formats a duration given in seconds as Go's flags take it.
func seconds(s float64) string {
	if !finite(s) {
		return fmt.Sprint(s)
	}
	return time.Duration(math.Round(s * float64(time.Second))).String()
}

// cpuList formats CPU ids compactly: 0-3,6.
func cpuList(cpus []int) string {
	s := slices.Clone(cpus)
	slices.Sort(s)
	s = slices.Compact(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		} else {
			parts = append(parts, strconv.Itoa(s[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func orDash(s string) string { return orPlaceholder(s, "–") }

func orPlaceholder(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
