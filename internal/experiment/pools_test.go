package experiment

import (
	"math"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// A service's busy share in the pools baseline is its CPU over the fewer
// of its spec's cpus and the cores it was placed on; where a cluster
// placed it, over its spec's cpus (its pod's CPU limit).
func TestPoolsBusyShareByPlacement(t *testing.T) {
	s := &spec.Spec{Entry: "http://127.0.0.1:1", Services: []spec.Service{{Name: "front", Port: 1}, {Name: "a", Port: 2, CPUs: 2}}}
	tests := []struct {
		name string
		pl   backend.Placement
		want float64 // a's busy share, %
	}{
		{"shared, one core", backend.Placement{OtherCPUs: []int{0}}, 150},
		{"shared, four cores", backend.Placement{OtherCPUs: []int{0, 1, 2, 3}}, 75},
		{"dedicated, two cores", backend.Placement{OtherCPUs: []int{0}, Services: map[string][]int{"front": {1}, "a": {2, 3}}}, 75},
		{"cluster", backend.Placement{Cluster: true}, 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &poolRun{d: placed{spec: s, pl: tt.pl}, s: s, o: PoolOptions{SLA: 100 * time.Millisecond, Services: []string{"a"}}}
			before := map[string]*wire.Stats{"front": {}, "a": {}}
			// In one second, 1000 calls each; a uses 1.5 cores.
			after := map[string]*wire.Stats{
				"front": {AgentConnected: true, Calls: 1000, CPUNS: int64(100 * time.Millisecond)},
				"a":     {AgentConnected: true, Calls: 1000, CPUNS: int64(1500 * time.Millisecond)},
			}
			got, err := r.critical(before, after, measured{completed: 1000, window: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || math.Abs(got[0].BusyPct-tt.want) > 1e-9 {
				t.Fatalf("picked %+v, want a at %v%% busy", got, tt.want)
			}
		})
	}
}
