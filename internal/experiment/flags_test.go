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
