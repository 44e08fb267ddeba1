package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Plateau is where a predicted curve stops rising: from some reduction on,
// the cores the other services share, not the target, set the throughput
// (the points there are flagged shared-bound), and making the target
// cheaper gains nothing more.
type Plateau struct {
	// OnsetPct and OnsetUS are the smallest reduction whose slowdown runs
	// the shared cores bound.
	OnsetPct float64 `json:"onset_pct"`
	OnsetUS  float64 `json:"onset_us"`
	// StopPct and StopUS are where the gains stop, estimated: the
	// reduction at which the target, made cheaper along the model's curve
	// from the last point it bound (or from the baseline), reaches
	// CapacityRPS; between that point and the onset.
	StopPct float64 `json:"stop_pct"`
	StopUS  float64 `json:"stop_us"`
	// CapacityRPS is the shared cores' capacity, at least: the largest
	// prediction of the shared-bound points, each of which measures it
	// under pauses and comes out low, or of a point at a smaller
	// reduction where that is higher (the level the curve ends on).
	CapacityRPS float64 `json:"capacity_rps"`
	// Unslowed says that CapacityRPS is the capacity runs' estimate (the
	// shared cores measured unslowed, with the queue at them), which may
	// be above or below the truth, rather than a measurement under pauses,
	// which is low: "about", not "at least".
	Unslowed bool `json:"unslowed,omitempty"`
	// Shared are the services on the shared cores.
	Shared []string `json:"shared,omitempty"`
	// PerRequest: the target's calls were not counted, so OnsetUS and
	// StopUS are of its CPU per request, not per call.
	PerRequest bool `json:"per_request,omitempty"`
}

// LevelSharedBound makes the curve of ps never fall where the shared cores
// bind. Once they set the throughput, the model's throughput is their
// capacity, which does not depend on the reduction; each shared-bound
// point measures it under pauses, and pausing makes the co-located
// services do more work per request than the really faster system does,
// so every such measurement is low. The capacity is taken as the largest
// of them, and every feasible shared-bound point carries it, or the
// largest prediction at a smaller reduction where that is higher. Points
// not flagged shared-bound, and infeasible ones, are left alone.
//
// A changed point keeps what was measured in RawPredictedRPS (and, for
// validate, RawErrorPct); its PredictedRPS, StdErrPct and ErrorPct become
// those of the value it carries. LevelSharedBound returns the index in ps
// of the shared-bound point with the smallest reduction (the onset), the
// largest value a shared-bound point carries (the capacity, at least),
// and whether any point is shared-bound; ps may be in any order.
func LevelSharedBound(ps []Point) (onset int, capacity float64, ok bool) {
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(ps[a].ReductionPct, ps[b].ReductionPct)
	})
	bound := func(p *Point) bool {
		return p.ReductionUS > 0 && !p.Infeasible() && slices.Contains(p.Flags, FlagSharedBound)
	}
	onset, src := -1, -1
	for _, i := range order {
		if p := &ps[i]; bound(p) {
			if onset < 0 {
				onset = i
			}
			if src < 0 || p.PredictedRPS > ps[src].PredictedRPS {
				src = i
			}
		}
	}
	if onset < 0 {
		return -1, 0, false
	}
	measured := ps[src].PredictedRPS
	// The largest prediction so far along the curve, and whose it is.
	top, topSE := 0.0, 0.0
	for _, i := range order {
		p := &ps[i]
		if p.Infeasible() {
			continue
		}
		if bound(p) {
			v, se := measured, ps[src].StdErrPct
			if top > v {
				v, se = top, topSE
			}
			capacity = max(capacity, v)
			if v != p.PredictedRPS {
				widenTo(p, v, &ps[src])
				// A point raised before (to the capacity run's
				// capacity) keeps what was measured.
				if p.RawPredictedRPS == 0 {
					p.RawPredictedRPS = p.PredictedRPS
				}
				p.PredictedRPS, p.StdErrPct = v, se
				if p.ErrorPct != nil && p.TrueRPS != nil && *p.TrueRPS > 0 {
					if p.RawErrorPct == nil {
						raw := *p.ErrorPct
						p.RawErrorPct = &raw
					}
					e := (v - *p.TrueRPS) / *p.TrueRPS * 100
					p.ErrorPct = &e
				}
			}
		}
		if p.PredictedRPS > top {
			top, topSE = p.PredictedRPS, p.StdErrPct
		}
	}
	return onset, capacity, true
}

// ApplyPlateau levels r's shared-bound points (LevelSharedBound), says
// where the gains stop in r.Plateau (nil unless the feasible point with
// the largest reduction is shared-bound: the curve ends on the plateau),
// and, for validate, recomputes the RMSE and the largest error, keeping
// the measured curve's in RawRMSEPct and RawMaxAbsErrorPct when they
// differ.
func ApplyPlateau(r *Results) {
	r.Plateau = nil
	onset, capacity, ok := LevelSharedBound(r.Points)
	if !ok {
		recomputeErrors(r) // points raised to the capacity run's
		return
	}
	o := r.Points[onset]
	if last := lastFeasible(r.Points); last != nil && slices.Contains(last.Flags, FlagSharedBound) {
		r.Plateau = plateauOf(r, o, capacity)
		if v := capacityRun(r.Points); v > 0 && capacity <= v*(1+1e-9) {
			r.Plateau.Unslowed = true
		}
	}
	recomputeErrors(r)
}

