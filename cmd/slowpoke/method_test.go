package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
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
		{[]string{"--precision", "0"}, "", "--precision must be positive"},
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
	for _, name := range []string{"pause", "placement", "precision"} {
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
