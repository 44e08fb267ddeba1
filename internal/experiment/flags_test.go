package experiment

import (
	"slices"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
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
			p := r.point(400*time.Microsecond, sd, []*sample{s}, nil)
			if got := slices.Contains(p.Flags, report.FlagStopsLate); got != tt.wantFlag {
				t.Fatalf("flags %v (stop_late_max_us %.0f, pause %.0f µs): stops-late %v, want %v",
					p.Flags, p.StopLateMaxUS, p.PausePerRoundUS, got, tt.wantFlag)
			}
		})
	}
}

// Under shared placement, a point is flagged shared-bound when the shared
// cores had no idle time in its slowdown runs while the target was not
// saturated: the shared cores, not the target, set the throughput.
func TestPointFlagsSharedBound(t *testing.T) {
	const window = time.Second
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
			s := &sample{
				res:      &load.Result{Throughput: 500, Completed: 500},
				before:   map[string]*wire.Stats{"t": {}},
				after:    map[string]*wire.Stats{"t": {CPUNS: int64(tt.targetBusy * float64(window))}},
				rounds:   map[string]*wire.Stats{"t": {RoundsStarted: 100}},
				window:   window,
				idle:     time.Duration(tt.idlePct / 100 * float64(window)),
				slowdown: &sd,
			}
			p := r.point(time.Millisecond, sd, []*sample{s}, nil)
			if got := slices.Contains(p.Flags, report.FlagSharedBound); got != tt.want {
				t.Fatalf("flags %v (target busy %.2f, shared idle %.1f%%): shared-bound %v, want %v",
					p.Flags, p.TargetBusyOverall, p.SharedIdlePct, got, tt.want)
			}
		})
	}
}
