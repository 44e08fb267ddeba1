package main

import (
	"slices"
	"testing"
)

func TestParseLevels(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"", nil, true},
		{"1,2,4", []int{1, 2, 4}, true},
		{" 3 , 9 ", []int{3, 9}, true},
		{"0,2", nil, false},
		{"4,2", nil, false},
		{"2,2", nil, false},
		{"x", nil, false},
	} {
		got, err := parseLevels(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !slices.Equal(got, tc.want)) {
			t.Errorf("parseLevels(%q) = %v, %v; want %v ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// Bad input is refused before anything starts, with the exit status of a
// usage error (2) or of a failed run (1).
func TestPoolsBadInput(t *testing.T) {
	spec := "../../examples/pools/app.yaml"
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"-f", spec}, 2},                                      // no --sla
		{[]string{"--sla", "100ms"}, 2},                                // no -f
		{[]string{"-f", spec, "--sla", "100ms", "extra"}, 2},           // stray argument
		{[]string{"-f", spec, "--sla", "100ms", "--levels", "4,2"}, 1}, // sizes must increase
		{[]string{"-f", spec, "--sla", "100ms", "--levels", "4,8"}, 1}, // too few
		{[]string{"-f", spec, "--sla", "100ms", "--services", "nosuch"}, 1},
		{[]string{"-f", spec, "--sla", "100ms", "--reps", "0"}, 1},
		{[]string{"-f", spec, "--sla", "100ms", "--levels", "1,2,2000000"}, 1},
		{[]string{"-f", spec, "--sla", "100ms", "--connections", "-3"}, 1},
		{[]string{"-f", spec, "--sla", "100ms", "--step", "-1s"}, 1},
		{[]string{"-f", spec, "--sla", "100ms", "--step", "500ms"}, 1}, // under 10 samples
		{[]string{"-f", "nosuch.yaml", "--sla", "100ms"}, 1},
	} {
		if got := runPools(tc.args); got != tc.want {
			t.Errorf("pools %v: exit %d, want %d", tc.args, got, tc.want)
		}
	}
}
