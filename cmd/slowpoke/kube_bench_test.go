//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// Issue 36's benchmark on the cluster: the same predict of the demo
// through the node agent and in template mode, side by side. A benchmark,
// not a check: it runs only where $SLOWPOKE_KUBE_BENCH asks for it, as
//
//	SLOWPOKE_KUBE_BENCH=3 test/kube/e2e.sh -run '^TestKubeAgentBench$'
//
// and reports, never fails on, the targets (within 5% at every point,
// the first point at least 20 s sooner through the agent).

// kubeEnvInt reads a count from the environment: def where it is unset.
func kubeEnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("$%s=%q: want a count", name, v)
	}
	return n
}

func kubeEnvString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// kubeStampedLog is a command's output, each line with the time it came.
type kubeStampedLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []kubeStampedLine
}

type kubeStampedLine struct {
	at   time.Time
	text string
}

func (l *kubeStampedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.partial = append(l.partial, p...)
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			return len(p), nil
		}
		l.lines = append(l.lines, kubeStampedLine{now, string(l.partial[:i])})
		l.partial = l.partial[i+1:]
	}
}

// first returns the time of the first line holding s.
func (l *kubeStampedLog) first(s string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.lines {
		if strings.Contains(ln.text, s) {
			return ln.at, true
		}
	}
	return time.Time{}, false
}

// text returns the log, each line after its time since start.
func (l *kubeStampedLog) text(start time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ln := range l.lines {
		fmt.Fprintf(&b, "%7.2fs %s\n", ln.at.Sub(start).Seconds(), ln.text)
	}
	b.Write(l.partial)
	return b.String()
}

// kubeBenchRun is one predict of the benchmark.
type kubeBenchRun struct {
	Mode       string    `json:"mode"`
	Run        int       `json:"run"` // of its mode, from 1
	Trigger    string    `json:"trigger"`
	BaselineRP float64   `json:"baseline_rps"`
	Reductions []float64 `json:"reduction_pct"`
	Predicted  []float64 `json:"predicted_rps"`
	// Seconds from the command's start: its services under slowpoke
	// (the "placement:" line), its first point predicted, its end.
	PlacementS  float64 `json:"placement_s"`
	FirstPointS float64 `json:"first_point_s"`
	TotalS      float64 `json:"total_s"`
}

