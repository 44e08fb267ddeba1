package experiment

import (
	"context"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/load"
)

// Census measures the application of s as it runs, as it is placed,
// once, reading every service's CPU time over the window with cpu (as
// MeasureAsDeployed does; Baseline.CPU): rank's run
// before its screening, whose shares of the CPU bound each service's gain
// (docs/method.md, "Screening, then confirmation"). Like a screening, a
// window that holds fewer than screenCycles request cycles (connections /
// throughput) measures a transient, in which the services' CPU is not
// spread as their work per request is (the calls of the requests in
// flight are still on their way down). The window is therefore sized
// when the warm-up ends, from its throughput (load.WithWindowFromWarmup),
// to hold that many cycles and a tenth more, at least duration and up
// to longest; one that still held fewer than screenCycles/censusMargin
// (the window ran slower than the warm-up by more than that margin) is
// measured again with a window of screenCycles at its own throughput. cycles is how many request cycles the window that
// counts held, which a caller that needs a steady window checks with
// CensusSteady; window is that window.
func Census(ctx context.Context, s *spec.Spec, cpu func() map[string]time.Duration, connections int, warmup, duration, longest time.Duration, progress func(format string, args ...any)) (b *report.Baseline, window time.Duration, cycles float64, err error) {
	workloadDefaults(s, &connections, &warmup, &duration)
	size := func(rate float64) time.Duration {
		if rate <= 0 {
			return 0
		}
		_, want := cycleWindow(connections, rate/censusMargin, longest)
		return max(duration, want)
	}
	for {
		b, window, err = measureAsDeployed(ctx, s, connections, warmup, duration, 1, cpu, load.WithWindowFromWarmup(size))
		if err != nil {
			return nil, 0, 0, err
		}
		cycle, want := cycleWindow(connections, b.RPS, longest)
		cycles = window.Seconds() / cycle.Seconds()
		if cycles*censusMargin >= screenCycles || want <= window {
			return b, window, cycles, nil
		}
		progress("census: a request cycle takes %v at %.0f req/s, so the %v window held %.1f of them: measuring again with %v", cycle.Round(time.Millisecond), b.RPS, window.Round(100*time.Millisecond), cycles, want)
		duration = want
	}
}

// censusMargin is how much slower than its warm-up a census window may
// run and still hold screenCycles request cycles; one that ran slower
// still, holding less than screenCycles/censusMargin, is measured again.
// (The demo's 1.8 s window sized from a warm-up at about 780 req/s ran at
// 681 and held 9.6 cycles, 2026-12-02.)
const censusMargin = 1.1

// CensusSteady says whether a census window that held cycles request
// cycles measured the application steady enough to read its services'
// shares of the CPU: report.CensusSteadyCycles, half the cycles a
// screening window is given (screenCycles). The
// window is sized from the warm-up's throughput, and one that comes out
// slower still holds a little less than screenCycles; the calls still
// on their way down in its first cycle then shift at most a fifth of a
// service's share, which the bound's headroom (a factor of 2) covers.
func CensusSteady(cycles float64) bool { return cycles >= report.CensusSteadyCycles }
