package main

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

func TestMethodFlags(t *testing.T) {
	tests := []struct {
		args []string
		mode local.Mode // when valid
		err  string     // from check, "" when valid
	}{
		{nil, local.ModeAuto, ""},
		{[]string{"--placement", "shared"}, local.ModeShared, ""},
		{[]string{"--placement", "dedicated"}, local.ModeDedicated, ""},
		{[]string{"--placement", "auto"}, local.ModeAuto, ""},
		{[]string{"--placement", "spread"}, "", `--placement: unknown placement "spread"`},
		{[]string{"--precision", "0"}, "", "--precision must be a standard error in (0, 100]"},
		{[]string{"--pause", "cores"}, local.ModeAuto, ""},
		{[]string{"--pause", "freeze"}, "", `--pause: unknown pause method "freeze"`},
		{[]string{"--pause-lead", "1s"}, "", "--pause-lead"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			m := defaultMethod()
			methodFlags(fs, &m)
			researchFlags(fs, &m)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := m.check()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("check = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || m.mode() != tt.mode {
				t.Fatalf("check = %v, mode %q; want %q", err, m.mode(), tt.mode)
			}
		})
	}
}

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
		{"cores/cpu", []experiment.Variant{{Name: "cores/cpu", Method: pause.MethodCores, Trigger: experiment.TriggerCPU}}, ""},
		{"cores/nominal/nostarve", []experiment.Variant{{Name: "cores/nominal/nostarve", Method: pause.MethodCores, Tuning: experiment.Tuning{NominalDelay: true, NoStarvedRepair: true}}}, ""},
		{"cores/fast", nil, `"cores/fast": want method[/batch|/pause-cap][/nogrowth][/nominal][/nostarve][/short|/long=cap][/cpu]`},
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
