package report

import (
	"fmt"
	"math"
)

// deployedGainWorthPct is the gain (%) in the user's placement that a
// prediction of little or no gain must not hide: where the bound allows
// more, DeployedNote says so.
const deployedGainWorthPct = 10

// DeployedNote says, for results with a deployed baseline whose CPU use
// was measured, what the user's own placement allows at the largest
// reduction with a bound: how busy its cores were, the target's share of
// the CPU spent per request, the most throughput that reduction could
// reach there, and, where slowpoke's prediction shows a small gain that
// the bound does not rule out as large, that the answer is for slowpoke's
// placement and must be checked in the user's. "" where there is nothing
// to say.
func DeployedNote(r *Results) string {
	d := r.DeployedBaseline
	if d == nil || d.CPU == nil || d.RPS <= 0 {
		return ""
	}
	ps := sortedPoints(r)
	var p *Point
	for j := len(ps) - 1; j >= 0; j-- {
		if ps[j].DeployedBoundRPS > 0 {
			p = &ps[j]
			break
		}
	}
	if p == nil {
		return ""
	}
	c := d.CPU
	var total float64
	for _, v := range c.ServicesUS {
		total += v
	}
	target := c.ServicesUS[r.Target]
	if total <= 0 || target <= 0 {
		return ""
	}
	boundGain := (p.DeployedBoundRPS/d.RPS - 1) * 100
	// Which limit the bound is (model.DeployedBound): the cores'
	// capacity with the work cut, or the target's own time.
	c1 := r.C1
	if c1 <= 0 {
		c1 = 1
	}
	cut := p.ReductionUS * c1
	where := "where " + r.Target + "'s own time binds"
	if c.MachineUS > cut && math.Abs(float64(c.Cores)*1e6/(c.MachineUS-cut)/p.DeployedBoundRPS-1) < 1e-9 {
		where = "where the cores bind"
	}
	// What the other services spent per request, as measured at the
	// throughputs this run saw: whether it moved with the load is the
	// user's to read, not assumed.
	others := fmt.Sprintf("%.0f µs at %s req/s", total-target, rps(d.RPS))
	if r.Baseline.OthersCPUUS > 0 && r.Baseline.RPS > 0 {
		others += fmt.Sprintf("; %.0f µs at %s req/s under slowpoke's placement", r.Baseline.OthersCPUUS, rps(r.Baseline.RPS))
	}
	note := fmt.Sprintf("%s, the application ran at %s req/s with the machine's %d cores %.0f%% busy, and %s took %.0f%% of the CPU its services spent per request (%.0f of %.0f µs): "+
		"%.0f µs less of its CPU per request (the %s%% point) could raise that to at most %s req/s (%+.0f%%), %s, as long as the other services' CPU per request stays as measured here (%s).",
		upperFirst(d.DeployedWords()), rps(d.RPS), c.Cores, c.BusyPct, r.Target, 100*target/total, target, total,
		cut, trimFloat(p.ReductionPct), rps(p.DeployedBoundRPS), boundGain, where, others)
	if r.Baseline.RPS <= 0 || p.Infeasible() || p.Estimate == EstimateLowerBound {
		return note
	}
	high := p.PredictedRPS
	if p.IntervalHighRPS > 0 {
		high = p.IntervalHighRPS
	}
	predGain := (high/r.Baseline.RPS - 1) * 100
	if boundGain > deployedGainWorthPct && predGain < deployedGainWorthPct && r.Settings.PlacementMode != "keep" {
		note += fmt.Sprintf(" slowpoke's prediction (at most %+.0f%% at that point, the high end of its interval) is for its own placement, where another resource may bind: it does not rule out a gain of up to %+.0f%% in yours. Check it there (--placement keep predicts in it) before deciding against the optimization.",
			predGain, boundGain)
	}
	return note
}
