//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/examples/demo"
)

// screenedRank is what these tests read of a ranking.
type screenedRank struct {
	Partial       bool     `json:"partial"`
	PartialReason string   `json:"partial_reason"`
	Incomplete    bool     `json:"incomplete"`
	NotReached    []string `json:"not_reached"`
	Screening     *struct {
		Order      []string `json:"order"`
		OthersBind []string `json:"others_bind"`
	} `json:"screening"`
	Census *struct {
		Cycles     float64            `json:"cycles"`
		ServicesUS map[string]float64 `json:"services_us"`
		Bounded    []string           `json:"bounded"`
	} `json:"census"`
	Entries []struct {
		Service      string          `json:"service"`
		Stage        string          `json:"stage"`
		Verdict      string          `json:"verdict"`
		Results      json.RawMessage `json:"results"`
		CPUSharePct  *float64        `json:"cpu_share_pct"`
		GainBoundPct *float64        `json:"gain_bound_pct"`
	} `json:"entries"`
}

// rankDemoSetup writes the demo's spec to a temporary directory, with
// the emulator next to the slowpoke binary, and returns the binary, the
// spec and a marker for the run's processes.
func rankDemoSetup(t *testing.T) (bin, spec, marker string) {
	t.Helper()
	bin = buildSlowpoke(t)
	waitDemoPortsFree(t, time.Minute)
	work := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(filepath.Dir(bin), emuName)); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	app := filepath.Join(work, "app")
	os.MkdirAll(app, 0o755)
	fs.WalkDir(demo.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := demo.Files.ReadFile(path)
		return os.WriteFile(filepath.Join(app, path), b, 0o644)
	})
	return bin, filepath.Join(app, "app.yaml"), filepath.Join(work, "marker")
}

func readScreenedRank(t *testing.T, out string) screenedRank {
	t.Helper()
	var r screenedRank
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// rankDemo ranks the demo at 50% with 2 s windows and args, checks that
// it succeeded and left nothing running, and returns its ranking and
// output.
func rankDemo(t *testing.T, args ...string) (screenedRank, []byte) {
	t.Helper()
	bin, spec, marker := rankDemoSetup(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, append([]string{"rank", "-f", spec, "--reduce", "50%", "--duration", "2s", "--warmup", "500ms", "--out", out}, args...)...)
	cmd.Env = append(os.Environ(), "SLOWPOKE_TEST_MARKER="+marker)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rank: %v\n%s", err, b)
	}
	checkNoLeftovers(t, marker)
	return readScreenedRank(t, out), b
}

// checkStages checks that every service has an entry with a stage, and
// that those not reached have no results and are listed.
func checkStages(t *testing.T, r screenedRank, services int) {
	t.Helper()
	if len(r.Entries) != services {
		t.Fatalf("%d entries, want %d", len(r.Entries), services)
	}
	var notReached []string
	for _, e := range r.Entries {
		if !slices.Contains([]string{"bounded", "screened", "confirmed", "failed", "not-reached"}, e.Stage) {
			t.Errorf("%s: stage %q", e.Service, e.Stage)
		}
		if e.Stage == "not-reached" {
			notReached = append(notReached, e.Service)
			if e.Verdict != "not-reached" || len(e.Results) > 0 && string(e.Results) != "null" {
				t.Errorf("%s not reached, but verdict %s and results %s", e.Service, e.Verdict, e.Results)
			}
		}
	}
	if !slices.Equal(notReached, r.NotReached) || r.Incomplete != (len(notReached) > 0) && len(notReached) > 0 {
		t.Errorf("not reached %v, listed %v, incomplete %v", notReached, r.NotReached, r.Incomplete)
	}
}

// interruptRank ranks the demo, sends SIGINT delay after the first
// progress line that holds after, checks that rank exits with status 130
// and leaves no process behind, and returns its ranking and table.
func interruptRank(t *testing.T, after string, delay time.Duration) (screenedRank, string) {
	t.Helper()
	bin, spec, marker := rankDemoSetup(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "rank", "-f", spec, "--reduce", "50%", "--duration", "2s", "--warmup", "500ms", "--out", out)
	cmd.Env = append(os.Environ(), "SLOWPOKE_TEST_MARKER="+marker)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	var log strings.Builder
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), after) {
			break
		}
	}
	go func() {
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
	}()
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGINT)
	err := waitExit(cmd, time.Minute)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit after SIGINT: %v, want status 130\n%s", err, log.String())
	}
	checkNoLeftovers(t, marker)
	r := readScreenedRank(t, out)
	if !r.Partial || !strings.HasPrefix(r.PartialReason, "interrupted") {
		t.Errorf("partial %v (%q), want an interrupted partial ranking", r.Partial, r.PartialReason)
	}
	checkStages(t, r, 4)
	if !strings.Contains(stdout.String(), "PARTIAL: the ranking is partial: interrupted") {
		t.Errorf("the table does not say it is partial:\n%s", stdout.String())
	}
	return r, stdout.String()
}

// Ctrl-C during the screening: rank stops the pauses and the
// application, leaves no process behind, writes the ranking so far marked
// partial, with the services screened and the others not reached, and
// exits with status 130.
func TestRankScreenInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	// Into the next service's screening: pre-profiling, or its
	// slowdown run, when the others are being paused.
	r, _ := interruptRank(t, "] screened ", 3*time.Second)
	if len(r.NotReached) == 0 || r.Entries[0].Stage == "not-reached" {
		t.Errorf("want some services screened and the others not reached: %+v", r.Entries)
	}
}

