package local

import (
	"slices"
	"testing"
)

func TestPlace(t *testing.T) {
	tests := []struct {
		name       string
		avail      []int
		target     string
		cpus       int
		wantTarget []int
		wantOther  []int
		warn       bool
	}{
		{"no target shares everything", []int{0, 1}, "", 1, nil, []int{0, 1}, false},
		{"two cores: one each, with a warning", []int{0, 1}, "cart", 1, []int{1}, []int{0}, true},
		{"sixteen cores, two for the target", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, "cart", 2, []int{14, 15}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, false},
		{"too small: everything shares", []int{0}, "cart", 1, []int{0}, []int{0}, true},
		{"target asks for all cores", []int{0, 1}, "cart", 2, []int{0, 1}, []int{0, 1}, true},
		{"non-contiguous set", []int{2, 5, 7}, "cart", 1, []int{7}, []int{2, 5}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Place(tt.avail, tt.target, tt.cpus)
			if !slices.Equal(p.TargetCPUs, tt.wantTarget) || !slices.Equal(p.OtherCPUs, tt.wantOther) || (p.Warning != "") != tt.warn {
				t.Fatalf("Place = %+v", p)
			}
			if tt.target != "" && !slices.Equal(p.CPUs(tt.target), tt.wantTarget) {
				t.Fatalf("CPUs(target) = %v", p.CPUs(tt.target))
			}
			if !slices.Equal(p.CPUs("other"), tt.wantOther) {
				t.Fatalf("CPUs(other) = %v", p.CPUs("other"))
			}
		})
	}
}

func TestAvailableCPUsIgnoresLaterPinning(t *testing.T) {
	before, err := AvailableCPUs()
	if err != nil || len(before) == 0 {
		t.Fatal(before, err)
	}
	now, _ := currentCPUs()
	if err := PinProcess(before[:1]); err != nil {
		t.Fatal(err)
	}
	defer PinProcess(now)
	after, _ := AvailableCPUs()
	if !slices.Equal(before, after) {
		t.Fatalf("available CPUs changed after pinning: %v -> %v", before, after)
	}
}
