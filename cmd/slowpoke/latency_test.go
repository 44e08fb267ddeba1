package main

import "testing"

// Bad input is refused before anything starts.
func TestLatencyBadInput(t *testing.T) {
	spec := "../../examples/demo/app.yaml"
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"-f", spec}, 2},                                         // no --target
		{[]string{"--target", "cart"}, 2},                                 // no -f
		{[]string{"-f", spec, "--target", "cart", "extra"}, 2},            // stray argument
		{[]string{"-f", spec, "--target", "nosuch"}, 1},                   // unknown service
		{[]string{"-f", spec, "--target", "cart", "--reduce", "1->2"}, 1}, // replicas
		{[]string{"-f", spec, "--target", "cart", "--reduce", "x"}, 1},
		{[]string{"-f", spec, "--target", "cart", "--requests", "10"}, 1},
		{[]string{"-f", spec, "--target", "cart", "--rate", "-1"}, 1},
		{[]string{"-f", spec, "--target", "cart", "--reps", "0"}, 1},
		{[]string{"-f", "nosuch.yaml", "--target", "cart"}, 1},
	} {
		if got := runLatency(tc.args); got != tc.want {
			t.Errorf("latency %v: exit %d, want %d", tc.args, got, tc.want)
		}
	}
}
