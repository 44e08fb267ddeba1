//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/suite"
)

// latency --validate on the fan-out shape of the latency suite, in real
// processes: every part of the output is there, the predicted p50 is
// faster than the baseline (a direction only: bench latency measures the
// accuracy, docs/lab.md), and nothing is left behind: no process, no
// delay store.
func TestLatencyFanout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an emulated application")
	}
	bin, work, spec := latencyCase(t, "lat-fanout")
	out := filepath.Join(work, "out")
	marker := filepath.Join(work, "marker")
	cmd := exec.Command(bin, "latency", "-f", spec, "--target", "target", "--reduce", "50%", "--validate",
		"--rate", "150", "--requests", "300", "--duration", "2s", "--warmup", "500ms", "--out", out, "--print-json")
	cmd.Env = append(os.Environ(), "SLOWPOKE_TEST_MARKER="+marker)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runWithTimeout(cmd, 3*time.Minute); err != nil {
		t.Fatalf("latency: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	checkNoLeftovers(t, marker)
	pid := strconv.Itoa(cmd.Process.Pid)
	if left, _ := filepath.Glob("/dev/shm/slowpoke-delays-" + pid + "-*"); len(left) > 0 {
		t.Errorf("delay store left behind: %v", left)
	}

	var res struct {
		Kind            string  `json:"kind"`
		BaselineBusyPct float64 `json:"baseline_busy_pct"`
		Baseline        []struct {
			Request string  `json:"request"`
			P50MS   float64 `json:"p50_ms"`
			N       int     `json:"n"`
		} `json:"baseline"`
		Points []struct {
			Request        string  `json:"request"`
			ReductionUS    float64 `json:"reduction_us"`
			PredictedP50MS float64 `json:"predicted_p50_ms"`
			PredictedP99MS float64 `json:"predicted_p99_ms"`
			TrueP50MS      float64 `json:"true_p50_ms"`
			TrueP99MS      float64 `json:"true_p99_ms"`
			MeanDelayMS    float64 `json:"mean_delay_ms"`
			MannWhitneyP   float64 `json:"mann_whitney_p"`
			PredictedBusy  float64 `json:"predicted_busy_pct"`
			TrueBusy       float64 `json:"true_busy_pct"`
		} `json:"points"`
	}
	checkPrintedJSON(t, stdout.String(), filepath.Join(out, "results.json"))
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Kind != "latency" || len(res.Baseline) != 1 || len(res.Points) != 1 {
		t.Fatalf("results.json: %s", b)
	}
	p := res.Points[0]
	if p.Request != "run" || p.ReductionUS <= 0 || p.PredictedP50MS <= 0 || p.PredictedP99MS < p.PredictedP50MS || p.TrueP50MS <= 0 || p.TrueP99MS <= 0 {
		t.Errorf("point: %+v", p)
	}
	// The target's branch had the most work: a reduction shortens every
	// request, by at most the reduction; the other branches wait for it.
	if p.MeanDelayMS < p.ReductionUS/1e3 {
		t.Errorf("mean inserted delay %.3fms, less than the reduction %.0fus", p.MeanDelayMS, p.ReductionUS)
	}
	// Near the truth, within the generous bound this test had before the
	// tiers: the truth itself is only a few percent below the baseline
	// here (2.35 against 2.45 ms in one run), so "below the baseline"
	// was a direction within the noise, and failed once in three runs.
	if e := (p.PredictedP50MS - p.TrueP50MS) / p.TrueP50MS; math.Abs(e) > 0.4 {
		t.Errorf("predicted p50 %.2fms, true %.2fms: off by %.0f%%\nstdout:\n%s", p.PredictedP50MS, p.TrueP50MS, e*100, stdout.String())
	}
	// The cores' busy share of every kind of run, from /proc/stat.
	for _, busy := range []float64{res.BaselineBusyPct, p.PredictedBusy, p.TrueBusy} {
		if busy <= 0 || busy > 100 {
			t.Errorf("cores busy: baseline %v%%, predicting %v%%, truth %v%%; want each in (0, 100]", res.BaselineBusyPct, p.PredictedBusy, p.TrueBusy)
			break
		}
	}
	if res.Baseline[0].N < 200 {
		t.Errorf("baseline measured %d responses", res.Baseline[0].N)
	}
	for _, f := range []string{"report.html", "cdf-run.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(stdout.String(), "predictions within") || !strings.Contains(stdout.String(), "cores busy: baseline ") {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
}

// bench latency --holds predicts by holding the other services' cores, on
// real processes: the prediction is there (how near the truth it comes is
// bench latency's to measure: holds have come out 30-98% above the truth,
// which can be above the baseline, so not even a direction is asserted),
// and the held-time file is gone afterwards.
func TestLatencyHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an emulated application")
	}
	run := runBenchLatency(t, "--holds", "--holds-batch", "4")
	stdout := &run.stdout
	if run.err != nil && strings.Contains(run.stdout.String()+run.stderr.String(), "real-time scheduling") {
		t.Skip("no real-time scheduling here: the cores cannot be held")
	}
	if run.err != nil {
		t.Fatalf("bench latency --holds: %v\nstdout:\n%s\nstderr:\n%s", run.err, run.stdout.String(), run.stderr.String())
	}
	if left, _ := filepath.Glob("/dev/shm/slowpoke-held-" + strconv.Itoa(run.pid) + "-*"); len(left) > 0 {
		t.Errorf("held-time file left behind: %v", left)
	}
	var res struct {
		Baseline []struct {
			P50MS float64 `json:"p50_ms"`
		} `json:"baseline"`
		Points []struct {
			TrueP50MS   float64 `json:"true_p50_ms"`
			Diagnostics struct {
				Holds *struct {
					P50MS float64 `json:"p50_ms"`
					N     int     `json:"n"`
				} `json:"holds"`
				HoldsBusyPct   float64 `json:"holds_busy_pct"`
				HoldsErrP50Pct float64 `json:"holds_err_p50_pct"`
				HoldsBatch     int     `json:"holds_batch"`
				HoldsBatched   *struct {
					P50MS float64 `json:"p50_ms"`
					N     int     `json:"n"`
				} `json:"holds_batched"`
				HoldsBatchedErrP50Pct float64 `json:"holds_batched_err_p50_pct"`
			} `json:"diagnostics"`
		} `json:"points"`
	}
	b := run.results(t, &res)
	if len(res.Baseline) != 1 || len(res.Points) != 1 || res.Points[0].Diagnostics.Holds == nil {
		t.Fatalf("no prediction by holds in results.json: %s", b)
	}
	p := res.Points[0].Diagnostics
	if p.Holds.N < 200 || p.Holds.P50MS <= 0 || p.HoldsBusyPct <= 0 || p.HoldsBusyPct > 100 {
		t.Errorf("prediction by holds: %+v, busy %v%%", *p.Holds, p.HoldsBusyPct)
	}
	t.Logf("p50: baseline %.2fms, by holds %.2fms, true %.2fms (%+.0f%%)", res.Baseline[0].P50MS, p.Holds.P50MS, res.Points[0].TrueP50MS, p.HoldsErrP50Pct)
	if !strings.Contains(stdout.String(), "holds: ") {
		t.Errorf("no summary of the holds on stdout:\n%s", stdout.String())
	}
	// The batched holds, measured beside.
	if p.HoldsBatch != 4 || p.HoldsBatched == nil || p.HoldsBatched.N < 200 || p.HoldsBatched.P50MS <= 0 {
		t.Errorf("batched holds: batch %d, %+v\nstdout:\n%s", p.HoldsBatch, p.HoldsBatched, stdout.String())
	}
	if !strings.Contains(stdout.String(), "holds of 4 times the reduction every 4 calls: ") {
		t.Errorf("no summary of the batched holds on stdout:\n%s", stdout.String())
	}
}

