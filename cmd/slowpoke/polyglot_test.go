//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requirePolyglot skips a test that needs python3, node and java, unless
// SLOWPOKE_REQUIRE_POLYGLOT is set (as in CI), where their absence fails it.
func requirePolyglot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the polyglot example")
	}
	for _, tool := range []string{"python3", "node", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("SLOWPOKE_REQUIRE_POLYGLOT") != "" {
				t.Fatalf("%s is not on the PATH, and SLOWPOKE_REQUIRE_POLYGLOT is set", tool)
			}
			t.Skipf("%s is not on the PATH", tool)
		}
	}
}

// runPolyglot runs slowpoke with args on examples/polyglot and returns its
// results.json, checking that nothing of the run is left behind.
func runPolyglot(t *testing.T, args ...string) (results []byte, stdout, stderr string) {
	t.Helper()
	return runPolyglotSpec(t, "app.yaml", args...)
}

// runPolyglotSpec is runPolyglot with another spec of examples/polyglot.
func runPolyglotSpec(t *testing.T, specFile string, args ...string) (results []byte, stdout, stderr string) {
	t.Helper()
	bin := buildSlowpoke(t)
	work := t.TempDir()
	out := filepath.Join(work, "out")
	spec, err := filepath.Abs(filepath.Join("..", "..", "examples", "polyglot", specFile))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(append([]string{args[0], "-f", spec}, args[1:]...), "--out", out)...)
	marker := filepath.Join(work, "marker")
	cmd.Env = append(os.Environ(), "SLOWPOKE_TEST_MARKER="+marker)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := runWithTimeout(cmd, 5*time.Minute); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", args[0], err, so.String(), se.String())
	}
	checkNoLeftovers(t, marker)
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b, so.String(), se.String()
}

// validate on a Python, Node.js and Java application that has no slowpoke
// code: the Java bottleneck's rounds follow its CPU time, its calls per
// request (1.5) are learned from its ground-truth knob, and the prediction
// at 40% is validated and above the baseline (a direction only: the
// accuracy is the lab's benchmarks', docs/lab.md).
func TestPolyglotValidate(t *testing.T) {
	requirePolyglot(t)
	b, stdout, _ := runPolyglot(t, "validate", "--target", "pricing", "--reduce", "40%", "--reps", "1", "--max-reps", "2", "--duration", "2s")
	var res struct {
		Trigger      string   `json:"trigger"`
		CallsCounted bool     `json:"calls_counted"`
		TruthC1      *float64 `json:"truth_c1"`
		Baseline     struct {
			RPS float64 `json:"rps"`
		} `json:"baseline"`
		Points []struct {
			PredictedRPS float64  `json:"predicted_rps"`
			ErrorPct     *float64 `json:"error_pct"`
		} `json:"points"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Trigger != "cpu" || res.CallsCounted {
		t.Errorf("trigger %q, calls counted %v: want cpu for an uninstrumented target", res.Trigger, res.CallsCounted)
	}
	if res.TruthC1 == nil || *res.TruthC1 < 1.2 || *res.TruthC1 > 1.8 {
		t.Errorf("calls per request from the knob: %v, want about 1.5", res.TruthC1)
	}
	if len(res.Points) != 1 || res.Points[0].ErrorPct == nil {
		t.Fatalf("want one validated point:\n%s", b)
	}
	p := res.Points[0]
	t.Logf("40%%: predicted %.0f req/s, error %+.1f%%; baseline %.0f req/s", p.PredictedRPS, *p.ErrorPct, res.Baseline.RPS)
	if p.PredictedRPS <= res.Baseline.RPS {
		t.Errorf("predicted %.0f req/s against a baseline of %.0f: pricing is the bottleneck, 40%% should gain far more", p.PredictedRPS, res.Baseline.RPS)
	}
	if !strings.Contains(stdout, "trigger") || !strings.Contains(stdout, "not instrumented") {
		t.Errorf("the table does not say what the rounds followed:\n%s", stdout)
	}
}

// rank on the polyglot example puts its planted bottleneck, pricing, first.
func TestPolyglotRank(t *testing.T) {
	requirePolyglot(t)
	b, stdout, _ := runPolyglot(t, "rank", "--reduce", "50%", "--reps", "1", "--max-reps", "1", "--duration", "2s")
	var res struct {
		Entries []struct {
			Service string `json:"service"`
			Verdict string `json:"verdict"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 3 || res.Entries[0].Service != "pricing" || res.Entries[0].Verdict != "gain" {
		t.Errorf("want pricing first with a gain of 3 services:\n%s", stdout)
	}
}

// What an uninstrumented target cannot do is refused with the reason and
// what to do instead, and the run leaves nothing behind.
func TestPolyglotRefusals(t *testing.T) {
	requirePolyglot(t)
	bin := buildSlowpoke(t)
	spec, err := filepath.Abs(filepath.Join("..", "..", "examples", "polyglot", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"predict", "--target", "pricing", "--reduce", "300us"}, []string{"time per call", `"pricing" is not instrumented`, "30%"}},
		{[]string{"predict", "--target", "pricing", "--reduce", "30%", "--trigger", "calls"}, []string{`"pricing" is not instrumented`, "--trigger cpu"}},
	} {
		t.Run(tc.args[len(tc.args)-1], func(t *testing.T) {
			work := t.TempDir()
			cmd := exec.Command(bin, append(append([]string{tc.args[0], "-f", spec}, tc.args[1:]...), "--out", filepath.Join(work, "out"))...)
			marker := filepath.Join(work, "marker")
			cmd.Env = append(os.Environ(), "SLOWPOKE_TEST_MARKER="+marker)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			if err := runWithTimeout(cmd, 3*time.Minute); err == nil {
				t.Fatalf("accepted:\n%s", se.String())
			}
			checkNoLeftovers(t, marker)
			for _, w := range tc.want {
				if !strings.Contains(se.String(), w) {
					t.Errorf("the error does not say %q:\n%s", w, se.String())
				}
			}
		})
	}
}