// Ctrl-C during the census: nothing was measured, so every service is
// not reached, and the ranking says it was interrupted during the census.
func TestRankCensusInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	r, _ := interruptRank(t, "census: one ", 500*time.Millisecond)
	if r.PartialReason != "interrupted during the census" || len(r.NotReached) != 4 {
		t.Errorf("interrupted during the census: reason %q, not reached %v; want every service not reached", r.PartialReason, r.NotReached)
	}
}

// A budget that runs out: the ranking stops before the next step,
// writes what it has marked partial, and exits 0.
func TestRankScreenBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	r, b := rankDemo(t, "--budget", "12s")
	if !r.Partial || !strings.Contains(r.PartialReason, "budget of 12s ran out") {
		t.Errorf("partial %v (%q), want the budget's partial ranking\n%s", r.Partial, r.PartialReason, b)
	}
	checkStages(t, r, 4)
	if !strings.Contains(string(b), "PARTIAL: the ranking is partial: the budget") {
		t.Errorf("the table does not say it is partial:\n%s", b)
	}
}

// The census before the screening: with a minimum gain high enough that
// some service's share of the CPU cannot reach it, those services are
// bounded (not screened, skipped), exactly those whose bound is not
// above the minimum; cart, the bottleneck, is never among them, and
// every service's share is recorded.
func TestRankCensus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	const minGain = 40
	r, b := rankDemo(t, "--min-gain", "40", "--seed", "1")
	checkStages(t, r, 4)
	if r.Census == nil || len(r.Census.ServicesUS) != 4 || r.Census.Cycles < 5 {
		t.Fatalf("census %+v, want every service's CPU over a steady window\n%s", r.Census, b)
	}
	var bounded []string
	var othersBind []string
	if r.Screening != nil {
		othersBind = r.Screening.OthersBind
	}
	for _, e := range r.Entries {
		if e.CPUSharePct == nil {
			t.Errorf("%s has no CPU share", e.Service)
			continue
		}
		if slices.Contains(othersBind, e.Service) {
			// Screened up to its baseline, which found the other
			// services setting the throughput: bounded, with that
			// baseline.
			if e.Stage != "bounded" || e.Verdict != "skipped" || len(e.Results) == 0 || string(e.Results) == "null" {
				t.Errorf("%s ended at its baseline, but stage %s, verdict %s, results %s", e.Service, e.Stage, e.Verdict, e.Results)
			}
			continue
		}
		capped := e.GainBoundPct != nil && *e.GainBoundPct <= minGain
		if capped != (e.Stage == "bounded") {
			t.Errorf("%s: bound %v, stage %s", e.Service, e.GainBoundPct, e.Stage)
		}
		if e.Stage == "bounded" {
			bounded = append(bounded, e.Service)
			if e.Verdict != "skipped" || len(e.Results) > 0 && string(e.Results) != "null" {
				t.Errorf("%s bounded, but verdict %s and results %s", e.Service, e.Verdict, e.Results)
			}
		}
	}
	if slices.Contains(bounded, "cart") || slices.Contains(othersBind, "cart") {
		t.Errorf("the bottleneck was bounded: %v, ended at its baseline: %v\n%s", bounded, othersBind, b)
	}
	slices.Sort(bounded)
	census := slices.Clone(r.Census.Bounded)
	slices.Sort(census)
	if !slices.Equal(bounded, census) {
		t.Errorf("bounded entries %v, census lists %v", bounded, census)
	}
	if !strings.Contains(string(b), "census: ") {
		t.Errorf("the table says nothing of the census:\n%s", b)
	}
	// Every confirmation continued its screening: it kept the profile
	// and the pauses at 50%, and made every run, baselines included, its
	// own: two repetitions (--reps 2), or one where the progress says
	// that its verdict was settled by then.
	confirmed := 0
	for _, e := range r.Entries {
		if e.Stage != "confirmed" {
			continue
		}
		confirmed++
		var res struct {
			Baseline struct {
				Runs []float64 `json:"runs"`
			} `json:"baseline"`
			Settings struct {
				DurationS float64 `json:"duration_s"`
				Carried   *struct {
					Reduction string  `json:"reduction"`
					DurationS float64 `json:"duration_s"`
				} `json:"carried"`
			} `json:"settings"`
		}
		if err := json.Unmarshal(e.Results, &res); err != nil {
			t.Fatalf("%s: %v", e.Service, err)
		}
		c := res.Settings.Carried
		settled := strings.Contains(string(b), e.Service+"'s gain is settled") || strings.Contains(string(b), e.Service+"'s no-gain is settled")
		runs := len(res.Baseline.Runs)
		if c == nil || c.Reduction != "50%" || !(c.DurationS > 0) || !(runs == 2 || runs == 1 && settled) || res.Settings.DurationS < c.DurationS {
			t.Errorf("%s confirmed: carried %+v with %d baseline runs of %vs (settled after one: %v), want the pauses at 50%% and full baselines of its own, two unless settled after one\n%s",
				e.Service, c, runs, res.Settings.DurationS, settled, b)
		}
	}
	if confirmed == 0 {
		t.Errorf("nothing confirmed; cart gains:\n%s", b)
	}
}
