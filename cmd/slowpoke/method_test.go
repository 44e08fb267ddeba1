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
		{[]string{"--precision", "0"}, "", "--precision must be a standard error in (0, 100]"},
		{[]string{"--pause", "cores"}, local.ModeAuto, ""},
		{[]string{"--pause", "freeze"}, "", `--pause: unknown pause method "freeze"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			m := defaultMethod()
			methodFlags(fs, &m)
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
