package local

import (
	"slices"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// svcs builds spec services from name=cpus pairs.
func svcs(pairs ...any) []spec.Service {
	var out []spec.Service
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, spec.Service{Name: pairs[i].(string), CPUs: pairs[i+1].(int)})
	}
	return out
}

func cpuRange(from, to int) []int {
	var out []int
	for c := from; c <= to; c++ {
		out = append(out, c)
	}
	return out
}

func TestPlace(t *testing.T) {
	three := svcs("front", 1, "cart", 2, "db", 1)
	tests := []struct {
		name       string
		avail      []int
		services   []spec.Service
		target     string
		mode       Mode
		wantTarget []int
		wantOther  []int
		wantOwn    map[string][]int // nil: the others share wantOther
		warn       bool
		err        string
	}{
		{"no target shares everything", []int{0, 1}, svcs("a", 1), "", ModeShared, nil, []int{0, 1}, nil, false, ""},
		{"two cores: one each, with a warning", []int{0, 1}, svcs("front", 1, "cart", 1), "cart", ModeAuto, []int{1}, []int{0}, nil, true, ""},
		{"sixteen cores shared, two for the target", cpuRange(0, 15), three, "cart", ModeShared, []int{14, 15}, cpuRange(0, 13), nil, false, ""},
		{"too small: everything shares", []int{0}, svcs("cart", 1), "cart", ModeAuto, []int{0}, []int{0}, nil, true, ""},
		{"target asks for all cores", []int{0, 1}, svcs("front", 1, "cart", 2), "cart", ModeShared, []int{0, 1}, []int{0, 1}, nil, true, ""},
		{"non-contiguous set", []int{2, 5, 7}, svcs("front", 1, "cart", 1), "cart", ModeShared, []int{7}, []int{2, 5}, nil, false, ""},
		{"sixteen cores, auto: every service its own", cpuRange(0, 15), three, "cart", ModeAuto,
			[]int{14, 15}, cpuRange(0, 11), map[string][]int{"front": {13}, "db": {12}}, false, ""},
		{"exactly enough for dedicated", cpuRange(0, 5), three, "cart", ModeDedicated,
			[]int{4, 5}, []int{0, 1}, map[string][]int{"front": {3}, "db": {2}}, false, ""},
		{"a non-target service with two cores", cpuRange(0, 7), svcs("a", 1, "b", 2), "a", ModeAuto,
			[]int{7}, cpuRange(0, 4), map[string][]int{"b": {5, 6}}, false, ""},
		{"one core short: auto shares, with a warning", cpuRange(0, 4), three, "cart", ModeAuto, []int{3, 4}, []int{0, 1, 2}, nil, true, ""},
		{"one core short: dedicated refused", cpuRange(0, 4), three, "cart", ModeDedicated, nil, nil, nil, false, "need 6 CPUs; this process may use 5"},
		{"unknown mode", cpuRange(0, 3), three, "cart", Mode("spread"), nil, nil, nil, false, `unknown placement "spread"`},
		{"empty mode is auto", cpuRange(0, 15), three, "cart", "",
			[]int{14, 15}, cpuRange(0, 11), map[string][]int{"front": {13}, "db": {12}}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Place(tt.avail, tt.services, tt.target, tt.mode)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Place = %+v, %v; want error containing %q", p, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.TargetCPUs, tt.wantTarget) || !slices.Equal(p.OtherCPUs, tt.wantOther) || (p.Warning != "") != tt.warn {
				t.Fatalf("Place = %+v", p)
			}
			if tt.target != "" && !slices.Equal(p.CPUs(tt.target), tt.wantTarget) {
				t.Fatalf("CPUs(target) = %v", p.CPUs(tt.target))
			}
			if tt.wantOwn == nil {
				if p.Mode() != ModeShared || !slices.Equal(p.PausedCPUs(), tt.wantOther) {
					t.Fatalf("mode %s, paused CPUs %v; want shared %v", p.Mode(), p.PausedCPUs(), tt.wantOther)
				}
				for _, s := range tt.services {
					if s.Name != tt.target && !slices.Equal(p.CPUs(s.Name), tt.wantOther) {
						t.Fatalf("CPUs(%s) = %v, want shared %v", s.Name, p.CPUs(s.Name), tt.wantOther)
					}
				}
				return
			}
			if p.Mode() != ModeDedicated {
				t.Fatalf("mode %s, want dedicated", p.Mode())
			}
			var paused []int
			for name, want := range tt.wantOwn {
				if !slices.Equal(p.CPUs(name), want) {
					t.Fatalf("CPUs(%s) = %v, want %v", name, p.CPUs(name), want)
				}
				paused = append(paused, want...)
			}
			slices.Sort(paused)
			if !slices.Equal(p.PausedCPUs(), paused) {
				t.Fatalf("PausedCPUs = %v, want %v", p.PausedCPUs(), paused)
			}
			// No core is given twice.
			seen := map[int]bool{}
			for _, c := range append(append(slices.Clone(p.TargetCPUs), p.OtherCPUs...), paused...) {
				if seen[c] {
					t.Fatalf("CPU %d given twice: %+v", c, p)
				}
				seen[c] = true
			}
		})
	}
}

// TestPlaceKeep checks that keep placement gives the target and
// everything else every core, whatever the machine's size, and that the
// cores method cannot hold anything under it (the target shares them all).
func TestPlaceKeep(t *testing.T) {
	for _, avail := range [][]int{{0}, {0, 1}, cpuRange(0, 15)} {
		p, err := Place(avail, svcs("front", 1, "cart", 2), "cart", ModeKeep)
		if err != nil {
			t.Fatal(err)
		}
		if p.Mode() != ModeKeep || !p.Keep || p.Warning != "" {
			t.Fatalf("%v: Place = %+v, mode %s", avail, p, p.Mode())
		}
		for _, name := range []string{"front", "cart", "anything"} {
			if !slices.Equal(p.CPUs(name), avail) {
				t.Errorf("%v: CPUs(%s) = %v, want every core", avail, name, p.CPUs(name))
			}
		}
		if got := p.HoldCores(); len(got) != 0 {
			t.Errorf("%v: HoldCores = %v, want none", avail, got)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Mode
		ok   bool
	}{{"", ModeAuto, true}, {"auto", ModeAuto, true}, {"shared", ModeShared, true}, {"dedicated", ModeDedicated, true}, {"keep", ModeKeep, true}, {"Dedicated", "", false}, {"own", "", false}} {
		got, err := ParseMode(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseMode(%q) = %q, %v", tt.in, got, err)
		}
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
