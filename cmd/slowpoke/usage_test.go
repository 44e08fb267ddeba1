//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input is refused before anything starts, with the exit status of a
// usage error (2) or of a failed run (1), naming the problem; -h exits 0.
// Each command runs in an empty directory, which must stay empty: a
// refused run leaves no output directory behind.
func TestBadInputRefusedBeforeStart(t *testing.T) {
	bin := buildSlowpoke(t)
	demoSpec, err := filepath.Abs("../../examples/demo/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kubeSpec, _ := filepath.Abs("../../examples/demo/kubernetes/app.yaml")
	brokenSpec := filepath.Join(t.TempDir(), "app.yaml")
	b, err := os.ReadFile(demoSpec)
	if err != nil {
		t.Fatal(err)
	}
	// A service whose command does not exist: refused once the start
	// begins, the case that could leave an empty output directory.
	broken := strings.Replace(string(b), "command: slowpoke-emu", "command: no-such-command-for-slowpoke-tests", 1)
	broken = strings.ReplaceAll(broken, "topology.yaml", filepath.Join(filepath.Dir(demoSpec), "topology.yaml"))
	if err := os.WriteFile(brokenSpec, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	pc := []string{"predict", "-f", demoSpec, "--target", "cart"}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"predict", "-f", demoSpec}, 2, "--target is required"},
		{[]string{"validate", "--target", "cart"}, 2, "-f is required"},
		{[]string{"predict"}, 2, "-f and --target are required"},
		{[]string{"predict", "-h"}, 0, "Usage: slowpoke predict"},
		{[]string{"help", "validate"}, 0, "Usage: slowpoke validate"},
		{append(pc, "junk", "--bogus"), 2, `unexpected argument "junk"`},
		{append(pc, "--reduce", "nan%"), 1, "not a number"},
		{append(pc, "--reduce", "1-"), 1, "quote"},
		{append(pc, "--batch", "-1"), 1, "--batch must be"},
		{append(pc, "--duration", "-1s"), 1, "--duration must be"},
		{append(pc, "--warmup", "-1s"), 1, "--warmup must be"},
		{append(pc, "--max-reps", "-1"), 1, "--max-reps must be"},
		{append(pc, "--precision", "NaN"), 1, "--precision must be"},
		{append(pc, "--precision", "150"), 1, "--precision must be"},
		{[]string{"predict", "-f", demoSpec, "--target", "nosuch"}, 1, `unknown target service "nosuch"`},
		{[]string{"predict", "-f", kubeSpec, "--target", "cart", "--pause", "cores"}, 1, "not available on Kubernetes"},
		{[]string{"rank", "-f", kubeSpec, "--placement", "shared"}, 1, "not available on Kubernetes"},
		{[]string{"rank", "-f", demoSpec, "--min-gain", "-5"}, 1, "--min-gain must be"},
		{[]string{"pools", "-f", demoSpec, "--sla", "-1s"}, 1, "--sla must be > 0"},
		{[]string{"latency", "-f", demoSpec, "--target", "cart", "--rate", "100", "--connections", "8"}, 1, "give one of them"},
		{[]string{"latency", "-f", demoSpec, "--target", "cart", "--rate", "NaN"}, 1, "--rate must be"},
		{[]string{"demo", "junk"}, 2, `unexpected argument "junk"`},
		{[]string{"bench", "overhead", "junk", "--reps", "1"}, 2, `unexpected argument "junk"`},
		{[]string{"bench", "bogus"}, 2, `unknown benchmark "bogus"`},
		{[]string{"bench", "-h"}, 0, "go build -tags lab"},
		{[]string{"bench", "methods", "-h"}, 2, `unknown benchmark "methods"`},
		{[]string{"pools", "-f", demoSpec, "--sla", "100"}, 2, "durations take a unit"},
		{[]string{"predict", "--bogus"}, 2, "see -h"},
		{[]string{"version"}, 0, "slowpoke "},
		{[]string{"--version"}, 0, "slowpoke "},
		{[]string{"predict", "-f", demoSpec, "--target", "cart", "--trigger", "ticks"}, 1, "--trigger: unknown trigger"},
		{[]string{"install", "-h"}, 0, "Usage: slowpoke install"},
		{[]string{"controller", "-h"}, 0, "Usage: slowpoke controller"},
		{[]string{"help", "nosuch"}, 2, `unknown command "nosuch"`},
		{[]string{"version", "junk"}, 2, "Usage: slowpoke version"},
		{[]string{"guard", "junk"}, 2, `unexpected argument "junk"`},
		{[]string{"install", "relative/path"}, 2, "not an absolute path"},
		{[]string{"predict", "-f", brokenSpec, "--target", "cart"}, 1, "no-such-command-for-slowpoke-tests"},
	} {
		dir := t.TempDir()
		cmd := exec.Command(bin, tc.args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("slowpoke %s: exit %d, %q; want exit %d and %q", strings.Join(tc.args, " "), code, out, tc.code, tc.want)
		}
		if tc.code != 0 && strings.Contains(string(out), "placement:") {
			t.Errorf("slowpoke %s started the application", strings.Join(tc.args, " "))
		}
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Errorf("slowpoke %s left %s in its working directory", strings.Join(tc.args, " "), ents[0].Name())
		}
	}
}
