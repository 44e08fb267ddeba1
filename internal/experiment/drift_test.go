package experiment

import (
	"strings"
	"testing"
)

func TestBaselineDriftWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs []float64
		want []string // substrings; none: no warning
	}{
		{"one run", []float64{700}, nil},
		{"steady", []float64{1000, 1040, 980}, nil},
		{"at the threshold", []float64{1000, 1100}, nil},
		{"moved", []float64{583, 662, 719, 1106}, []string{"moved by 76%", "583 to 1106 req/s over 4 runs", "--reps"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := baselineDriftWarning(tc.runs)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("warning for %v: %s", tc.runs, got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning %q lacks %q", got, w)
				}
			}
		})
	}
}
