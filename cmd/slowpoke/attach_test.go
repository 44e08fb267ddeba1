//go:build e2e

package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startAttachedDemo starts the demo by a shell script (launchAttachedDemo)
// and waits until it answers. The script's process group is continued
// and killed when the test ends, pass or fail.
func startAttachedDemo(t *testing.T, bin string) *attachedDemo {
	t.Helper()
	return startAttached(t, func(dir string) (*attachedDemo, error) { return launchAttachedDemo(dir, bin) })
}

// startAttached starts an attached demo by launch (launchAttachedDemo or
// launchAttachedTopology) in a temporary directory, as startAttachedDemo.
func startAttached(t *testing.T, launch func(dir string) (*attachedDemo, error)) *attachedDemo {
	t.Helper()
	a, err := launch(t.TempDir())
	if a != nil {
		t.Cleanup(a.stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// checkAsBefore waits (boundedly) until every service process runs as it
// did before slowpoke attached: the same process, not stopped, not
// frozen, in its freezer cgroup, every thread it had on its cores with
// its nice value.
func (a *attachedDemo) checkAsBefore(t *testing.T, after string) {
	t.Helper()
	for _, d := range a.waitAsBefore(20 * time.Second) {
		t.Errorf("%s: %s", after, d)
	}
	if err := a.answers(); err != nil {
		t.Errorf("%s: the demo does not answer any more: %v", after, err)
	}
}

// The demo started by a plain shell script, predicted attached: slowpoke
// finds it by port and PID file, pauses it (its target's rounds follow
// its CPU, as nothing is counted), and leaves it running as before.
func TestAttachPredict(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	a := startAttachedDemo(t, bin)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "predict", "-f", a.spec, "--target", "cart", "--reduce", "0,50%", "--reps", "1", "--duration", "2s", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("predict: %v\n%s", err, b)
	}
	t.Logf("%s", b)
	for _, want := range []string{`attaching to 4 services of "demo-attached"`, "cart: attached to {pid_file: " + filepath.Join(a.dir, "cart.pid") + "} (processes [" + strconv.Itoa(a.pids["cart"]) + "])", "rounds followed cart's CPU time"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	var res struct {
		Baseline struct{ RPS float64 } `json:"baseline"`
		Deployed struct {
			RPS float64 `json:"rps"`
			CPU *struct {
				ServicesUS map[string]float64 `json:"services_us"`
				MachineUS  float64            `json:"machine_us"`
			} `json:"cpu"`
		} `json:"deployed_baseline"`
		Points []struct {
			ReductionPct float64 `json:"reduction_pct"`
			PredictedRPS float64 `json:"predicted_rps"`
			BoundRPS     float64 `json:"deployed_bound_rps"`
		} `json:"points"`
	}
	readResultsJSON(t, out, &res)
	if len(res.Points) != 2 || res.Baseline.RPS <= 0 {
		t.Fatalf("results: %+v", res)
	}
	// Generous, as the started demo's end-to-end test: halving the
	// bottleneck's cost must predict clearly more than the baseline.
	if p := res.Points[1]; p.PredictedRPS < 1.2*res.Baseline.RPS {
		t.Errorf("50%%: predicted %.0f req/s, baseline %.0f: no speedup seen", p.PredictedRPS, res.Baseline.RPS)
	}
	// As deployed, before slowpoke pinned anything: every service's CPU
	// per request read, cart's the largest (it is the demo's
	// bottleneck), and the 50% point's bound above the deployed
	// throughput, the 0% point's at it.
	if c := res.Deployed.CPU; c == nil || len(c.ServicesUS) != 4 || c.MachineUS <= 0 {
		t.Errorf("deployed CPU use: %+v", c)
	} else {
		for name, us := range c.ServicesUS {
			if us <= 0 || name != "cart" && us >= c.ServicesUS["cart"] {
				t.Errorf("deployed CPU per request %v: %s's is not below cart's", c.ServicesUS, name)
			}
		}
	}
	if p0, p50 := res.Points[0], res.Points[1]; p50.BoundRPS <= res.Deployed.RPS || math.Abs(p0.BoundRPS/res.Deployed.RPS-1) > 1e-9 {
		t.Errorf("deployed %.0f req/s, bounds at 0%% and 50%%: %.0f, %.0f", res.Deployed.RPS, p0.BoundRPS, p50.BoundRPS)
	}
	a.checkAsBefore(t, "after predict")
	checkNoFrozenCgroups(t, cmd.Process.Pid)

	// validate needs to restart the target, which has no command.
	v := exec.Command(bin, "validate", "-f", a.spec, "--target", "cart", "--reduce", "50%", "--out", filepath.Join(t.TempDir(), "v"))
	b, err = v.CombinedOutput()
	if err == nil || !strings.Contains(string(b), `service "cart" is attached to (attach: {pid_file: `) || !strings.Contains(string(b), "has no command") {
		t.Errorf("validate on an attached target without a command: %v\n%s", err, b)
	}
}

// An application whose services need the machine's cores together when
// unpinned (the crowded demo): slowpoke's placement, cart on a core of
// its own, moves what binds. The answer says so: both baselines, the
// bound for the deployed placement, and where slowpoke's own prediction
// shows little gain that the bound leaves room for, that it does not rule
// a gain out.
func TestAttachCrowded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	waitDemoPortsFree(t, 3*time.Minute)
	a := startAttached(t, func(dir string) (*attachedDemo, error) {
		return launchAttachedTopology(dir, bin, []byte(crowdedTopology))
	})
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "predict", "-f", a.spec, "--target", "cart", "--reduce", "80%", "--reps", "1", "--duration", "2s", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("predict: %v\n%s", err, b)
	}
	t.Logf("%s", b)
	var res struct {
		Baseline struct{ RPS float64 } `json:"baseline"`
		Deployed struct {
			RPS float64 `json:"rps"`
		} `json:"deployed_baseline"`
		Points []struct {
			PredictedRPS float64 `json:"predicted_rps"`
			HighRPS      float64 `json:"interval_high_rps"`
			BoundRPS     float64 `json:"deployed_bound_rps"`
		} `json:"points"`
	}
	readResultsJSON(t, out, &res)
	if len(res.Points) != 1 || res.Deployed.RPS <= 0 {
		t.Fatalf("results: %+v", res)
	}
	p := res.Points[0]
	// Cart 80% cheaper frees some 700 µs of the 2 cores' ~2.5 ms per
	// request as deployed: the bound is well above +10%.
	if p.BoundRPS < 1.1*res.Deployed.RPS {
		t.Errorf("deployed %.0f req/s, bound at 80%%: %.0f", res.Deployed.RPS, p.BoundRPS)
	}
	for _, want := range []string{"as deployed", "could raise that to at most"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	if high := max(p.HighRPS, p.PredictedRPS); high < 1.1*res.Baseline.RPS && !strings.Contains(string(b), "does not rule out a gain") {
		t.Errorf("predicted at most %.0f against a baseline of %.0f, the bound %.0f: the output does not say that a gain is not ruled out", high, res.Baseline.RPS, p.BoundRPS)
	}
	a.checkAsBefore(t, "after predict")
}

// Under --placement keep, slowpoke pins nothing: every thread of every
// attached service keeps the cores its user gave it for the whole run
// (watched while the run goes on), and the run says the placement was
// kept.
func TestAttachKeep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	waitDemoPortsFree(t, 3*time.Minute)
	a := startAttachedDemo(t, bin)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "predict", "-f", a.spec, "--target", "cart", "--placement", "keep", "--reduce", "50%", "--reps", "1", "--duration", "2s", "--out", out)
	var output lockedBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pinned := map[string]bool{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var err error
watch:
	for {
		select {
		case err = <-done:
			break watch
		case <-tick.C:
			for _, c := range a.changes() {
				if changeKind(c) == "pinned" {
					pinned[c] = true
				}
			}
		}
	}
	if err != nil {
		t.Fatalf("predict: %v\n%s", err, output.String())
	}
	t.Logf("%s", output.String())
	for c := range pinned {
		t.Errorf("moved to other cores during the run: %s", c)
	}
	var res struct {
		Settings struct {
			PlacementMode string `json:"placement_mode"`
		} `json:"settings"`
		Points []struct {
			PredictedRPS float64 `json:"predicted_rps"`
		} `json:"points"`
	}
	readResultsJSON(t, out, &res)
	if res.Settings.PlacementMode != "keep" || len(res.Points) != 1 || res.Points[0].PredictedRPS <= 0 {
		t.Errorf("results: %+v", res)
	}
	if !strings.Contains(output.String(), "nothing pinned") {
		t.Errorf("the run does not say that nothing was pinned")
	}
	a.checkAsBefore(t, "after predict")
}

// The orchestrator, a controller (a paused service's) and the guard
// SIGKILLed in turn, in the middle of slowdown runs, by signals and by
// freezing: every time, the demo started by the script is left running
// as before (nothing stopped, frozen, pinned or moved), and nothing of
// slowpoke's is left.
func TestAttachFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	a := startAttachedDemo(t, bin)
	trials := []struct{ victim, method string }{
		{"orchestrator", "signal"},
		{"controller", "signal"},
		{"guard", "signal"},
		{"orchestrator", "cgroup"},
		{"controller", "cgroup"},
		{"guard", "cgroup"},
	}
	for i, tr := range trials {
		t.Run(tr.victim+" "+tr.method, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			r := runFaultTrial(bin, a, tr.victim, tr.method, i, out)
			if r.Err != "" {
				t.Fatalf("%s:\n%s", r.Err, r.Output)
			}
			if tr.victim != "orchestrator" && r.RunSucceeded {
				t.Errorf("the run went on to succeed after its %s was killed", tr.victim)
			}
			after := "after the " + tr.victim + " was killed"
			for _, d := range r.Left {
				t.Errorf("%s: %s", after, d)
			}
			if r.AnswerErr != "" {
				t.Errorf("%s: the demo does not answer any more: %s", after, r.AnswerErr)
			}
			if len(r.Leftovers) > 0 {
				t.Errorf("processes left behind:\n%s", strings.Join(r.Leftovers, "\n"))
			}
			for _, f := range r.FrozenCgroups {
				t.Error(f)
			}
			t.Logf("killed %.1f s into the slowdown runs (%s); seen after: %v; as before after %.0f ms; run: %s", r.KilledAfterS, r.Paused, r.Seen, r.RecoveryMS, r.RunEnd)
			if t.Failed() {
				t.Logf("orchestrator's output:\n%s", r.Output)
				if b, err := os.ReadFile(filepath.Join(out, "logs", "guard.log")); err == nil {
					t.Logf("guard.log:\n%s", b)
				}
			}
		})
	}
}

// readResultsJSON reads out/results.json into v.
func readResultsJSON(t *testing.T, out string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
