package experiment

import (
	"slices"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/load"
)

// A point is flagged stops-late when the latest paused service's stops
// start, on average, more than half a pause after they were due.
func TestPointFlagsLateStops(t *testing.T) {
	const pause = 4 * time.Millisecond
	tests := []struct {
		name     string
		late     []time.Duration // mean lateness per paused service
		noDue    bool            // no stop had a due time (no pause lead)
		wantFlag bool
	}{
		{"on time", []time.Duration{0, 0}, false, false},
		{"a quarter of a pause", []time.Duration{300 * time.Microsecond, time.Millisecond}, false, false},
		{"just past half", []time.Duration{100 * time.Microsecond, 2100 * time.Microsecond}, false, true},
		{"longer than the pause", []time.Duration{6 * time.Millisecond, 12 * time.Millisecond}, false, true},
		{"no due times", []time.Duration{6 * time.Millisecond, 12 * time.Millisecond}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rounds := map[string]*wire.Stats{"t": {RoundsStarted: 100}}
			for i, l := range tt.late {
				st := &wire.Stats{RoundsReceived: 100, StopLateMeanNS: int64(l), StopsDue: 100}
				if tt.noDue {
					st.StopLateMeanNS, st.StopsDue = 0, 0
				}
				rounds[string(rune('a'+i))] = st
			}
			r := &Runner{
				prof: &profile{c1: 1, q1: 1, u1: time.Millisecond},
				d:    placed{spec: &spec.Spec{}, pl: backend.Placement{Target: "t", OtherCPUs: []int{0}}},
				opts: Options{Target: "t"},
			}
			sd := slowdown{batch: 10, pause: pause}
			s := &sample{res: &load.Result{Throughput: 500, Completed: 1000}, rounds: rounds, slowdown: &sd}
			p := r.point(400*time.Microsecond, &pointRuns{sd: sd, samples: []*sample{s}}, nil)
			if got := slices.Contains(p.Flags, report.FlagStopsLate); got != tt.wantFlag {
				t.Fatalf("flags %v (stop_late_max_us %.0f, pause %.0f µs): stops-late %v, want %v",
					p.Flags, p.Diagnostics.StopLateMaxUS, p.Diagnostics.PausePerRoundUS, got, tt.wantFlag)
			}
		})
	}
}

// Under shared placement, a point is flagged shared-bound when the shared
// cores had no idle time in its slowdown runs while the target was not
// saturated: the shared cores, not the target, set the throughput.
func TestPointFlagsSharedBound(t *testing.T) {
	tests := []struct {
		name       string
		dedicated  bool
		targetBusy float64 // share of the target's core
		idlePct    float64 // of the shared cores
		want       bool
	}{
		{"target saturated", false, 1.0, 0, false},
		{"shared cores idle", false, 0.6, 5, false},
		{"shared cores saturated, target not", false, 0.6, 0, true},
		{"just under the target's threshold", false, 0.89, 0.5, true},
		{"dedicated placement", true, 0.6, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
			if tt.dedicated {
				pl.Services = map[string][]int{"a": {2}}
			}
			r := &Runner{
				prof: &profile{c1: 1, q1: 1, u1: time.Millisecond},
				d:    placed{spec: &spec.Spec{}, pl: pl},
				opts: Options{Target: "t"},
			}
			sd := slowdown{batch: 4, pause: 4 * time.Millisecond}
			s := busySample(tt.targetBusy, tt.idlePct)
			p := r.point(time.Millisecond, &pointRuns{sd: sd, samples: []*sample{s}}, nil)
			if got := slices.Contains(p.Flags, report.FlagSharedBound); got != tt.want {
				t.Fatalf("flags %v (target busy %.2f, shared idle %.1f%%): shared-bound %v, want %v",
					p.Flags, p.Diagnostics.TargetBusyOverall, p.Diagnostics.SharedIdlePct, got, tt.want)
			}
		})
	}
}

