package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/model"
)

// Comparison is the outcome of Compare: every method's points against the
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

// Compare measures the same points with several pause methods on one
// deployment, against one ground truth: every repetition measures a
// baseline, every point's slowdown run with every method (in an order that
// rotates, so that drift favours none), and every point's ground truth.
// The truth is measured once for all methods, so that the methods'
// errors are paired and their differences are not the truth's noise.
// opts is as for New (Validate is implied); opts.PauseMethod is ignored.
func Compare(ctx context.Context, d *local.Deployment, opts Options, methods []pause.Method) (*Comparison, error) {
	if len(methods) == 0 {
		return nil, errors.New("no methods to compare")
	}
	opts.Validate = true
	runners := make([]*Runner, len(methods))
	for i, m := range methods {
		o := opts
		o.PauseMethod = m
		r, err := New(d, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		runners[i] = r
	}
	first := runners[0]
	o := first.opts
	perRep := 1 + len(o.Reductions)*(len(methods)+1)
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
		d       time.Duration
		sd      slowdown
		samples [][]*sample // per method
		truth   []*sample
	}
	points := make([]*point, len(o.Reductions))
	for i, red := range o.Reductions {
		dSec, err := red.Resolve(prof.u1.Seconds())
		if err != nil {
			return nil, err
		}
		dd := time.Duration(dSec * 1e9)
		b := o.Batch
		if b == 0 {
			b = chooseBatch(dd, prof.u1, prof.q1, first.opts.Connections)
		}
		pauseLen := model.PausePerRound(b, dd, prof.q1)
		if pauseLen > o.MaxPause {
			return nil, fmt.Errorf("reduction %s needs a pause of %v per round, over the hard cap %v", red.Text, pauseLen, o.MaxPause)
		}
		points[i] = &point{d: dd, sd: slowdown{batch: b, pause: pauseLen}, samples: make([][]*sample, len(methods))}
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
			for j := range methods {
				m := (j + k + rep) % len(methods)
				first.step++
				s, err := runners[m].run(ctx, &p.sd, runners[m].star(), o.Warmup, false)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", methods[m], err)
				}
				p.samples[m] = append(p.samples[m], s)
				runners[m].base = base
				pred, _ := runners[m].predict(s, p.d)
				first.progress("rep %d %s %-6s: %.0f req/s -> predicted %.0f req/s", rep+1, o.Reductions[i].Text, methods[m], s.res.Throughput, pred)
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
		Settings: map[string]any{"connections": first.opts.Connections, "repetitions": o.Repetitions, "duration_s": o.Duration.Seconds(), "placement": string(d.Placement.Mode())}}
	for m, r := range runners {
		r.base = base
		if m == 0 {
			out.Baseline = r.baselineOf(base)
		}
		mr := MethodResult{Method: string(methods[m])}
		var sq, sum float64
		n := 0
		for _, p := range points {
			pt := r.point(p.d, p.sd, p.samples[m], p.truth)
			if e := pt.ErrorPct; e != nil {
				sq += *e * *e
				sum += *e
				mr.MaxPct = max(mr.MaxPct, math.Abs(*e))
				n++
			}
			mr.Points = append(mr.Points, pt)
		}
		if n > 0 {
			mr.RMSEPct, mr.MeanPct = math.Sqrt(sq/float64(n)), sum/float64(n)
		}
		out.Methods = append(out.Methods, mr)
	}
	return out, nil
}
