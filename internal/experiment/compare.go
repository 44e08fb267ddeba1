package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/model"
)

// Variant is one way of making the slowdown runs that Compare measures.
type Variant struct {
	Name   string
	Method pause.Method
	Batch  int // 0: chosen per point
	// PauseCap is the longest pause a chosen batch may make (0: the
	// default, 4 ms).
	PauseCap time.Duration
	// NoGrowthCorrection and ShortPausesOnly as in Tuning.
	NoGrowthCorrection bool
	ShortPausesOnly    bool
	// LongPauseCap as in Tuning.
	LongPauseCap time.Duration
	// Trigger as in Options ("": auto).
	Trigger string
}

// Comparison is the outcome of Compare: every variant's points against the
// same ground truth.
type Comparison struct {
	App      string          `json:"app"`
	Target   string          `json:"target"`
	Baseline report.Baseline `json:"baseline"`
	C1       float64         `json:"c1"`
	U1US     float64         `json:"u1_us"`
	Methods  []MethodResult  `json:"methods"`
	Settings map[string]any  `json:"settings"`
}

// MethodResult is one method's points, their errors against the shared
// truth, and its RMSE.
type MethodResult struct {
	Method  string         `json:"method"`
	Points  []report.Point `json:"points"`
	RMSEPct float64        `json:"rmse_pct"`
	MaxPct  float64        `json:"max_abs_error_pct"`
	MeanPct float64        `json:"mean_error_pct"`
}

// Compare measures the same points with several variants (pause methods,
// batch sizes) on one deployment, against one ground truth: every
// repetition measures a baseline, every point's slowdown run with every
// variant (in an order that rotates, so that drift favours none), and
// every point's ground truth. The truth is measured once for all
// variants, so that their errors are paired and their differences are
// not the truth's noise. opts is as for New (Validate is implied); the
// variants set PauseMethod, Batch and NoGrowthCorrection.
func Compare(ctx context.Context, d backend.Backend, opts Options, variants []Variant) (*Comparison, error) {
	if len(variants) == 0 {
		return nil, errors.New("no variants to compare")
	}
	opts.Validate = true
	runners := make([]*Runner, len(variants))
	for i, v := range variants {
		o := opts
		o.PauseMethod, o.Batch, o.Tuning.NoGrowthCorrection, o.Tuning.ShortPausesOnly, o.Tuning.LongPauseCap = v.Method, v.Batch, v.NoGrowthCorrection, v.ShortPausesOnly, v.LongPauseCap
		o.Trigger = v.Trigger
		r, err := New(d, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Name, err)
		}
		if err := r.resolveTrigger(); err != nil {
			return nil, fmt.Errorf("%s: %w", v.Name, err)
		}
		if !r.counted {
			// The shared truth is per call of the knob.
			return nil, fmt.Errorf("comparing methods needs the target's calls counted: %q is not instrumented", o.Target)
		}
		runners[i] = r
	}
	first := runners[0]
	o := first.opts
	perRep := 1 + len(o.Reductions)*(len(variants)+1)
	first.steps = o.Repetitions * perRep
	first.start = time.Now()
	if o.AutoConnections {
		n, err := first.chooseConnections(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range runners {
			r.opts.Connections = n
		}
	}
	first.step = 1
	first.progress("pre-profiling: baseline with %d connections", first.opts.Connections)
	pre, err := first.run(ctx, nil, nil, 2*o.Warmup, true)
	if err != nil {
		return nil, err
	}
	prof, err := first.profile(pre)
	if err != nil {
		return nil, err
	}
	base := []*sample{pre}
	type point struct {
		d     time.Duration
		runs  []pointRuns // per variant
		truth []*sample
	}
	points := make([]*point, len(o.Reductions))
	for i, red := range o.Reductions {
		dSec, err := red.Resolve(prof.u1.Seconds())
		if err != nil {
			return nil, err
		}
		dd := time.Duration(dSec * 1e9)
		p := &point{d: dd}
		for _, v := range variants {
			b := v.Batch
			if b == 0 {
				b = chooseBatch(dd, prof.u1, prof.q1, first.opts.Connections, v.PauseCap)
			}
			pauseLen := model.PausePerRound(b, dd, prof.q1)
			if pauseLen > o.MaxPause {
				return nil, fmt.Errorf("%s: reduction %s needs a pause of %v per round, over the hard cap %v", v.Name, red.Text, pauseLen, o.MaxPause)
			}
			p.runs = append(p.runs, pointRuns{sd: slowdown{batch: b, pause: pauseLen}})
		}
		points[i] = p
	}
	for _, r := range runners {
		r.prof = prof
	}
	for rep := 0; rep < o.Repetitions; rep++ {
		if rep > 0 {
			first.step++
			s, err := first.run(ctx, nil, nil, o.Warmup, false)
			if err != nil {
				return nil, err
			}
			base = append(base, s)
		}
		order := make([]int, len(points))
		for i := range order {
			order[i] = i
		}
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for k, i := range order {
			p := points[i]
			for j := range variants {
				m := (j + k + rep) % len(variants)
				first.step++
				pr := &p.runs[m]
				s, err := runners[m].slowRun(ctx, pr, p.d, runners[m].star(), func(_ slowdown, s *sample) {
					first.steps++
					first.progress("rep %d %s %-8s: bound by the shared cores (%.0f req/s); measuring it with pauses of %v every %d calls", rep+1, o.Reductions[i].Text, variants[m].Name, s.res.Throughput, pr.sd.pause.Round(time.Microsecond), pr.sd.batch)
					first.step++
				})
				if err != nil {
					return nil, fmt.Errorf("%s: %w", variants[m].Name, err)
				}
				runners[m].base = base
				pred, _ := runners[m].predict(s, p.d)
				first.progress("rep %d %s %-8s: %.0f req/s -> predicted %.0f req/s", rep+1, o.Reductions[i].Text, variants[m].Name, s.res.Throughput, pred)
			}
		}
		for _, i := range order {
			first.step++
			ts, err := first.truth(ctx, points[i].d)
			if err != nil {
				return nil, err
			}
			points[i].truth = append(points[i].truth, ts)
			first.progress("rep %d %s ground truth: %.0f req/s", rep+1, o.Reductions[i].Text, ts.res.Throughput)
		}
		if err := first.restartTarget(ctx, 0); err != nil {
			return nil, err
		}
	}
	out := &Comparison{App: first.spec.Name, Target: o.Target, C1: prof.c1, U1US: prof.u1.Seconds() * 1e6,
		Settings: map[string]any{"connections": first.opts.Connections, "repetitions": o.Repetitions, "duration_s": o.Duration.Seconds(), "placement": string(d.Placement().Mode())}}
	for m, r := range runners {
		r.base = base
		if m == 0 {
			out.Baseline = r.baselineOf(base)
		}
		mr := MethodResult{Method: variants[m].Name}
		var sq, sum float64
		n := 0
		for _, p := range points {
			mr.Points = append(mr.Points, r.point(p.d, &p.runs[m], p.truth))
		}
		report.LevelSharedBound(mr.Points)
		for _, pt := range mr.Points {
			if e := pt.ErrorPct; e != nil {
				sq += *e * *e
				sum += *e
				mr.MaxPct = max(mr.MaxPct, math.Abs(*e))
				n++
			}
		}
		if n > 0 {
			mr.RMSEPct, mr.MeanPct = math.Sqrt(sq/float64(n)), sum/float64(n)
		}
		out.Methods = append(out.Methods, mr)
	}
	return out, nil
}