// lastFeasible returns the feasible point with the largest reduction, or nil.
func lastFeasible(ps []Point) *Point {
	var last *Point
	for i := range ps {
		if p := &ps[i]; !p.Infeasible() && (last == nil || p.ReductionPct >= last.ReductionPct) {
			last = p
		}
	}
	return last
}

// plateauOf says where the gains stop, given the onset point o and the
// shared cores' capacity.
func plateauOf(r *Results, o Point, capacity float64) *Plateau {
	pl := &Plateau{OnsetPct: o.ReductionPct, OnsetUS: o.ReductionUS, CapacityRPS: capacity, Shared: sharedServices(r),
		PerRequest: r.PerRequest()}
	// The target-bound point just before the onset (the baseline, at no
	// reduction, where there is none): along the model's curve,
	// 1/t(d) = 1/t(a) - (d-a)·c1/q1, the target reaches the capacity at
	// d = a + (q1/c1)·(1/t(a) - 1/capacity).
	aUS, aRPS := 0.0, r.Baseline.RPS
	for _, p := range r.Points {
		if p.ReductionUS < o.ReductionUS && p.ReductionUS >= aUS && !p.Infeasible() && !slices.Contains(p.Flags, FlagSharedBound) {
			aUS, aRPS = p.ReductionUS, p.PredictedRPS
		}
	}
	stop := o.ReductionUS
	if r.C1 > 0 && r.Q1 > 0 && aRPS > 0 {
		stop = aUS + r.Q1/r.C1*(1/aRPS-1/capacity)*1e6
		stop = min(max(stop, aUS), o.ReductionUS)
	}
	pl.StopUS = stop
	pl.StopPct = o.ReductionPct
	if r.U1US > 0 {
		pl.StopPct = 100 * stop / r.U1US
	}
	return pl
}

// recomputeErrors sets r's RMSE and largest error from its points' errors
// and, where a point was levelled, the measured curve's beside them.
func recomputeErrors(r *Results) {
	var sq, raw, maxAbs, rawMax float64
	n, changed := 0, false
	for _, p := range r.Points {
		if p.ErrorPct == nil {
			continue
		}
		e, re := *p.ErrorPct, *p.ErrorPct
		if p.RawErrorPct != nil {
			re, changed = *p.RawErrorPct, true
		}
		sq, raw = sq+e*e, raw+re*re
		maxAbs, rawMax = max(maxAbs, math.Abs(e)), max(rawMax, math.Abs(re))
		n++
	}
	if n == 0 || !changed {
		return
	}
	rmse, rawRMSE := math.Sqrt(sq/float64(n)), math.Sqrt(raw/float64(n))
	r.RMSEPct, r.MaxAbsErrorPct = &rmse, &maxAbs
	r.RawRMSEPct, r.RawMaxAbsErrorPct = &rawRMSE, &rawMax
}

// sharedServices lists the services other than the target, which share
// the cores that are not the target's.
func sharedServices(r *Results) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.Settings.Placement)) {
		if name != r.Target {
			out = append(out, name)
		}
	}
	return out
}

// Describe says in words where the gains stop, for a table or a headline:
// "gains stop at about 41% (432 µs): beyond it the cores shared by a, b
// are the limit, at least 2008 req/s".
func (pl *Plateau) Describe() string {
	return fmt.Sprintf("gains stop at about %s%% (%.0f µs%s): beyond it %s are the limit, %s %s req/s",
		trimFloat(math.Round(pl.StopPct)), pl.StopUS, pl.unit(), pl.limit(), pl.level(), rps(pl.CapacityRPS))
}

// level says how CapacityRPS bounds the truth: "at least" where it was
// measured under pauses, "about" where the capacity runs estimated it.
func (pl *Plateau) level() string {
	if pl.Unslowed {
		return "about"
	}
	return "at least"
}

// limit names what binds beyond the plateau.
func (pl *Plateau) limit() string {
	if len(pl.Shared) > 0 {
		return "the cores shared by " + strings.Join(pl.Shared, ", ")
	}
	return "the cores the other services share"
}

// unit qualifies the plateau's µs where they are per request.
func (pl *Plateau) unit() string {
	if pl.PerRequest {
		return " per request"
	}
	return ""
}

// widenTo widens p's interval to take in v, the value p is levelled to,
// with the relative interval of src, the point v was measured at; a
// point's interval then covers both what it measured and what it carries.
func widenTo(p *Point, v float64, src *Point) {
	if src.PredictedRPS <= 0 || p.Estimate == EstimateUnknown {
		return
	}
	lo, hi := v, v
	if src.IntervalLowRPS > 0 {
		lo = v * src.IntervalLowRPS / src.PredictedRPS
	}
	if src.IntervalHighRPS > 0 {
		hi = v * src.IntervalHighRPS / src.PredictedRPS
	}
	if p.IntervalLowRPS == 0 || lo < p.IntervalLowRPS {
		p.IntervalLowRPS = lo
	}
	if p.IntervalHighRPS > 0 && hi > p.IntervalHighRPS {
		p.IntervalHighRPS = hi
	}
}
