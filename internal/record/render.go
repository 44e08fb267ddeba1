package record

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// Markers of the generated section in a page.
const (
	BeginMarker = "<!-- BEGIN GENERATED: records (go test ./internal/record -run TestAccuracyPage -update) -->"
	EndMarker   = "<!-- END GENERATED: records -->"
)

// RenderAccuracy is the Markdown of the recorded runs: the coverage of
// the 90% intervals over all of them, the commands run more than once on
// one build, pooled (Repeats), then each run, newest first, with
// its machine, commit, placement and command, its points and its
// variants' totals.
func RenderAccuracy(recs []Record) string {
	var b strings.Builder
	own, other := Coverage(recs)
	fmt.Fprintf(&b, "%d recorded runs (records/).", len(recs))
	if own.With > 0 {
		fmt.Fprintf(&b, " Over all their points with a truth and an interval, where the prediction is for the placement the truth was measured in, the 90%% intervals held the truth (the mean of its runs) at %d of %d (%.0f%%).", own.Covered, own.With, 100*float64(own.Covered)/float64(own.With))
	}
	if noisy, strict, since := CoverageNoisy(recs); noisy.With > 0 {
		fmt.Fprintf(&b, " The truth is itself the mean of a few noisy runs, so an unbiased prediction's 90%% interval holds it less often than 90%%: allowing for that (each side of the interval widened, in quadrature, by the 90%% half-width of the truth's mean, its runs' spread pooled over the run's points), the intervals held it at %d of %d (%.0f%%) of the points whose truth had two runs or more (recorded since %s), against %d of %d without the allowance.", noisy.Covered, noisy.With, 100*float64(noisy.Covered)/float64(noisy.With), since.UTC().Format("2006-01-02 15:04 UTC"), strict.Covered, strict.With)
	}
	if other.With > 0 {
		all := Count{own.Covered + other.Covered, own.With + other.With}
		fmt.Fprintf(&b, " Predictions for another placement than their truth's (marked \"for another placement\": slowpoke's placement against the application's own, unpinned; the demo on one node against its truth spread over two) held it at %d of %d: an interval answers for its own placement (for the application's own, the bound is the figure to check); counted with them, %d of %d (%.0f%%).", other.Covered, other.With, all.Covered, all.With, 100*float64(all.Covered)/float64(all.With))
	}
	b.WriteString("\n")
	renderRepeats(&b, Repeats(recs))
	for i := len(recs) - 1; i >= 0; i-- {
		renderRecord(&b, &recs[i])
	}
	return b.String()
}

