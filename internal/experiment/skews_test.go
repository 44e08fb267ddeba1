package experiment

import (
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// A run's round skew across nodes is the target controller's, from the
// latest snapshot of its counters (they count every round since its agent
// started), in µs; a run whose snapshots have none has none.
func TestNodeSkews(t *testing.T) {
	snap := func(taken int64, rounds int, p99 int64) *sample {
		st := &wire.Stats{TakenUnixNS: taken}
		if rounds > 0 {
			st.NodeSkews = []wire.NodeSkew{{Node: "n2", Rounds: rounds, StartP99NS: p99, LongerP50NS: -1500, Lost: ""}}
		}
		return &sample{after: map[string]*wire.Stats{"t": st, "other": {TakenUnixNS: taken + 1, NodeSkews: []wire.NodeSkew{{Node: "wrong", Rounds: 999}}}}}
	}
	for _, tt := range []struct {
		name       string
		base       []*sample
		point      []*sample
		wantRounds int
		wantP99US  float64
	}{
		{"the latest snapshot", []*sample{snap(10, 5, 100e3)}, []*sample{snap(30, 40, 200e3), snap(20, 20, 300e3)}, 40, 200},
		{"no skews", []*sample{snap(10, 0, 0)}, nil, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{opts: Options{Target: "t"}, base: tt.base}
			got := r.nodeSkews([]*measuredPoint{{pointRuns: pointRuns{samples: tt.point}}})
			if tt.wantRounds == 0 {
				if got != nil {
					t.Fatalf("nodeSkews = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Node != "n2" || got[0].Rounds != tt.wantRounds || got[0].StartP99US != tt.wantP99US || got[0].LongerP50US != -1.5 {
				t.Fatalf("nodeSkews = %+v, want node n2, %d rounds, start p99 %g µs, longer p50 -1.5 µs", got, tt.wantRounds, tt.wantP99US)
			}
		})
	}
}
