package experiment

import "testing"

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