// benchLatencyRun is one run of bench latency on one case.
type benchLatencyRun struct {
	pid            int
	out            string
	stdout, stderr bytes.Buffer
	err            error
}

// runBenchLatency runs bench latency with flags on the latency suite's
// sequential shape (one run, 300 responses) and checks that it left no
// process behind.
func runBenchLatency(t *testing.T, flags ...string) *benchLatencyRun {
	t.Helper()
	bin, work, spec := latencyCase(t, "lat-sequential")
	r := &benchLatencyRun{out: filepath.Join(work, "out")}
	marker := filepath.Join(work, "marker")
	args := append([]string{"bench", "latency", "--cases", spec + "=target", "--runs", "1", "--requests", "300", "--out", r.out}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SLOWPOKE_TEST_MARKER="+marker)
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	r.err = runWithTimeout(cmd, 3*time.Minute)
	if cmd.Process != nil {
		r.pid = cmd.Process.Pid
	}
	checkNoLeftovers(t, marker)
	return r
}

// results reads the case's results.json into v and returns it.
func (r *benchLatencyRun) results(t *testing.T, v any) []byte {
	t.Helper()
	results, _ := filepath.Glob(filepath.Join(r.out, "01-*", "results.json"))
	if len(results) != 1 {
		t.Fatalf("results: %v", results)
	}
	b, err := os.ReadFile(results[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
	return b
}

// latencyCase builds slowpoke (with the emulator beside it) and writes the
// latency suite's configuration name to a temporary directory: the binary,
// the directory and the spec's path.
func latencyCase(t *testing.T, name string) (bin, work, spec string) {
	t.Helper()
	bin = buildLab(t)
	if err := os.Symlink(bin, filepath.Join(filepath.Dir(bin), emuName)); err != nil {
		t.Fatal(err)
	}
	cfgs, err := suite.Latency(1)
	if err != nil {
		t.Fatal(err)
	}
	work = t.TempDir()
	for _, c := range cfgs {
		if c.Name == name {
			if spec, err = suite.Write(work, c); err != nil {
				t.Fatal(err)
			}
			return bin, work, spec
		}
	}
	t.Fatalf("no latency configuration %q", name)
	return
}

// bench latency --stretch predicts again with the delay per call
// stretched by the target's wait for a core, on real processes: the
// stretch is measured (at least 1) and the stretched prediction is there.
// No direction is asserted: the variant, tried and not kept, comes out
// 56% fast to 18% slow (docs/notes/latency.md), and its own prediction
// run at the same rate once came out above the baseline's p50 (CI,
// 2026-11-28: 4.12 against 3.12 ms, stretch 2.31).
func TestLatencyStretch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an emulated application")
	}
	run := runBenchLatency(t, "--stretch")
	stdout := &run.stdout
	if run.err != nil {
		t.Fatalf("bench latency --stretch: %v\nstdout:\n%s\nstderr:\n%s", run.err, run.stdout.String(), run.stderr.String())
	}
	var res struct {
		Baseline []struct {
			P50MS float64 `json:"p50_ms"`
		} `json:"baseline"`
		Points []struct {
			Diagnostics struct {
				Stretch   float64 `json:"stretch"`
				Stretched *struct {
					P50MS float64 `json:"p50_ms"`
					N     int     `json:"n"`
				} `json:"stretched"`
				StretchedErrP50Pct float64 `json:"stretched_err_p50_pct"`
			} `json:"diagnostics"`
		} `json:"points"`
	}
	b := run.results(t, &res)
	if len(res.Baseline) != 1 || len(res.Points) != 1 || res.Points[0].Diagnostics.Stretched == nil {
		t.Fatalf("no stretched prediction in results.json: %s", b)
	}
	p := res.Points[0].Diagnostics
	// Neither accuracy nor direction (bench latency's to measure, in
	// docs/notes/latency.md): a measured stretch and a p50 from enough
	// responses.
	if base := res.Baseline[0].P50MS; p.Stretch < 1 || p.Stretch > 10 || p.Stretched.N < 200 || p.Stretched.P50MS <= 0 {
		t.Errorf("stretched prediction: stretch %.2f, %+v, p50 off by %+.0f%%, baseline p50 %.2fms\nstdout:\n%s", p.Stretch, *p.Stretched, p.StretchedErrP50Pct, base, stdout.String())
	}
	if !strings.Contains(stdout.String(), "stretched: ") {
		t.Errorf("no summary of the stretched prediction on stdout:\n%s", stdout.String())
	}
}
