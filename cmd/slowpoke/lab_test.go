//go:build lab

package main

// Tests of the lab's code (lab_*.go), built with the lab: go test -tags lab.

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

// predict and validate offer the user's method flags, not the research
// knobs, which only bench accuracy has.
func TestResearchFlagsOnlyInBenchmarks(t *testing.T) {
	user := flag.NewFlagSet("predict", flag.ContinueOnError)
	var c predictConfig
	predictFlags(user, &c)
	for _, name := range []string{"pause", "placement", "precision", "trigger"} {
		if user.Lookup(name) == nil {
			t.Errorf("predict has no --%s", name)
		}
	}
	research := flag.NewFlagSet("research", flag.ContinueOnError)
	researchFlags(research, &c.method)
	research.VisitAll(func(f *flag.Flag) {
		if user.Lookup(f.Name) != nil {
			t.Errorf("predict offers the research knob --%s", f.Name)
		}
	})
}

func TestParseVariants(t *testing.T) {
	tests := []struct {
		list string
		want []experiment.Variant // when valid
		err  string               // "" when valid
	}{
		{"cores,signal", []experiment.Variant{{Name: "cores", Method: pause.MethodCores}, {Name: "signal", Method: pause.MethodSignal}}, ""},
		{"cores/16", []experiment.Variant{{Name: "cores/16", Method: pause.MethodCores, Batch: 16}}, ""},
		{"cores/16ms/nogrowth", []experiment.Variant{{Name: "cores/16ms/nogrowth", Method: pause.MethodCores, PauseCap: 16 * time.Millisecond, Tuning: experiment.Tuning{NoGrowthCorrection: true}}}, ""},
		{" cores/short", []experiment.Variant{{Name: "cores/short", Method: pause.MethodCores, Tuning: experiment.Tuning{ShortPausesOnly: true}}}, ""},
		{"cores/long=128ms", []experiment.Variant{{Name: "cores/long=128ms", Method: pause.MethodCores, Tuning: experiment.Tuning{LongPauseCap: 128 * time.Millisecond}}}, ""},
		{"cores/long=0s", nil, `"cores/long=0s": long= wants a positive duration`},
		{"cores/long=abc", nil, "long= wants a positive duration"},
		{"cores/short/long=128ms", nil, "short and long= contradict each other"},
		{"cores/noidle", []experiment.Variant{{Name: "cores/noidle", Method: pause.MethodCores, Tuning: experiment.Tuning{NoIdleCorrection: true}}}, ""},
		{"cores/cpu", []experiment.Variant{{Name: "cores/cpu", Method: pause.MethodCores, Trigger: experiment.TriggerCPU}}, ""},
		{"cores/nominal/nostarve", []experiment.Variant{{Name: "cores/nominal/nostarve", Method: pause.MethodCores, Tuning: experiment.Tuning{NominalDelay: true, NoStarvedRepair: true}}}, ""},
		{"cores/nocap", []experiment.Variant{{Name: "cores/nocap", Method: pause.MethodCores, Tuning: experiment.Tuning{NoCapacityRun: true}}}, ""},
		{"cores/fast", nil, `"cores/fast": want method[/batch|/pause-cap][/nogrowth][/noidle][/nominal][/nostarve][/nocap][/short|/long=cap][/cpu]`},
		{"cores/0", nil, "want method"},
		{"freeze", nil, `"freeze" is not signal, cgroup or cores`},
		{"auto", nil, "is not signal, cgroup or cores"},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			got, err := parseVariants(tt.list, experiment.Tuning{})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The research knobs are checked with the user's method flags.
func TestResearchFlagsChecked(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	m := defaultMethod()
	methodFlags(fs, &m)
	researchFlags(fs, &m)
	if err := fs.Parse([]string{"--pause-lead", "1s"}); err != nil {
		t.Fatal(err)
	}
	if err := m.check(); err == nil || !strings.Contains(err.Error(), "--pause-lead") {
		t.Fatalf("check = %v, want an error about --pause-lead", err)
	}
}

// Bad input to bench latency is refused before anything starts.
func TestBenchLatencyBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--holds-batch", "0", "--holds"},
		{"--holds-batch", "4"}, // without --holds
	} {
		if got := benchLatency(args); got != 2 {
			t.Errorf("bench latency %v: exit %d, want 2", args, got)
		}
	}
}
