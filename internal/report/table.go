package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes r as a human-readable table: a header with the baseline
// and the target's parameters, one row per point (ordered by reduction), and
// for validate the true throughput, the error and the summary errors.
func WriteTable(w io.Writer, r *Results) error {
	ew := &errWriter{w: w}
	writeTableHeader(ew, r)
	levelled := writePointRows(ew, r)
	writeTableFooter(ew, r, levelled)
	return ew.err
}

// writeTableHeader writes the header of r's table: the app, target,
// baseline and the target's parameters aligned, then the warnings and a
// blank line.
func writeTableHeader(w io.Writer, r *Results) {
	hw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(hw, "app\t%s\n", r.App)
	fmt.Fprintf(hw, "target\t%s\n", r.Target)
	b := r.Baseline
	fmt.Fprintf(hw, "baseline\t%.1f req/s ± %.1f%% over %s%s\n",
		b.RPS, b.SpreadPct, plural(len(b.Runs), "run"), latencies(b))
	if b.Errors > 0 || b.Non2xx > 0 {
		fmt.Fprintf(hw, "\t%d errors, %d non-2xx responses\n", b.Errors, b.Non2xx)
	}
	if d := r.DeployedBaseline; d != nil {
		label, how := "as deployed", "before slowpoke placed anything"
		if d.Unpinned {
			label, how = "unpinned", "every service on every core, before slowpoke's placement"
		}
		fmt.Fprintf(hw, "%s\t%.1f req/s ± %.1f%% over %s, %s\n", label, d.RPS, d.SpreadPct, plural(len(d.Runs), "run"), how)
	}
	if !r.PerRequest() {
		fmt.Fprintf(hw, "c1\t%.3g calls to %s per request\n", r.C1, r.Target)
		fmt.Fprintf(hw, "q1\t%g cores\n", r.Q1)
		fmt.Fprintf(hw, "u1\t%.1f µs CPU per call\n", r.U1US)
	} else {
		fmt.Fprintf(hw, "q1\t%g cores\n", r.Q1)
		fmt.Fprintf(hw, "cost\t%.1f µs of %s's CPU per request (its calls are not counted)\n", r.U1US, r.Target)
	}
	if r.Trigger != "" {
		fmt.Fprintf(hw, "trigger\t%s\n", triggerText(r))
	}
	hw.Flush()
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	fmt.Fprintln(w)
}

// writePointRows writes the rows of r's points, ordered by reduction, under
// their column heads, and returns the levelled points' measured
// predictions ("60% 1289.0"), which the footer lists.
func writePointRows(w io.Writer, r *Results) (levelled []string) {
	validate := r.Kind == KindValidate
	// Numbers read best right-aligned; flags, the last cell, stay ragged.
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	cols := []string{"reduction", "d (µs)", "slowdown req/s", "predicted req/s", "90% interval", "speedup", "spread", "delay asked/got (µs)", "corr. (µs)"}
	if validate {
		cols = append(cols, "true req/s", "error")
	}
	fmt.Fprintf(tw, "%s\t  flags\n", strings.Join(cols, "\t"))
	for _, p := range sortedPoints(r) {
		row, raw := pointCells(p, r.Baseline.RPS)
		if raw != "" {
			levelled = append(levelled, raw)
		}
		if validate {
			row = append(row, optional(p.TrueRPS, "%.1f"), optional(p.ErrorPct, "%+.1f%%"))
		}
		flags := "-"
		if len(p.Flags) > 0 {
			flags = strings.Join(p.Flags, ",")
		}
		fmt.Fprintf(tw, "%s\t  %s\n", strings.Join(row, "\t"), flags)
	}
	tw.Flush()
	return levelled
}

// pointCells are p's cells of the table up to its spread, its speedup
// against baseRPS; raw is its measured prediction where it was levelled
// (its prediction then carries a *), or "".
func pointCells(p Point, baseRPS float64) (row []string, raw string) {
	row = []string{
		trimFloat(p.ReductionPct) + "%",
		fmt.Sprintf("%.1f", p.ReductionUS),
		fmt.Sprintf("%.1f", p.SlowdownRPS),
	}
	if p.Infeasible() {
		return append(row, "unknown", "-", "-", "-", delayCell(p), correctionCell(p)), ""
	}
	speedup := "-"
	if baseRPS > 0 {
		speedup = fmt.Sprintf("%.2fx", p.PredictedRPS/baseRPS)
	}
	pred := fmt.Sprintf("%.1f", p.PredictedRPS)
	if p.Estimate == EstimateLowerBound {
		pred = ">= " + pred
	}
	if p.RawPredictedRPS > 0 {
		pred += "*"
		raw = fmt.Sprintf("%s%% %.1f", trimFloat(p.ReductionPct), p.RawPredictedRPS)
	}
	return append(row, pred, IntervalText(p), speedup, fmt.Sprintf("%.1f%%", p.SpreadPct), delayCell(p), correctionCell(p)), raw
}

// correctionCell is the time per request the growth and idle corrections took off
// p's slowdown runs before predicting (overhead_us), "-" for none.
func correctionCell(p Point) string {
	if p.OverheadUS <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", p.OverheadUS)
}

// IntervalText is p's 90% interval in words: "1810-2050", ">= 1810" for
// a lower bound, "-" where it has none.
func IntervalText(p Point) string {
	switch {
	case p.Estimate == "" || p.Estimate == EstimateUnknown:
		return "-"
	case p.IntervalHighRPS <= 0:
		return fmt.Sprintf(">= %.0f", p.IntervalLowRPS)
	}
	return fmt.Sprintf("%.0f-%.0f", p.IntervalLowRPS, p.IntervalHighRPS)
}

