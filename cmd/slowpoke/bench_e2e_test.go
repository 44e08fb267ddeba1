//go:build e2e

package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C ends a benchmark with the exit status of every other command's
// interruption (130), not that of a failure (1) or of success (0).
func TestBenchInterruptedExits130(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two emulated services")
	}
	bin := buildSlowpoke(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "bench", "overhead", "--reps", "1", "--methods", "signal", "--duration", "5s", "--out", out)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	// The first progress line comes once the services have run.
	sc := bufio.NewScanner(stderr)
	sc.Scan()
	go func() {
		for sc.Scan() {
		}
	}()
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("exit after SIGINT: %v, want status 130", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("bench overhead did not stop within 30s of SIGINT")
	}
	checkNoLeftovers(t, out)
}

// The lab's build runs every research benchmark and says it is the lab;
// slowpoke itself runs only bench overhead and carries none of the
// research benchmarks' code.
func TestLabBuild(t *testing.T) {
	lab := buildLab(t)
	run := func(bin string, args ...string) (int, string) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	if code, out := run(lab, "-h"); code != 0 || !strings.Contains(out, "slowpoke-lab <command>") {
		t.Errorf("slowpoke-lab -h: exit %d\n%s", code, out)
	}
	code, out := run(lab, "bench", "-h")
	if code != 0 {
		t.Errorf("slowpoke-lab bench -h: exit %d\n%s", code, out)
	}
	// The product's benchmarks and the lab's own (lab_bench.go).
	names := []string{"methods", "accuracy"}
	for _, b := range benches {
		names = append(names, b.name)
	}
	for _, name := range names {
		if !strings.Contains(out, name) {
			t.Errorf("slowpoke-lab bench -h does not list %s:\n%s", name, out)
		}
	}
	if code, out := run(lab, "bench", "methods", "-h"); code != 0 || !strings.Contains(out, "Usage: slowpoke-lab bench methods") {
		t.Errorf("slowpoke-lab bench methods -h: exit %d\n%s", code, out)
	}
	if code, out := run(lab, "bench", "methods"); code != 2 || !strings.Contains(out, "-f and --target are required") {
		t.Errorf("slowpoke-lab bench methods: exit %d\n%s", code, out)
	}

	product := buildSlowpoke(t)
	syms, err := exec.Command("go", "tool", "nm", product).Output()
	if err != nil {
		t.Skipf("go tool nm: %v", err)
	}
	if !strings.Contains(string(syms), "main.benchOverhead") {
		t.Fatal("go tool nm lists no main.benchOverhead in slowpoke: the check below would pass for nothing")
	}
	if strings.Contains(string(syms), "main.benchMethods") || strings.Contains(string(syms), "main.labBenches") {
		t.Error("slowpoke carries the lab's code (main.benchMethods or main.labBenches)")
	}
}