// validate on catalog, which exports OpenTelemetry spans through Node.js's
// zero-code agent in examples/polyglot/otel.yaml (its package.json,
// installed by npm ci):
// its calls are counted from its spans, so a reduction in time per call
// is accepted, c1 is about 1 (one catalog call per order) and the ground
// truth removes exactly that time per call (the point is validated; how
// near the truth it comes is the lab's benchmarks', docs/lab.md).
func TestPolyglotSpans(t *testing.T) {
	requirePolyglot(t)
	agent := filepath.Join("..", "..", "examples", "polyglot", "node_modules", "@opentelemetry", "auto-instrumentations-node")
	if _, err := os.Stat(agent); err != nil {
		if os.Getenv("SLOWPOKE_REQUIRE_POLYGLOT") != "" {
			t.Fatalf("catalog's OpenTelemetry agent is missing (npm ci in examples/polyglot), and SLOWPOKE_REQUIRE_POLYGLOT is set: %v", err)
		}
		t.Skip("needs `npm ci` in examples/polyglot")
	}
	b, stdout, stderr := runPolyglotSpec(t, "otel.yaml", "validate", "--target", "catalog", "--reduce", "100us", "--reps", "1", "--max-reps", "2", "--duration", "3s")
	var res struct {
		Trigger      string   `json:"trigger"`
		CallsCounted bool     `json:"calls_counted"`
		CallsFrom    string   `json:"calls_from"`
		TruthC1      *float64 `json:"truth_c1"`
		C1           float64  `json:"c1"`
		Points       []struct {
			DUS      float64  `json:"reduction_us"`
			ErrorPct *float64 `json:"error_pct"`
		} `json:"points"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Trigger != "cpu" || !res.CallsCounted || res.CallsFrom != "spans" || res.TruthC1 != nil {
		t.Errorf("trigger %q, calls counted %v from %q, truth c1 %v: want cpu, counted from spans, no calibration", res.Trigger, res.CallsCounted, res.CallsFrom, res.TruthC1)
	}
	if res.C1 < 0.8 || res.C1 > 1.2 {
		t.Errorf("c1 %.3f from the spans, want about 1", res.C1)
	}
	if len(res.Points) != 1 || res.Points[0].ErrorPct == nil || res.Points[0].DUS != 100 {
		t.Fatalf("want one validated point of 100 µs per call:\n%s", b)
	}
	t.Logf("100 µs: error %+.1f%%", *res.Points[0].ErrorPct)
	if !strings.Contains(stdout, "OpenTelemetry spans") || !strings.Contains(stderr, "SERVER spans") {
		t.Errorf("the run does not say its calls were counted from spans:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}
