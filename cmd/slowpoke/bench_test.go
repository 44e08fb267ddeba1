package main

import (
	"bufio"
	"fmt"
	"math"
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

// bench attach pairs the attached and the started run of each rep per
// point, leaving out a side that failed or a point that was infeasible.
func TestAttachRows(t *testing.T) {
	run := func(rep int, kind string, base float64, preds ...float64) attachRun {
		r := attachRun{Rep: rep, Kind: kind, BaselineRPS: base}
		for i, p := range preds {
			// The same point's percentage differs between runs in its
			// last digits (it comes from each run's u1).
			r.Points = append(r.Points, attachRunPoint{Reduction: fmt.Sprintf("%d%%", 20*(i+1)), ReductionPct: float64(20*(i+1)) - float64(rep)*1e-5, PredictedRPS: p})
		}
		return r
	}
	failed := run(3, "attached", 1)
	failed.Err = "predict: exit status 1"
	rows := attachRows([]attachRun{
		run(1, "attached", 110, 220, 0),
		run(1, "started", 100, 200, 300),
		run(2, "started", 100, 200, 300),
		run(2, "attached", 90, 180, 330),
		failed,
		run(3, "started", 100, 200, 300),
	})
	if len(rows) != 3 || rows[0].Point != "baseline" || rows[1].Point != "20%" || rows[2].Point != "40%" {
		t.Fatalf("rows: %+v", rows)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if b := rows[0]; len(b.Paired) != 2 || !near(b.Paired[0], 10) || !near(b.Paired[1], -10) || !near(b.MeanDiffPct, 0) || !near(b.RatioPct, 0) || !b.Within {
		t.Errorf("baseline: %+v", b)
	}
	if p := rows[2]; len(p.Attached) != 1 || len(p.Started) != 3 || len(p.Paired) != 1 || !near(p.RatioPct, 10) || p.Within {
		t.Errorf("40%%, one side infeasible in rep 1: %+v", p)
	}
}

func TestChangeKind(t *testing.T) {
	for change, want := range map[string]string{
		`cart stopped: "true", was "false"`:             "stopped",
		`cart frozen: "true", was "false"`:              "frozen",
		`cart freezer: "6:freezer:/slowpoke/x", was ""`: "moved",
		`cart thread 12 cpus: "1", was "0,1"`:           "pinned",
		`cart thread 12 nice: "-5", was "0"`:            "reniced",
		`cart start: "", was "123"`:                     "gone",
	} {
		if got := changeKind(change); got != want {
			t.Errorf("changeKind(%q) = %q, want %q", change, got, want)
		}
	}
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
	for _, b := range append(benches, labBenches()...) {
		if !strings.Contains(out, b.name) {
			t.Errorf("slowpoke-lab bench -h does not list %s:\n%s", b.name, out)
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