// A point whose first slowdown run the shared cores bound is measured
// again with long pauses, once, and only where the batch was chosen and
// the cores method pauses; a long-pause point is not flagged
// target-starved while the shared cores still bound it.
func TestLengthenSharedBound(t *testing.T) {
	tests := []struct {
		name       string
		method     pause.Method
		batch      int // --batch; 0: chosen
		short      bool
		targetBusy float64
		idlePct    float64
		earlier    int // runs the point already has
		long       bool
		maxPause   time.Duration
		want       bool
	}{
		{"shared-bound", pause.MethodCores, 0, false, 0.6, 0, 0, false, time.Second, true},
		{"target-bound", pause.MethodCores, 0, false, 0.95, 0, 0, false, time.Second, false},
		{"shared cores idle", pause.MethodCores, 0, false, 0.6, 4, 0, false, time.Second, false},
		{"not the first run", pause.MethodCores, 0, false, 0.6, 0, 1, false, time.Second, false},
		{"already long", pause.MethodCores, 0, false, 0.6, 0, 0, true, time.Second, false},
		{"batch given", pause.MethodCores, 4, false, 0.6, 0, 0, false, time.Second, false},
		{"short pauses asked", pause.MethodCores, 0, true, 0.6, 0, 0, false, time.Second, false},
		{"signals", pause.MethodSignal, 0, false, 0.6, 0, 0, false, time.Second, false},
		{"over the hard cap", pause.MethodCores, 0, false, 0.6, 0, 0, false, 10 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const d = time.Millisecond
			r := &Runner{
				method: tt.method,
				prof:   &profile{c1: 1, q1: 1, u1: 1100 * time.Microsecond},
				d:      placed{spec: &spec.Spec{}, pl: backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}},
				opts:   Options{Target: "t", Connections: 256, Batch: tt.batch, Tuning: Tuning{ShortPausesOnly: tt.short}, MaxPause: tt.maxPause},
			}
			short := slowdown{batch: chooseBatch(d, r.prof.u1, 1, 256, 0), pause: 4 * time.Millisecond}
			pr := &pointRuns{sd: short, long: tt.long}
			// The target busy 10% of the pauses.
			run := func(busy, idle float64) *sample {
				s := busySample(busy, idle)
				s.rounds["t"].PauseBusyNS, s.rounds["t"].PauseWindowNS = 1, 10
				return s
			}
			for range tt.earlier {
				pr.samples = append(pr.samples, run(tt.targetBusy, tt.idlePct))
			}
			got := r.lengthen(pr, d, run(tt.targetBusy, tt.idlePct))
			if got != tt.want {
				t.Fatalf("lengthen = %v, want %v", got, tt.want)
			}
			if !got {
				if pr.sd != short || pr.long != tt.long {
					t.Fatalf("a point not lengthened changed: %+v, long %v", pr.sd, pr.long)
				}
				return
			}
			if !pr.long || pr.sd.batch <= short.batch || pr.sd.pause > sharedBoundPause || pr.sd.pause <= short.pause {
				t.Fatalf("lengthened to %+v (long %v) from %+v: want a larger batch, pauses over %v and at most %v", pr.sd, pr.long, short, short.pause, sharedBoundPause)
			}
			// The target idles through most of the long pauses (busy 10%
			// of them): expected there while the shared cores bound it.
			pr.samples = append(pr.samples, run(tt.targetBusy, tt.idlePct))
			p := r.point(d, pr, nil)
			if !p.Diagnostics.LongPauses || slices.Contains(p.Flags, report.FlagTargetStarved) || !slices.Contains(p.Flags, report.FlagSharedBound) {
				t.Fatalf("long-pause point: long_pauses %v, flags %v: want long_pauses, shared-bound and no target-starved", p.Diagnostics.LongPauses, p.Flags)
			}
			// Once the long pauses leave the target the bottleneck, its
			// starving matters again.
			pr.samples = []*sample{run(0.95, 0)}
			if p := r.point(d, pr, nil); !slices.Contains(p.Flags, report.FlagTargetStarved) {
				t.Fatalf("target-bound long-pause point with a starved target: flags %v, want target-starved", p.Flags)
			}
		})
	}
}

// busySample is a one-second slowdown run of target "t" in which the
// target used targetBusy of its core and the shared cores were idle
// idlePct of the time.
func busySample(targetBusy, idlePct float64) *sample {
	const window = time.Second
	return &sample{
		res:    &load.Result{Throughput: 500, Completed: 500},
		before: map[string]*wire.Stats{"t": {}},
		after:  map[string]*wire.Stats{"t": {CPUNS: int64(targetBusy * float64(window))}},
		rounds: map[string]*wire.Stats{"t": {RoundsStarted: 100}},
		window: window,
		idle:   time.Duration(idlePct / 100 * float64(window)),
	}
}
