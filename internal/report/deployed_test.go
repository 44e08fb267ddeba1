package report

import (
	"bytes"
	"strings"
	"testing"
)

// The note on the deployed placement gives the target's CPU share and the
// bound at the largest reduction that has one, and warns where slowpoke's
// small gain does not rule out a large one in the user's placement.
func TestDeployedNote(t *testing.T) {
	cpu := &CPUUse{ServicesUS: map[string]float64{"front": 300, "cart": 900}, MachineUS: 1500, BusyPct: 97, Cores: 2}
	results := func(cpu *CPUUse, predicted, high, bound float64) *Results {
		return &Results{
			Target:           "cart",
			Baseline:         Baseline{RPS: 1000},
			DeployedBaseline: &Baseline{RPS: 1300, CPU: cpu},
			Points: []Point{
				{ReductionPct: 20, PredictedRPS: 1000, DeployedBoundRPS: 1400},
				{ReductionPct: 40, PredictedRPS: predicted, IntervalHighRPS: high, DeployedBoundRPS: bound},
			},
		}
	}
	lowerBound := func(r *Results) *Results {
		r.Points[1].Estimate = EstimateLowerBound
		return r
	}
	tests := []struct {
		name    string
		r       *Results
		want    []string
		wantNot []string
	}{
		{"no CPU measured", results(nil, 1020, 1050, 2000), nil, nil},
		{"small gain, large bound", results(cpu, 1020, 1050, 1950),
			[]string{"2 cores 97% busy", "cart took 75% of the CPU", "(the 40% point)", "at most 1950 req/s (+50%)", "does not rule out a gain of up to +50%"}, nil},
		{"large gain predicted", results(cpu, 1400, 1500, 1950), []string{"at most 1950 req/s"}, []string{"does not rule out"}},
		{"small bound", results(cpu, 1020, 1050, 1350), []string{"(+4%)"}, []string{"does not rule out"}},
		{"no bound at the last point", results(cpu, 1020, 1050, 0), []string{"(the 20% point)", "at most 1400 req/s"}, nil},
		{"a lower bound", lowerBound(results(cpu, 1020, 0, 1950)), []string{"at most 1950 req/s"}, []string{"does not rule out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DeployedNote(tt.r)
			if tt.want == nil && got != "" {
				t.Fatalf("note %q, want none", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("note %q lacks %q", got, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("note %q has %q", got, w)
				}
			}
		})
	}
	// The table and the report's headline notes carry it.
	r := results(cpu, 1020, 1050, 1950)
	var buf bytes.Buffer
	if err := WriteTable(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "does not rule out") {
		t.Errorf("table without the note:\n%s", buf.String())
	}
	if _, notes := resultsHeadline(r); !strings.Contains(strings.Join(notes, " "), "does not rule out") {
		t.Errorf("headline notes without it: %q", notes)
	}
}

// The note says which limit its bound is.
func TestDeployedNoteLimit(t *testing.T) {
	// 1000 req/s, 2 cores, 2000 µs busy per request: cutting 400 µs of
	// the target's 800 the cores allow 1250, the target's time 2000.
	r := &Results{Target: "cart", C1: 1, Baseline: Baseline{RPS: 1000},
		DeployedBaseline: &Baseline{RPS: 1000, CPU: &CPUUse{ServicesUS: map[string]float64{"cart": 800, "front": 700}, MachineUS: 2000, BusyPct: 100, Cores: 2}},
		Points:           []Point{{ReductionPct: 50, ReductionUS: 400, PredictedRPS: 1300, DeployedBoundRPS: 1250}}}
	if got := DeployedNote(r); !strings.Contains(got, "where the cores bind") || !strings.Contains(got, "400 µs less") ||
		!strings.Contains(got, "as long as the other services' CPU per request stays as measured here (700 µs at 1000 req/s).") {
		t.Errorf("cores' limit: %q", got)
	}
	// Only what was measured: the other services' CPU per request at the
	// throughputs the run saw, no general claim.
	r.Baseline.OthersCPUUS = 650
	if got := DeployedNote(r); !strings.Contains(got, "(700 µs at 1000 req/s; 650 µs at 1000 req/s under slowpoke's placement)") || strings.Contains(got, "often") {
		t.Errorf("the other services' CPU: %q", got)
	}
	r.DeployedBaseline.CPU.MachineUS = 1000
	r.Points[0].DeployedBoundRPS = 2000
	if got := DeployedNote(r); !strings.Contains(got, "where cart's own time binds") {
		t.Errorf("the target's limit: %q", got)
	}
}
