package experiment

import (
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

func TestParseTrigger(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", TriggerAuto, true},
		{"auto", TriggerAuto, true},
		{"calls", TriggerCalls, true},
		{"cpu", TriggerCPU, true},
		{"CPU", "", false},
		{"ticks", "", false},
	} {
		got, err := ParseTrigger(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseTrigger(%q) = %q, %v; want %q (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// A ground truth cannot remove more work per call than its knob holds
// (where the knob's unmodified value is above zero); a target whose calls
// are not counted is checked per call, through its calibrated c1.
func TestCheckTruthRange(t *testing.T) {
	s, err := spec.Parse([]byte(`name: x
services:
  - {name: a, command: a, port: 1, ground_truth: {env: W, base_us: 1000}}
  - {name: b, command: b, port: 2, ground_truth: {env: W, base_us: 0}}
entry: http://127.0.0.1:1
workload:
  connections: 1
  warmup: 1s
  duration: 1s
  requests: [{name: r, path: /, weight: 1}]
`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	us := time.Microsecond
	for _, tc := range []struct {
		target  string
		counted bool
		c1      float64
		d       time.Duration
		ok      bool
	}{
		{"a", true, 0, 1000 * us, true},
		{"a", true, 0, 1001 * us, false},
		{"a", false, 1.5, 1500 * us, true},  // 1000 µs per call
		{"a", false, 1.5, 1600 * us, false}, // 1067 µs per call
		{"b", true, 0, 5000 * us, true},     // an offset knob: no bound
	} {
		r := &Runner{spec: s, opts: Options{Target: tc.target}, counted: tc.counted, truthC1: tc.c1}
		if err := r.checkTruthRange("x", tc.d); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}
