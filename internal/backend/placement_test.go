package backend

import (
	"math"
	"testing"
)

func TestSharesCPU(t *testing.T) {
	tests := []struct {
		name string
		a, b []int
		want bool
	}{
		{"same core", []int{0}, []int{0}, true},
		{"separate cores", []int{0}, []int{1}, false},
		{"overlap in one", []int{0, 1}, []int{1, 2}, true},
		{"unpinned overlaps everything", nil, []int{3}, true},
		{"both unpinned", nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SharesCPU(tt.a, tt.b); got != tt.want {
				t.Fatalf("SharesCPU(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// The placement's facts that the experiment asks instead of its mode.
func TestPlacementFacts(t *testing.T) {
	shared := Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
	dedicated := Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}, Services: map[string][]int{"a": {2}, "b": {2}, "c": {3}}}
	cluster := Placement{Target: "t", Cluster: true}
	keep := Placement{Target: "t", TargetCPUs: []int{0, 1}, OtherCPUs: []int{0, 1}, Keep: true}
	tests := []struct {
		name                   string
		p                      Placement
		cores                  float64 // CoreCount("t")
		sharedCores, loadCores bool    // SharedCores(), SharesLoadCores("a")
		ab, ac                 bool    // SharesCores("a", "b"), SharesCores("a", "c")
	}{
		{"shared", shared, 1, true, true, true, true},
		{"dedicated", dedicated, 1, false, false, true, false},
		{"cluster", cluster, math.Inf(1), false, false, false, false},
		{"keep", keep, 2, false, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			if got := p.CoreCount("t"); got != tt.cores {
				t.Errorf("CoreCount = %v, want %v", got, tt.cores)
			}
			if got := p.SharedCores(); got != tt.sharedCores {
				t.Errorf("SharedCores = %v, want %v", got, tt.sharedCores)
			}
			if got := p.SharesLoadCores("a"); got != tt.loadCores {
				t.Errorf("SharesLoadCores(a) = %v, want %v", got, tt.loadCores)
			}
			if got := p.SharesCores("a", "b"); got != tt.ab {
				t.Errorf("SharesCores(a, b) = %v, want %v", got, tt.ab)
			}
			if got := p.SharesCores("a", "c"); got != tt.ac {
				t.Errorf("SharesCores(a, c) = %v, want %v", got, tt.ac)
			}
		})
	}
}
