package experiment

import (
	"os"
	"slices"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
)

// The load generator's CPU extends a service's stops only where it runs on
// that service's cores.
func TestColocatedFollowsPlacement(t *testing.T) {
	shared := backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
	dedicated := backend.Placement{Target: "t", TargetCPUs: []int{3}, OtherCPUs: []int{0, 1}, Services: map[string][]int{"a": {2}}}
	me := []int{os.Getpid()}
	tests := []struct {
		name string
		pl   backend.Placement
		off  bool
		svc  string
		want []int
	}{
		{"shared: a paused service", shared, false, "a", me},
		{"shared: the target", shared, false, "t", nil},
		{"shared, turned off", shared, true, "a", nil},
		{"dedicated: a paused service", dedicated, false, "a", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{d: placed{pl: tt.pl}, opts: Options{Target: "t", Tuning: Tuning{NoColocatedExtension: tt.off}}}
			if got := r.colocated(tt.svc); !slices.Equal(got, tt.want) {
				t.Fatalf("colocated(%s) = %v, want %v", tt.svc, got, tt.want)
			}
		})
	}
}
