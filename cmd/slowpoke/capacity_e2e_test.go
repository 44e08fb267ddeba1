//go:build e2e

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The demo at 80% leaves the shared core (nearly) without idle time in
// its slowdown runs on a 2-core machine: validate then makes capacity runs
// (the application unslowed, the shared core held by real-time threads
// for a share of every 100 ms), says so, raises the point to their
// capacity where that is above what it measured, but no further than the
// measured inflation of the shared services' CPU per request allows,
// keeps the measured value, and leaves nothing behind.
func TestCapacityRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	// The demo's ports: an attached demo of the test before may still
	// be letting them go.
	waitDemoPortsFree(t, time.Minute)
	dir := demoSpecDir(t, bin)
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "validate", "-f", filepath.Join(dir, "app.yaml"), "--target", "cart", "--reduce", "80%",
		"--reps", "1", "--max-reps", "1", "--duration", "2s", "--pause", "cores", "--placement", "shared", "--out", out)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runWithTimeout(cmd, 5*time.Minute); err != nil {
		t.Fatalf("validate: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	checkNoLeftovers(t, dir)
	var res struct {
		Baseline struct {
			RPS float64 `json:"rps"`
		} `json:"baseline"`
		Points []struct {
			PredictedRPS    float64 `json:"predicted_rps"`
			RawPredictedRPS float64 `json:"raw_predicted_rps"`
			IntervalLowRPS  float64 `json:"interval_low_rps"`
			Diagnostics     struct {
				SharedIdlePct     float64 `json:"shared_idle_pct"`
				CapacityRPS       float64 `json:"capacity_rps"`
				CapacityInflation float64 `json:"capacity_inflation"`
			} `json:"diagnostics"`
		} `json:"points"`
	}
	readResultsJSON(t, out, &res)
	if len(res.Points) != 1 {
		t.Fatalf("%d points, want 1", len(res.Points))
	}
	p := res.Points[0]
	progress := stdout.String() + stderr.String()
	t.Logf("idle %.1f%%, capacity %.0f req/s, inflation %.3f, predicted %.0f (measured %.0f), baseline %.0f", p.Diagnostics.SharedIdlePct, p.Diagnostics.CapacityRPS, p.Diagnostics.CapacityInflation, p.PredictedRPS, p.RawPredictedRPS, res.Baseline.RPS)
	if p.Diagnostics.SharedIdlePct >= 5 {
		t.Skipf("the shared core idled %.1f%% of the 80%% point's slowdown run: this machine makes no capacity run for it", p.Diagnostics.SharedIdlePct)
	}
	if !strings.Contains(progress, "capacity run: ") {
		t.Fatalf("no capacity run reported:\n%s", progress)
	}
	if !strings.Contains(progress, "the shared cores' capacity: ") {
		// Every capacity run left the shared core idle or the demo at
		// its baseline: the point must then be as measured.
		if p.Diagnostics.CapacityRPS != 0 || p.RawPredictedRPS != 0 {
			t.Errorf("no capacity measured, yet capacity_rps %.0f, raw_predicted_rps %.0f", p.Diagnostics.CapacityRPS, p.RawPredictedRPS)
		}
		return
	}
	if p.Diagnostics.CapacityRPS <= res.Baseline.RPS {
		t.Errorf("capacity %.0f req/s, not above the baseline's %.0f, which the shared core did not bind", p.Diagnostics.CapacityRPS, res.Baseline.RPS)
	}
	// The demo's services report their CPU: the cause is measured.
	if !(p.Diagnostics.CapacityInflation > 0) {
		t.Errorf("capacity %.0f req/s without capacity_inflation", p.Diagnostics.CapacityRPS)
	}
	if p.RawPredictedRPS > 0 {
		if p.PredictedRPS <= p.RawPredictedRPS || p.IntervalLowRPS > p.RawPredictedRPS {
			t.Errorf("raised point: predicted %.0f, measured %.0f, interval low %.0f: want the estimate above what was measured, and the measured value inside the interval", p.PredictedRPS, p.RawPredictedRPS, p.IntervalLowRPS)
		}
		if p.Diagnostics.CapacityInflation <= 1 || p.PredictedRPS > p.RawPredictedRPS*p.Diagnostics.CapacityInflation*(1+1e-9) {
			t.Errorf("raised point: predicted %.0f, measured %.0f, inflation %.3f: want it raised no further than the inflation allows", p.PredictedRPS, p.RawPredictedRPS, p.Diagnostics.CapacityInflation)
		}
	}
}
