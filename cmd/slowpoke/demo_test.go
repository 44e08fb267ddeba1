//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func checkNoLeftovers(t *testing.T, marker string) {
	t.Helper()
	// Give exiting processes time to be ended and reaped: after a kill
	// the guard drains its messages (up to 1 s) and gives services 3 s
	// after SIGTERM, longer on a busy machine.
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := leftovers(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	// A relative output directory, as the README's command uses by default.
	work := t.TempDir()
	out := filepath.Join(work, "out")
	cmd := exec.Command(bin, "demo", "--reps", "1", "--duration", "1s", "--reduce", "0,50%", "--out", "out")
	cmd.Dir = work
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runWithTimeout(cmd, 3*time.Minute); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	checkNoLeftovers(t, out)

	var res struct {
		Baseline struct{ RPS float64 } `json:"baseline"`
		C1       float64               `json:"c1"`
		Points   []struct {
			ReductionPct float64 `json:"reduction_pct"`
			PredictedRPS float64 `json:"predicted_rps"`
			SlowdownRPS  float64 `json:"slowdown_rps"`
		} `json:"points"`
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Baseline.RPS <= 0 || len(res.Points) != 2 || res.C1 < 0.8 || res.C1 > 1.2 {
		t.Fatalf("unexpected results: %+v", res)
	}
	// Generous (1 s windows on a noisy machine): halving the bottleneck's
	// cost must not predict less than the baseline, and the pauses must
	// not make the application faster than the baseline.
	// The 0% point is a second measurement of the unmodified application
	// (rounds, no pauses); the larger of the two is the reference, since a
	// single 1 s window can be disturbed by whatever else the machine runs.
	p50 := res.Points[1]
	ref := max(res.Baseline.RPS, res.Points[0].SlowdownRPS)
	if p50.PredictedRPS < 0.9*ref || p50.SlowdownRPS > 1.25*ref {
		t.Errorf("curve makes no sense: baseline %.0f, points %+v", res.Baseline.RPS, res.Points)
	}
	for _, f := range []string{"plot.png", "plot.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing: %v", f, err)
		}
	}
	if !strings.Contains(stdout.String(), "predicted req/s") {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
}

func TestDemoInterruptedLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "demo", "--reps", "1", "--duration", "5s", "--reduce", "0,50%", "--out", out)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	// Interrupt in the middle of a slowdown run, when services are being
	// paused.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "baseline") && strings.Contains(sc.Text(), "c1 =") {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("exit after SIGINT: %v, want status 130", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop within 30s of SIGINT")
	}
	checkNoLeftovers(t, out)
}

func runWithTimeout(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	return waitExit(cmd, d)
}

// waitExit waits for a started cmd, killing it after d.
func waitExit(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return &timeoutError{d}
	}
}

type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string { return "timed out after " + e.d.String() }
