package experiment

import (
	"context"
	"time"
)

// Connection counts tried by chooseConnections, and when to stop.
var connectionSteps = []int{8, 16, 32, 64, 128, 256, 512}

const (
	saturationGain = 0.03 // a doubling that gains less than this has saturated
	probeDuration  = 1500 * time.Millisecond
	probeWarmup    = 500 * time.Millisecond
)

// chooseConnections finds the smallest closed-loop connection count that
// saturates the application: it doubles the count until throughput stops
// growing by more than saturationGain, and keeps the count before the last
// doubling. The model assumes a saturated bottleneck; more connections than
// that only lengthen latency, so each measurement window spans fewer
// request cycles and is noisier, and they add load-generator work next to
// the paused services. The count is then fixed for every phase.
func (r *Runner) chooseConnections(ctx context.Context) (int, error) {
	saved := r.opts
	defer func() { r.opts = saved }()
	r.opts.Warmup, r.opts.Duration = probeWarmup, probeDuration
	best, bestN := 0.0, connectionSteps[0]
	for _, n := range connectionSteps {
		r.opts.Connections = n
		s, err := r.run(ctx, nil, nil, probeWarmup, false)
		if err != nil {
			return 0, err
		}
		t := s.res.Throughput
		r.progress("choosing connections: %d -> %.0f req/s", n, t)
		if best > 0 && t < best*(1+saturationGain) {
			break
		}
		if t > best {
			best, bestN = t, n
		}
	}
	return bestN, nil
}
