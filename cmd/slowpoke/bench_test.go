package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
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