// TestKubeAgentBench: predict the demo (one replica of each service, as
// the template mode needs) alternately through the node agent and in
// template mode, $SLOWPOKE_KUBE_BENCH times each (at least 2), the
// order swapped every pair (agent, template, template, agent, ...);
// $SLOWPOKE_KUBE_BENCH_REDUCE (0,40,80%) and $SLOWPOKE_KUBE_BENCH_REPS
// (2) shape each predict, and $SLOWPOKE_KUBE_BENCH_TEMPLATE_TRIGGER, if
// set, is the template runs' --trigger (cpu: the agent's, to tell the
// trigger's part from the pausing's). It logs, per point, both modes' predictions and
// their difference, and each run's time to its first point; with
// $SLOWPOKE_KUBE_BENCH_OUT, it writes there every run's log and
// results.json, and bench.json. Each agent run must leave the pods as
// they were, each template run the Deployments restored.
func TestKubeAgentBench(t *testing.T) {
	runs := kubeEnvInt(t, "SLOWPOKE_KUBE_BENCH", 0)
	if runs == 0 {
		t.Skip("a benchmark of several minutes, not a check: set SLOWPOKE_KUBE_BENCH=N (N predicts per mode, at least 2) to run it, e.g. SLOWPOKE_KUBE_BENCH=3 test/kube/e2e.sh -run '^TestKubeAgentBench$'")
	}
	runs = max(runs, 2)
	reduce := kubeEnvString("SLOWPOKE_KUBE_BENCH_REDUCE", "0,40,80%")
	reps := kubeEnvString("SLOWPOKE_KUBE_BENCH_REPS", "2")
	outDir := os.Getenv("SLOWPOKE_KUBE_BENCH_OUT")
	if outDir != "" {
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := setupKube(t)
	var all []kubeBenchRun
	n := map[string]int{}
	for i := 0; i < runs; i++ {
		order := []string{"agent", "template"}
		if i%2 == 1 {
			order = []string{"template", "agent"}
		}
		for _, mode := range order {
			n[mode]++
			r := e.benchPredict(t, mode, n[mode], reduce, reps, outDir)
			all = append(all, r)
			t.Logf("%s run %d: trigger %s, baseline %.0f req/s, predicted %v req/s at %v%%; placement %.1fs, first point %.1fs, done %.1fs",
				mode, r.Run, r.Trigger, r.BaselineRP, kubeRoundAll(r.Predicted), r.Reductions, r.PlacementS, r.FirstPointS, r.TotalS)
		}
	}
	t.Logf("\n%s", kubeBenchTables(all))
	if outDir != "" {
		b, _ := json.MarshalIndent(all, "", "  ")
		if err := os.WriteFile(filepath.Join(outDir, "bench.json"), b, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// benchPredict runs one predict of the benchmark in mode and checks that
// it left the application as it should.
func (e *kubeEnv) benchPredict(t *testing.T, mode string, run int, reduce, reps, outDir string) kubeBenchRun {
	t.Helper()
	out := t.TempDir()
	var before map[string]int32
	if mode == "agent" {
		before = e.podState(t)
	}
	args := []string{"predict", "-f", demoKubeSpec, "--target", "cart", "--kube-mode", mode, "--reduce", reduce,
		"--reps", reps, "--max-reps", reps, "--duration", "2s", "--warmup", "500ms", "--out", out}
	if tr := os.Getenv("SLOWPOKE_KUBE_BENCH_TEMPLATE_TRIGGER"); tr != "" && mode == "template" {
		args = append(args, "--trigger", tr)
	}
	cmd := e.command(args...)
	log := &kubeStampedLog{}
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	err := runWithTimeout(cmd, 8*time.Minute)
	end := time.Now()
	if outDir != "" {
		os.WriteFile(filepath.Join(outDir, fmt.Sprintf("%s-%d.log", mode, run)), []byte(log.text(start)), 0o644)
		if b, err := os.ReadFile(filepath.Join(out, "results.json")); err == nil {
			os.WriteFile(filepath.Join(outDir, fmt.Sprintf("%s-%d.json", mode, run)), b, 0o644)
		}
	}
	if err != nil {
		t.Fatalf("predict --kube-mode %s: %v\n%s", mode, err, log.text(start))
	}
	if mode == "agent" && !strings.Contains(log.text(start), "node agent: DaemonSet") {
		t.Errorf("the agent run did not go through the node agent:\n%s", log.text(start))
	}
	res, err := report.ReadJSON(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := kubeBenchRun{Mode: mode, Run: run, Trigger: res.Trigger, BaselineRP: res.Baseline.RPS, TotalS: end.Sub(start).Seconds()}
	for _, p := range res.Points {
		r.Reductions = append(r.Reductions, p.ReductionPct)
		r.Predicted = append(r.Predicted, p.PredictedRPS)
	}
	if at, ok := log.first("placement:"); ok {
		r.PlacementS = at.Sub(start).Seconds()
	}
	at, ok := log.first("-> predicted")
	if !ok {
		t.Fatalf("no point predicted in the log:\n%s", log.text(start))
	}
	r.FirstPointS = at.Sub(start).Seconds()
	if mode == "agent" {
		e.checkUntouched(t, before)
	} else {
		e.checkRestored(t)
	}
	return r
}

func kubeRoundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x)
	}
	return out
}

func kubeMean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// kubeBenchTables writes the benchmark's results as Markdown: per point, each
// mode's runs and mean and the difference of the means; per run, its
// times; and whether the targets were met.
func kubeBenchTables(all []kubeBenchRun) string {
	by := map[string][]kubeBenchRun{}
	for _, r := range all {
		by[r.Mode] = append(by[r.Mode], r)
	}
	ag, tp := by["agent"], by["template"]
	var b strings.Builder
	if len(ag) == 0 || len(tp) == 0 {
		return "(no runs of one mode)"
	}
	fmt.Fprintf(&b, "| reduction | agent runs (req/s) | agent mean | template runs (req/s) | template mean | agent vs template |\n|---|---|---|---|---|---|\n")
	worst := 0.0
	for k, red := range ag[0].Reductions {
		var a, tt []float64
		for _, r := range ag {
			if k < len(r.Predicted) {
				a = append(a, r.Predicted[k])
			}
		}
		for _, r := range tp {
			if k < len(r.Predicted) {
				tt = append(tt, r.Predicted[k])
			}
		}
		d := 100 * (kubeMean(a) - kubeMean(tt)) / kubeMean(tt)
		worst = max(worst, math.Abs(d))
		fmt.Fprintf(&b, "| %.0f%% | %s | %.0f | %s | %.0f | %+.1f%% |\n", red, kubeJoinRounded(a), kubeMean(a), kubeJoinRounded(tt), kubeMean(tt), d)
	}
	fmt.Fprintf(&b, "\n| pair | %s |\n|---|%s\n", strings.Join(kubePctHeads(ag[0].Reductions), " | "), strings.Repeat("---|", len(ag[0].Reductions)))
	for i := 0; i < min(len(ag), len(tp)); i++ {
		var cells []string
		for k := range ag[i].Reductions {
			if k < len(tp[i].Predicted) {
				cells = append(cells, fmt.Sprintf("%+.1f%%", 100*(ag[i].Predicted[k]-tp[i].Predicted[k])/tp[i].Predicted[k]))
			}
		}
		fmt.Fprintf(&b, "| agent %d vs template %d | %s |\n", ag[i].Run, tp[i].Run, strings.Join(cells, " | "))
	}
	fmt.Fprintf(&b, "\n| run | trigger | baseline (req/s) | services under slowpoke (s) | first point (s) | whole run (s) |\n|---|---|---|---|---|---|\n")
	for _, r := range all {
		fmt.Fprintf(&b, "| %s %d | %s | %.0f | %.1f | %.1f | %.1f |\n", r.Mode, r.Run, r.Trigger, r.BaselineRP, r.PlacementS, r.FirstPointS, r.TotalS)
	}
	first := func(rs []kubeBenchRun) []float64 {
		var out []float64
		for _, r := range rs {
			out = append(out, r.FirstPointS)
		}
		return out
	}
	sooner := kubeMean(first(tp)) - kubeMean(first(ag))
	fmt.Fprintf(&b, "\nagreement: worst point %.1f%% apart (target within 5%%: %s); first point %.1f s sooner through the agent on average (target at least 20 s: %s)\n",
		worst, kubeMet(worst <= 5), sooner, kubeMet(sooner >= 20))
	return b.String()
}

func kubePctHeads(reds []float64) []string {
	var out []string
	for _, r := range reds {
		out = append(out, fmt.Sprintf("%.0f%%", r))
	}
	return out
}

func kubeJoinRounded(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(math.Round(x), 'f', 0, 64))
	}
	return strings.Join(s, ", ")
}

