//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startDemo starts "slowpoke demo" with the given flags and returns once
// it has finished pre-profiling (the next runs are slowdown runs, with
// services being paused). Its stderr is collected in the returned buffer.
func startDemo(t *testing.T, bin, out string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"demo", "--out", out}, args...)...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := &lockedBuffer{}
	sc := bufio.NewScanner(stderr)
	started := make(chan bool, 1)
	go func() {
		seen := false
		for sc.Scan() {
			buf.WriteLine(sc.Text())
			if !seen && strings.Contains(sc.Text(), "c1 =") {
				seen = true
				started <- true
			}
		}
		if !seen {
			started <- false
		}
	}()
	select {
	case ok := <-started:
		if !ok {
			t.Fatalf("demo ended before pre-profiling was done:\n%s", buf)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("no pre-profiling after 2 minutes:\n%s", buf)
	}
	return cmd, buf
}

// The orchestrator and every controller killed with SIGKILL at once in
// the middle of a slowdown run: within seconds nothing the run started is
// left, running or stopped, and no cgroup of it is left frozen (the cores
// method's holding threads live in the controllers and die with them). One
// trial per pause method, each killed at a different moment. A killed
// controller's socket directory is removed by the next one that starts.
func TestKilledRunLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	var controllers []int
	for i, method := range []string{"auto", "signal", "cgroup"} {
		trial := i + 1
		out := filepath.Join(t.TempDir(), "out")
		cmd, _ := startDemo(t, bin, out, "--reps", "3", "--duration", "3s", "--reduce", "80%", "--pause", method)
		time.Sleep(time.Duration(trial) * 700 * time.Millisecond)
		ctls := childrenOf(cmd.Process.Pid, "controller")
		if len(ctls) < 4 {
			t.Fatalf("found %d controllers to kill (4 expected)", len(ctls))
		}
		controllers = append(controllers, ctls...)
		for _, pid := range append([]int{cmd.Process.Pid}, ctls...) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Wait()
		checkNoLeftovers(t, out)
		checkNoFrozenCgroups(t, cmd.Process.Pid)
	}
	// A controller that starts (its command ends at once) removes the
	// socket directories of every controller that was killed, once the
	// kernel has ended them (which can lag the SIGKILL on a busy machine).
	var left []string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ctl := exec.Command(bin, "controller", "--name", "sweeper", "--", "true")
		ctl.Env = append(os.Environ(), "SLOWPOKE_SECRET="+strings.Repeat("ab", 16))
		if out, err := ctl.CombinedOutput(); err != nil {
			t.Fatalf("slowpoke controller -- true: %v\n%s", err, out)
		}
		left = left[:0]
		for _, pid := range controllers {
			dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "slowpoke-agent-"+strconv.Itoa(pid)+"-*"))
			left = append(left, dirs...)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, dir := range left {
		t.Errorf("a killed controller's directory is left: %s", dir)
		os.RemoveAll(dir)
	}
}

// checkNoFrozenCgroups fails if a cgroup of the run whose orchestrator
// was orch (run-ORCH-START) is frozen. Other tests' cgroups, which package
// tests running beside this one freeze on purpose, are not looked at.
func checkNoFrozenCgroups(t *testing.T, orch int) {
	t.Helper()
	for _, f := range frozenCgroups(orch) {
		t.Error(f)
	}
}

// A second run while one is going says which ports are taken and by what,
// before it starts anything; a service killed during a run ends the run
// with an error that names it, says how it died and where its log is.
func TestFaultsAreNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd, stderr := startDemo(t, bin, out, "--reps", "3", "--duration", "3s", "--reduce", "80%")

	second := exec.Command(bin, "demo", "--out", filepath.Join(t.TempDir(), "out2"), "--reps", "1")
	var msg bytes.Buffer
	second.Stderr = &msg
	if err := runWithTimeout(second, time.Minute); err == nil {
		t.Fatal("a second demo ran while the first held its ports")
	}
	if !strings.Contains(msg.String(), `service "frontend": port 18080 is already in use by PID`) {
		t.Errorf("the second demo's error does not name the port and its holder:\n%s", msg.String())
	}

	var catalog int
	for _, ctl := range childrenOf(cmd.Process.Pid, "--name catalog") {
		if svc := childrenOf(ctl, "catalog"); len(svc) == 1 {
			catalog = svc[0]
		}
	}
	if catalog == 0 {
		t.Fatal("catalog's process not found")
	}
	syscall.Kill(catalog, syscall.SIGKILL)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("exit after a service died: %v, want status 1", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the run went on for a minute after a service died")
	}
	want := `service "catalog" died during the run (killed by SIGKILL); last lines of ` + filepath.Join(out, "logs", "catalog.log")
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
	}
	checkNoLeftovers(t, out)
}

// validate on the demo at two reductions: every point has its ground
// truth and its error, and each prediction is above the baseline, as a
// cheaper bottleneck must give (a direction only: how near the truth the
// predictions come is the lab's bench accuracy's, docs/lab.md). The
// reductions keep cart the bottleneck: past about 45% the shared core
// binds.
// demoSpecDir is a temporary directory with the demo's spec and topology
// and a slowpoke-emu link to bin, for a run with it first on its PATH
// (which also marks every process of the run: checkNoLeftovers(t, dir)).
func demoSpecDir(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"app.yaml", "topology.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "demo", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(dir, emuName)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDemoValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo application")
	}
	bin := buildSlowpoke(t)
	dir := demoSpecDir(t, bin)
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "validate", "-f", filepath.Join(dir, "app.yaml"), "--target", "cart", "--reduce", "20,40%", "--reps", "2", "--out", out)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runWithTimeout(cmd, 5*time.Minute); err != nil {
		t.Fatalf("validate: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	checkNoLeftovers(t, out)
	var res struct {
		Baseline struct {
			RPS float64 `json:"rps"`
		} `json:"baseline"`
		Points []struct {
			ReductionPct float64  `json:"reduction_pct"`
			PredictedRPS float64  `json:"predicted_rps"`
			TrueRPS      *float64 `json:"true_rps"`
			ErrorPct     *float64 `json:"error_pct"`
		} `json:"points"`
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 {
		t.Fatalf("%d points, want 2", len(res.Points))
	}
	for _, p := range res.Points {
		if p.ErrorPct == nil || p.TrueRPS == nil {
			t.Fatalf("point %.0f%% has no truth or error", p.ReductionPct)
		}
		t.Logf("%.0f%%: predicted %.0f req/s, true %.0f req/s, error %+.1f%%; baseline %.0f req/s", p.ReductionPct, p.PredictedRPS, *p.TrueRPS, *p.ErrorPct, res.Baseline.RPS)
		if p.PredictedRPS <= res.Baseline.RPS {
			t.Errorf("%.0f%%: predicted %.0f req/s, not above the baseline's %.0f: cart is the bottleneck", p.ReductionPct, p.PredictedRPS, res.Baseline.RPS)
		}
	}
}