// delayCell is the delay per request p's pauses were asked to insert and
// what they inserted, the one its prediction used in brackets ("mixed"
// where its runs used both).
func delayCell(p Point) string {
	if p.DelayNominalUS <= 0 {
		return "-"
	}
	asked, got := fmt.Sprintf("%.0f", p.DelayNominalUS), "?"
	if p.DelayMeasuredUS > 0 {
		got = fmt.Sprintf("%.0f", p.DelayMeasuredUS)
	}
	switch p.DelayUsed {
	case DelayNominal:
		asked = "[" + asked + "]"
	case DelayMeasured:
		got = "[" + got + "]"
	case DelayMixed:
		return asked + "/" + got + " mixed"
	case DelayPool:
		return asked + "/" + got + " pool"
	}
	return asked + "/" + got
}

// writeTableFooter writes what follows the rows of r's table: where the
// gains stop, the levelled points' measured predictions, and for validate
// the summary errors.
func writeTableFooter(w io.Writer, r *Results, levelled []string) {
	if r.Plateau != nil {
		fmt.Fprintf(w, "\n%s.\n", upperFirst(r.Plateau.Describe()))
	}
	if note := DeployedNote(r); note != "" {
		fmt.Fprintf(w, "\n%s\n", note)
	}
	if hasDelays(r) {
		fmt.Fprintln(w, "\ndelay asked/got: pause per request the model asks of the other services (d·c1/q1) and what the pauses inserted, in brackets the one the prediction took off; corr.: what the pauses' own cost was corrected by, per request (docs/results.md)")
		if hasPool(r) {
			fmt.Fprintln(w, "pool: nothing was pinned and the cores were saturated: the prediction took off d·c1 spread over all the cores, and corr. is every process's extra work and idling per request (docs/method.md)")
		}
	}
	if r.ArmedCostPct != nil && r.ArmedNoisePct != nil {
		fmt.Fprintf(w, "armed, no pause (the 0%% point): %+.1f%% against the baseline (noise ± %.1f%%)\n", *r.ArmedCostPct, *r.ArmedNoisePct)
	}
	if r.Coverage != nil {
		fmt.Fprintf(w, "90%% intervals held the truth at %d of %d points\n", r.Coverage.Covered, r.Coverage.Points)
	}
	if len(levelled) > 0 {
		how := "shared-bound, levelled to the shared cores' capacity"
		if v := capacityRun(r.Points); v > 0 {
			how = fmt.Sprintf("raised to the shared cores' capacity (the capacity runs measured %.0f req/s unslowed, with the queue at those cores; docs/method.md)", v)
		}
		fmt.Fprintf(w, "* %s; as measured (raw_predicted_rps): %s\n", how, strings.Join(levelled, ", "))
	}
	if r.RMSEPct != nil || r.MaxAbsErrorPct != nil {
		fmt.Fprintf(w, "\nRMSE %s, max |error| %s", optional(r.RMSEPct, "%.1f%%"), optional(r.MaxAbsErrorPct, "%.1f%%"))
		if r.RawRMSEPct != nil {
			fmt.Fprintf(w, " (as measured, before levelling: RMSE %s, max |error| %s)", optional(r.RawRMSEPct, "%.1f%%"), optional(r.RawMaxAbsErrorPct, "%.1f%%"))
		}
		fmt.Fprintln(w)
	}
}

// hasPool says whether any of r's points read the cores as one pool.
func hasPool(r *Results) bool {
	for _, p := range r.Points {
		if p.DelayUsed == DelayPool {
			return true
		}
	}
	return false
}

// hasDelays says whether any of r's points paused.
func hasDelays(r *Results) bool {
	for _, p := range r.Points {
		if p.DelayNominalUS > 0 {
			return true
		}
	}
	return false
}

func latencies(b Baseline) string {
	if b.P50MS == 0 && b.P99MS == 0 {
		return ""
	}
	return fmt.Sprintf(", latency p50 %.2f ms, p99 %.2f ms", b.P50MS, b.P99MS)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func optional(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

// trimFloat formats with at most two decimals and no trailing zeros: 10, 12.5.
func trimFloat(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// errWriter remembers the first write error so the rendering code can stay
// linear; tabwriter would otherwise hide it until Flush.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err == nil {
		// io.Writer promises an error whenever n < len(p).
		_, e.err = e.w.Write(p)
	}
	return len(p), e.err
}

// triggerText says in words what the target's rounds followed.
func triggerText(r *Results) string {
	switch {
	case r.Trigger == "cpu" && !r.CallsCounted:
		return "rounds followed " + r.Target + "'s CPU time (it is not instrumented)"
	case r.Trigger == "cpu" && r.CallsFrom == "spans":
		return "rounds followed " + r.Target + "'s CPU time; its calls were counted from its OpenTelemetry spans"
	case r.Trigger == "cpu":
		return "rounds followed " + r.Target + "'s CPU time (--trigger cpu)"
	}
	return "rounds followed " + r.Target + "'s calls, counted by its instrumentation"
}

// capacityRun is the shared cores' capacity the capacity runs measured
// (diagnostics.capacity_rps) where a raised point carries it, else 0.
func capacityRun(ps []Point) float64 {
	for _, p := range ps {
		if p.RawPredictedRPS > 0 && p.Diagnostics != nil && p.Diagnostics.CapacityRPS > 0 {
			return p.Diagnostics.CapacityRPS
		}
	}
	return 0
}
