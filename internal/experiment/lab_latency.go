//go:build lab

package experiment

import (
	"context"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/load"
)

// LatencyOverhead measures what taking part in a latency what-if costs
// when nothing is sped up: the p50 (ms) of the whole workload in open loop
// at DefaultRateShare of the saturating rate (or o.Rate), alternately with
// every service out of the what-if and in it at a delay of 0, reps times
// each, in the order out-in, in-out, out-in, ... Only o.Rate, o.Connections, o.Warmup, o.Duration and o.Progress
// are used; o.Target must name a service that does CPU work.
func LatencyOverhead(ctx context.Context, d backend.Backend, o LatencyOptions, reps int) (off, on []float64, rate float64, err error) {
	var dur time.Duration
	workloadDefaults(d.Spec(), &o.Connections, &o.Warmup, &dur)
	if o.Duration <= 0 {
		o.Duration = dur
	}
	mix, err := mixOf(d.Spec())
	if err != nil {
		return nil, nil, 0, err
	}
	r := &latencyRun{d: d, s: d.Spec(), o: o, mix: mix, stepper: stepper{w: o.Progress, start: time.Now(), total: 1 + 2*reps, step: 1}}
	if r.store, err = createStore(d); err != nil {
		return nil, nil, 0, err
	}
	defer r.end()
	r.progress("saturation")
	sat, err := r.saturation(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	rate = o.Rate
	if rate == 0 {
		rate = DefaultRateShare * sat.rps
	}
	p50 := func() (float64, error) {
		res, err := load.RunOpen(ctx, mix, rate, load.WithWarmup(o.Warmup), load.WithDuration(o.Duration))
		if err != nil {
			return 0, err
		}
		return float64(res.Latency.P50) / 1e6, nil
	}
	for i := range reps {
		// ABBA order: a drift within a pair does not favour either.
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, in := range order {
			r.step++
			r.progress("repetition %d, %s the what-if", i+1, map[bool]string{false: "out of", true: "in"}[in])
			if in {
				err = r.setAll(0)
			} else {
				err = r.leaveAll()
			}
			if err != nil {
				return nil, nil, 0, err
			}
			v, err := p50()
			if err != nil {
				return nil, nil, 0, err
			}
			if in {
				on = append(on, v)
			} else {
				off = append(off, v)
			}
		}
	}
	return off, on, rate, nil
}