func kubeMet(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// TestKubeBenchTables: the benchmark's tables and its reading of the
// targets, and the stamped log's first line holding a text.
func TestKubeBenchTables(t *testing.T) {
	reds := []float64{0, 80}
	all := []kubeBenchRun{
		{Mode: "agent", Run: 1, Reductions: reds, Predicted: []float64{100, 200}, FirstPointS: 10},
		{Mode: "template", Run: 1, Reductions: reds, Predicted: []float64{100, 190}, FirstPointS: 35},
		{Mode: "template", Run: 2, Reductions: reds, Predicted: []float64{100, 210}, FirstPointS: 33},
		{Mode: "agent", Run: 2, Reductions: reds, Predicted: []float64{104, 220}, FirstPointS: 12},
	}
	got := kubeBenchTables(all)
	for _, want := range []string{"| 80% | 200, 220 | 210 | 190, 210 | 200 | +5.0% |", "| agent 2 vs template 2 | +4.0% | +4.8% |",
		"worst point 5.0% apart (target within 5%: met); first point 23.0 s sooner through the agent on average (target at least 20 s: met)"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
	var l kubeStampedLog
	start := time.Now()
	fmt.Fprintf(&l, "placement: x\nrep 1 0%% (d = 0s): 10 req/s ")
	if _, ok := l.first("-> predicted"); ok {
		t.Error("a line not yet ended was read")
	}
	fmt.Fprintf(&l, "-> predicted 10 req/s\n")
	if at, ok := l.first("-> predicted"); !ok || at.Before(start) {
		t.Errorf("the first point: %v %v\n%s", at, ok, l.text(start))
	}
}