// renderRecord writes one run.
func renderRecord(b *strings.Builder, r *Record) {
	configs := configsOf(r)
	if len(r.Rows) == 0 && len(r.Faults) > 0 {
		configs = faultsOf(r)
	}
	if len(r.Rows) == 0 && len(r.Rankings) > 0 {
		configs = rankConfigsOf(r)
	}
	if len(r.Rows) == 0 && len(r.Attach) > 0 {
		configs = []string{"the demo attached against started"}
	}
	fmt.Fprintf(b, "\n### %s: bench %s, %s\n\n", r.Date.UTC().Format("2006-01-02 15:04 UTC"), r.Benchmark, strings.Join(configs, ", "))
	m := r.Machine
	fmt.Fprintf(b, "%s (%d CPUs", orDash(m.Host), m.CPUs)
	if m.Model != "" {
		fmt.Fprintf(b, ", %s", m.Model)
	}
	if m.Kernel != "" {
		fmt.Fprintf(b, ", kernel %s", m.Kernel)
	}
	fmt.Fprintf(b, "); commit %s; placement %s.", orDash(r.Commit), orDash(r.Placement))
	if r.Note != "" {
		fmt.Fprintf(b, " %s", r.Note)
	}
	if r.Command == "" {
		b.WriteString(" The command was not recorded.\n\n")
	} else {
		fmt.Fprintf(b, "\n\n    %s\n\n", r.Command)
	}
	if len(r.Rows) == 0 && len(r.Faults) > 0 {
		renderFaults(b, r.Faults)
		return
	}
	if len(r.Rows) == 0 && len(r.Rankings) > 0 {
		renderRankings(b, r.Rankings)
		renderChecks(b, r.Checks)
		return
	}
	if len(r.Rows) == 0 && len(r.Attach) > 0 {
		renderAttach(b, r.Attach)
		return
	}
	variants := variantsOf(r)
	multi := len(configs) > 1
	b.WriteString("|")
	if multi {
		b.WriteString(" configuration |")
	}
	b.WriteString(" d (µs) | true req/s: median of runs (mean) |")
	for _, v := range variants {
		fmt.Fprintf(b, " %s: predicted (error) | nominal delay's error | in 90%% |", v)
	}
	b.WriteString("\n|")
	cols := 2 + 3*len(variants)
	if multi {
		cols++
	}
	b.WriteString(strings.Repeat("---|", cols))
	b.WriteString("\n")
	for _, key := range pointKeys(r) {
		b.WriteString("|")
		if multi {
			fmt.Fprintf(b, " %s |", key.config)
		}
		truth := "–"
		for _, row := range r.Rows {
			if row.key() == key && row.TrueRPS > 0 {
				truth = fmt.Sprintf("%.0f", row.TrueRPS)
				if row.TrueMedianRPS > 0 && fmt.Sprintf("%.0f", row.TrueMedianRPS) != truth {
					truth = fmt.Sprintf("%.0f (mean %s)", row.TrueMedianRPS, truth)
				}
				break
			}
		}
		fmt.Fprintf(b, " %.0f | %s |", key.d, truth)
		for _, v := range variants {
			row, ok := r.row(key, v)
			if !ok {
				b.WriteString(" – | – | – |")
				continue
			}
			fmt.Fprintf(b, " %s | %s | %s |", predictedCell(row), pct(row.NominalErrorPct), coveredCell(row.Covered))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| variant | points | RMSE | nominal delay's RMSE | mean error | max \\|error\\| | 90% intervals held the truth |\n|---|---|---|---|---|---|---|\n")
	for _, s := range r.Summary {
		cov := "–"
		if s.WithInterval > 0 {
			cov = fmt.Sprintf("%d of %d", s.Covered, s.WithInterval)
		}
		nom := "–"
		if s.NominalRMSEPct != nil {
			nom = fmt.Sprintf("%.2f%%", *s.NominalRMSEPct)
		}
		if s.OtherPlacement && s.WithInterval > 0 {
			cov += " (for another placement)"
		}
		fmt.Fprintf(b, "| %s | %d | %.2f%% | %s | %+.2f%% | %.2f%% | %s |\n", s.Variant, s.Points, s.RMSEPct, nom, s.MeanPct, s.MaxAbsPct, cov)
	}
	renderSkews(b, r.Skews)
}

// renderSkews writes a record's round skews across nodes, if any.
func renderSkews(b *strings.Builder, skews []Skew) {
	if len(skews) == 0 {
		return
	}
	b.WriteString("\nRound skew across nodes (µs; from the target's node, every round of the run; longer: how much longer the node's freezes lasted, signed; frames: the freeze and thaw frames' way from the target's agent to the node's, sent to read, where measured):\n\n")
	b.WriteString("| configuration | node | rounds | unreported | freeze start p50 | p99 | thaw p50 | p99 | longer p50 | ended by its timer | refrozen | freeze frame p50 / p99 | thaw frame p50 / p99 |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	frame := func(p50, p99 float64) string {
		if p50 == 0 && p99 == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f / %.0f", p50, p99)
	}
	for _, k := range skews {
		fmt.Fprintf(b, "| %s | %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %+.0f | %d | %d | %s | %s |\n", k.Config, k.Node, k.Rounds, k.Missing,
			k.StartP50US, k.StartP99US, k.EndP50US, k.EndP99US, k.LongerP50US, k.Timed, k.Refrozen,
			frame(k.DeliverStartP50US, k.DeliverStartP99US), frame(k.DeliverEndP50US, k.DeliverEndP99US))
	}
}

// renderAttach writes bench attach's points: each side's runs, the
// pairs' differences, and whether the means are within 5%.
func renderAttach(b *strings.Builder, points []AttachPoint) {
	b.WriteString("| point | attached req/s (runs) | started req/s (runs) | attached/started −1, pair by pair | mean of the pairs | of the means | within 5% |\n|---|---|---|---|---|---|---|\n")
	runs := func(xs []float64) string {
		if len(xs) == 0 {
			return "–"
		}
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fmt.Sprintf("%.0f", x)
		}
		return strings.Join(s, ", ")
	}
	for _, p := range points {
		pairs := make([]string, len(p.Paired))
		for i, d := range p.Paired {
			pairs[i] = fmt.Sprintf("%+.1f%%", d)
		}
		within, mean, ratio := "–", "–", "–"
		if len(p.Paired) > 0 {
			mean = fmt.Sprintf("%+.1f%%", p.MeanDiffPct)
		}
		if len(p.Attached) > 0 && len(p.Started) > 0 {
			ratio = fmt.Sprintf("%+.1f%%", p.RatioPct)
			within = "no"
			if p.Within {
				within = "yes"
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", p.Point, runs(p.Attached), runs(p.Started), orDash(strings.Join(pairs, ", ")), mean, ratio, within)
	}
}

// faultsOf lists r's faults in the order they first appear.
func faultsOf(r *Record) []string {
	var out []string
	for _, f := range r.Faults {
		if !slices.Contains(out, f.Fault) {
			out = append(out, f.Fault)
		}
	}
	return out
}

// renderFaults writes a fault benchmark's trials: per fault, how many
// passed every check, how soon every pod was thawed against the bound,
// whether the run's error named the node, and one such error.
func renderFaults(b *strings.Builder, trials []Fault) {
	b.WriteString("| fault | trials | passed every check | thawed within the bound | thawed after (min / median / max) | bound | the run's error names the node or pod | application pod restarted | one trial (min-max) |\n|---|---|---|---|---|---|---|---|---|\n")
	var errs []string
	for _, name := range faultsOf(&Record{Faults: trials}) {
		var n, passed, within, named, restarted int
		var thawed, took, bounds []float64
		example := ""
		for _, f := range trials {
			if f.Fault != name {
				continue
			}
			n++
			passed += btoi(f.Passed)
			within += btoi(f.Within)
			named += btoi(f.NamesNode)
			restarted += btoi(f.Restarted)
			if f.ThawedS >= 0 {
				thawed = append(thawed, f.ThawedS)
			}
			took = append(took, f.TrialS)
			bounds = append(bounds, f.BoundS)
			if example == "" && f.RunError != "" {
				example = f.RunError
			}
		}
		thaw := "never seen"
		if len(thawed) > 0 {
			slices.Sort(thawed)
			thaw = fmt.Sprintf("%.2f / %.2f / %.2f s", thawed[0], thawed[len(thawed)/2], thawed[len(thawed)-1])
		}
		bound := fmt.Sprintf("%.1f s", slices.Max(bounds))
		if slices.Min(bounds) != slices.Max(bounds) {
			bound = fmt.Sprintf("%.1f-%.1f s", slices.Min(bounds), slices.Max(bounds))
		}
		namedCell := fmt.Sprintf("%d", named)
		if example == "" {
			namedCell = "– (the run was killed)"
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %s | %s | %d | %.0f-%.0f s |\n", name, n, passed, within, thaw, bound, namedCell, restarted, slices.Min(took), slices.Max(took))
		if example != "" {
			errs = append(errs, fmt.Sprintf("- %s: `%s`", name, strings.ReplaceAll(example, "`", "'")))
		}
	}
	if len(errs) > 0 {
		b.WriteString("\nThe run's error, first trial of each fault:\n\n")
		b.WriteString(strings.Join(errs, "\n"))
		b.WriteString("\n")
	}
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

type pointKey struct {
	config string
	d      float64
}

func (row Row) key() pointKey { return pointKey{row.Config + " (" + row.Target + ")", row.ReductionUS} }

// pointKeys lists r's points in the order they first appear.
func pointKeys(r *Record) []pointKey {
	var out []pointKey
	seen := map[pointKey]bool{}
	for _, row := range r.Rows {
		if k := row.key(); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func (r *Record) row(k pointKey, variant string) (Row, bool) {
	for _, row := range r.Rows {
		if row.key() == k && row.Variant == variant {
			return row, true
		}
	}
	return Row{}, false
}

func configsOf(r *Record) []string {
	var out []string
	for _, k := range pointKeys(r) {
		if len(out) == 0 || out[len(out)-1] != k.config {
			out = append(out, k.config)
		}
	}
	return out
}

func variantsOf(r *Record) []string {
	var out []string
	for _, s := range r.Summary {
		out = append(out, s.Variant)
	}
	return out
}

func predictedCell(row Row) string {
	if row.PredictedRPS <= 0 {
		return "unknown"
	}
	v := fmt.Sprintf("%.0f", row.PredictedRPS)
	if row.Estimate == "lower-bound" {
		v = "≥ " + v
	}
	return fmt.Sprintf("%s (%s)", v, pct(row.ErrorPct))
}

func coveredCell(c *bool) string {
	switch {
	case c == nil:
		return "–"
	case *c:
		return "yes"
	}
	return "no"
}

func pct(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%+.1f%%", *p)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// Splice replaces the generated section of page (between BeginMarker and
// EndMarker) with body; an error where the markers are missing.
func Splice(page, body string) (string, error) {
	i := strings.Index(page, BeginMarker)
	j := strings.Index(page, EndMarker)
	if i < 0 || j < i {
		return "", fmt.Errorf("the page lacks the markers %q and %q", BeginMarker, EndMarker)
	}
	return page[:i+len(BeginMarker)] + "\n\n" + body + "\n" + page[j:], nil
}

// rankConfigsOf lists a rank benchmark's configurations, in first-seen
// order.
func rankConfigsOf(r *Record) []string {
	var out []string
	for _, g := range r.Rankings {
		if !slices.Contains(out, g.Config) {
			out = append(out, g.Config)
		}
	}
	return out
}

// renderRankings writes a rank benchmark's runs: one row per ranking,
// with its time, how many services each stage took, its first place and
// the services it shows to gain, and whether they are the same services
// as the first variant's run of the same configuration and iteration
// shows (in any order), and how far each confirmed service's baseline
// moved from its screening's (records since 2026-12-02).
func renderRankings(b *strings.Builder, runs []Ranking) {
	b.WriteString("| configuration | variant | iteration | time | services | ruled out by the census | screened | confirmed | first (gain at the largest reduction, 90% interval) | planted | services shown to gain | same gains as the first variant | confirmation's baseline against the screening's |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	first := map[string]Ranking{}
	for _, g := range runs {
		key := fmt.Sprintf("%s#%d", g.Config, g.Iteration)
		ref, seen := first[key]
		if !seen {
			first[key] = g
		}
		top := "–"
		if len(g.Entries) > 0 {
			e := g.Entries[0]
			top = fmt.Sprintf("%s %+.1f%%", e.Service, e.GainPct)
			if e.GainLowPct != nil && e.GainHighPct != nil {
				top += fmt.Sprintf(" (%+.1f to %+.1f)", *e.GainLowPct, *e.GainHighPct)
			}
		}
		if g.Error != "" {
			top = "failed: " + g.Error
		}
		planted := "–"
		if g.Expected != "" {
			planted = g.Expected + ": not first"
			if len(g.Entries) > 0 && g.Entries[0].Service == g.Expected {
				planted = g.Expected + ": first"
			}
		}
		same := "–"
		if seen && g.Error == "" && ref.Error == "" {
			same = "no"
			mine, theirs := g.Gainers(), ref.Gainers()
			slices.Sort(mine)
			slices.Sort(theirs)
			if slices.Equal(mine, theirs) {
				same = "yes"
			}
		}
		elapsed := time.Duration(g.ElapsedS * float64(time.Second)).Round(time.Second).String()
		if g.Partial {
			elapsed += " (partial)"
		}
		screened := strconv.Itoa(g.Screened)
		if g.AtBaseline > 0 {
			screened += fmt.Sprintf(" (%d no further than a baseline)", g.AtBaseline)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", g.Config, g.Variant, g.Iteration, elapsed,
			g.Services, g.Bounded, screened, orDash(strings.Join(g.Confirmed, ", ")), top, planted, orDash(strings.Join(g.Gainers(), ", ")), same, shiftsOf(g.Drift))
	}
}

// shiftsOf lists each confirmed service's baseline change from its
// screening to its confirmation ("–" where none was recorded).
func shiftsOf(d *report.RankDrift) string {
	if d == nil || len(d.Shifts) == 0 {
		return "–"
	}
	parts := make([]string, len(d.Shifts))
	for i, s := range d.Shifts {
		parts[i] = fmt.Sprintf("%s %+.1f%%", s.Service, s.ShiftPct)
	}
	return strings.Join(parts, ", ")
}

// renderChecks writes a rank benchmark's checks against validate: each
// service's place and gain in the ranking beside its ground truth's, and
// how many true gains the ranking's intervals held.
func renderChecks(b *strings.Builder, checks []RankCheck) {
	if len(checks) == 0 {
		return
	}
	c0 := checks[0]
	fmt.Fprintf(b, "\nChecked against `validate` (the ground truth at %s; ranking: %s, iteration %d):\n\n", c0.Reduction, c0.Variant, c0.Iteration)
	b.WriteString("| configuration | service | place | ranking's gain (90% interval) | verdict | true gain | in the interval | validate's prediction |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	covered, truths := 0, 0
	for _, c := range checks {
		place := "not measured"
		if c.Place > 0 {
			place = fmt.Sprint(c.Place)
		}
		gain := pct(c.GainPct)
		if c.GainLowPct != nil && c.GainHighPct != nil {
			gain += fmt.Sprintf(" (%+.1f to %+.1f)", *c.GainLowPct, *c.GainHighPct)
		}
		truth, in := pct(c.TrueGainPct), "–"
		if c.Error != "" {
			truth = "failed: " + c.Error
		}
		if c.TrueGainPct != nil && c.GainLowPct != nil && c.GainHighPct != nil {
			truths++
			in = "no"
			if c.Covered() {
				covered++
				in = "yes"
			}
		}
		verdict := orDash(c.Verdict)
		if c.Stage != "" {
			verdict += " [" + c.Stage + "]"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Config, c.Service, place, gain, verdict, truth, in, pct(c.ValidateGainPct))
	}
	if truths > 0 {
		fmt.Fprintf(b, "\nThe ranking's intervals held %d of %d true gains.\n", covered, truths)
	}
}
