//go:build lab

package experiment

import (
	"context"
	"time"

	"github.com/slowpoke-dev/slowpoke/load"
)

// Window is what one measured run saw, for benchmarks.
type Window struct {
	Result *load.Result
	Length time.Duration
	// PausedBusy is the busy time of the cores the other services run on,
	// summed over them; HeldCPU the part of it the cores method's holding
	// threads took (the pauses themselves).
	PausedBusy, HeldCPU time.Duration
	ServicesCPU         map[string]time.Duration // every service's
	ControllersCPU      time.Duration            // every controller's, holding threads included
	LoadCPU             time.Duration            // this process's: the load generator
	Rounds              uint64                   // rounds the target started
}

// MeasureWindow runs one measurement window like Measure and says what it
// cost whom.
func (r *Runner) MeasureWindow(ctx context.Context, batch int, pause time.Duration) (*Window, error) {
	var sd *slowdown
	if batch > 0 {
		sd = &slowdown{batch: batch, pause: pause}
	}
	s, err := r.run(ctx, sd, r.star(), r.opts.Warmup, false)
	if err != nil {
		return nil, err
	}
	w := &Window{Result: s.res, Length: s.window, LoadCPU: s.loadCPU, ServicesCPU: map[string]time.Duration{}}
	w.PausedBusy = s.window*time.Duration(len(r.d.Placement().PausedCPUs())) - s.idle
	w.HeldCPU = r.held(s)
	for name, a := range s.after {
		b := s.before[name]
		if b == nil {
			continue
		}
		_, w.ServicesCPU[name] = s.delta(name)
		w.ControllersCPU += time.Duration(a.ControllerCPUNS - b.ControllerCPUNS)
		if name == r.opts.Target {
			w.Rounds = a.RoundsStarted - b.RoundsStarted
		}
	}
	return w, nil
}
