package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// attachedDemo is the demo application started the plain way, by a shell
// script with background jobs and PID files, as a user runs it before
// asking slowpoke about it; and a spec that attaches to it.
type attachedDemo struct {
	dir    string
	spec   string
	script *exec.Cmd
	pids   map[string]int
	before map[string]string // procState of every service process
}

// startAttachedDemo starts the demo by a shell script and waits until it
// answers. The script's process group (it leads one of its own) is
// continued and killed when the test ends, pass or fail.
func startAttachedDemo(t *testing.T, bin string) *attachedDemo {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "demo", "topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "topology.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, emuName)); err != nil {
		t.Fatal(err)
	}
	script := `cd "$(dirname "$0")"
for s in frontend cart catalog currency; do
  ./slowpoke-emu -topology topology.yaml -service $s > $s.out 2>&1 &
  echo $! > $s.pid
done
wait
`
	if err := os.WriteFile(filepath.Join(dir, "start.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := `name: demo-attached
services:
  - {name: frontend, attach: {port: 18080}, ready: {http_path: /healthz}}
  - {name: cart, attach: {pid_file: cart.pid}, port: 18081, protocol: grpc, ground_truth: {env: EMU_WORK_OFFSET_US, base_us: 0}}
  - {name: catalog, attach: {port: 18082}, ready: {http_path: /healthz}}
  - {name: currency, attach: {pid_file: currency.pid}, port: 18083, ready: {http_path: /healthz}}
entry: http://127.0.0.1:18080
workload:
  connections: 128
  warmup: 1s
  duration: 3s
  requests:
    - {name: home, method: GET, path: /home, weight: 1}
`
	a := &attachedDemo{dir: dir, spec: filepath.Join(dir, "app.yaml"), pids: map[string]int{}}
	if err := os.WriteFile(a.spec, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	a.script = exec.Command("/bin/sh", filepath.Join(dir, "start.sh"))
	a.script.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.script.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := a.script.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGCONT)
		syscall.Kill(-pgid, syscall.SIGKILL)
		a.script.Wait()
		// The services, reparented once the shell is gone: wait, by
		// their PIDs, until they are, so that the next test has the ports.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if len(alive(a.pids)) == 0 {
				break
			}
		}
	})
	for _, name := range []string{"frontend", "cart", "catalog", "currency"} {
		for deadline := time.Now().Add(20 * time.Second); a.pids[name] == 0; time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(dir, name+".pid")); err == nil {
				a.pids[name], _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			if time.Now().After(deadline) {
				t.Fatalf("no PID file for %s", name)
			}
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, err := exec.Command("curl", "-sf", "http://127.0.0.1:18080/home").CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo started by a script does not answer: %v %s", err, out)
		}
	}
	a.before = a.state(t)
	return a
}

func alive(pids map[string]int) []int {
	var out []int
	for _, pid := range pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
			out = append(out, pid)
		}
	}
	return out
}

// state describes how each service process runs: its start time (the
// same process), its freezer cgroup, and each of its threads' CPU
// affinity and nice value; and whether it is stopped.
func (a *attachedDemo) state(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	for name, pid := range a.pids {
		p := "/proc/" + strconv.Itoa(pid)
		stat, err := os.ReadFile(p + "/stat")
		if err != nil {
			m[name] = "gone"
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		m[name+" start"] = f[19]
		m[name+" stopped"] = strconv.FormatBool(f[0] == "T" || f[0] == "t")
		cg, _ := os.ReadFile(p + "/cgroup")
		for _, line := range strings.Split(string(cg), "\n") {
			if strings.Contains(line, ":freezer:") {
				m[name+" freezer"] = line
			}
		}
		tasks, _ := os.ReadDir(p + "/task")
		for _, tk := range tasks {
			tid, _ := strconv.Atoi(tk.Name())
			var set unix.CPUSet
			unix.SchedGetaffinity(tid, &set)
			prio, _ := unix.Getpriority(unix.PRIO_PROCESS, tid)
			m[name+" thread "+tk.Name()] = fmt.Sprintf("cpus %d nice %d", set.Count(), 20-prio)
		}
	}
	return m
}

// checkAsBefore waits (boundedly) until every service process runs as it
// did before slowpoke attached: the same process, not stopped, in its
// freezer cgroup, every thread it had on its cores with its nice value.
func (a *attachedDemo) checkAsBefore(t *testing.T, after string) {
	t.Helper()
	var diff []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		now := a.state(t)
		diff = diff[:0]
		for k, v := range a.before {
			if now[k] != v && !(strings.Contains(k, " thread ") && now[k] == "") {
				diff = append(diff, fmt.Sprintf("%s: %q, was %q", k, now[k], v))
			}
		}
		if len(diff) == 0 || time.Now().After(deadline) {
			break
		}
	}
	slices.Sort(diff)
	for _, d := range diff {
		t.Errorf("%s: %s", after, d)
	}
	if out, err := exec.Command("curl", "-sf", "http://127.0.0.1:18080/home").CombinedOutput(); err != nil {
		t.Errorf("%s: the demo does not answer any more: %v %s", after, err, out)
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
	for _, want := range []string{"cart: attached to {pid_file: " + filepath.Join(a.dir, "cart.pid") + "} (processes [" + strconv.Itoa(a.pids["cart"]) + "])", "rounds followed cart's CPU time"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	var res struct {
		Baseline struct{ RPS float64 } `json:"baseline"`
		Points   []struct {
			ReductionPct float64 `json:"reduction_pct"`
			PredictedRPS float64 `json:"predicted_rps"`
		} `json:"points"`
	}
	if b, err := os.ReadFile(filepath.Join(out, "results.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Baseline.RPS <= 0 {
		t.Fatalf("results: %+v", res)
	}
	// Generous, as the started demo's end-to-end test: halving the
	// bottleneck's cost must predict clearly more than the baseline.
	if p := res.Points[1]; p.PredictedRPS < 1.2*res.Baseline.RPS {
		t.Errorf("50%%: predicted %.0f req/s, baseline %.0f: no speedup seen", p.PredictedRPS, res.Baseline.RPS)
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
			cmd := exec.Command(bin, "predict", "-f", a.spec, "--target", "cart", "--reduce", "80%", "--reps", "3", "--duration", "3s", "--pause", tr.method, "--out", out)
			// A mark that slowpoke's own processes inherit, and the
			// script's services do not.
			cmd.Env = append(os.Environ(), "SLOWPOKE_ATTACH_TEST="+out)
			orch, stderr := startUntil(t, cmd, "[ 2/")
			time.Sleep(time.Duration(300+200*i) * time.Millisecond)
			var victim int
			switch tr.victim {
			case "orchestrator":
				victim = orch.Process.Pid
			case "controller":
				for _, c := range childrenOf(orch.Process.Pid, "--name catalog") {
					victim = c
				}
			case "guard":
				for _, c := range childrenOf(orch.Process.Pid, "slowpoke guard") {
					victim = c
				}
			}
			if victim == 0 {
				t.Fatalf("no %s to kill:\n%s", tr.victim, stderr)
			}
			syscall.Kill(victim, syscall.SIGKILL)
			if err := waitExit(orch, time.Minute); tr.victim != "orchestrator" && err == nil {
				t.Errorf("the run went on to succeed after its %s was killed", tr.victim)
			}
			a.checkAsBefore(t, "after the "+tr.victim+" was killed")
			checkNoLeftovers(t, "SLOWPOKE_ATTACH_TEST="+out)
			checkNoFrozenCgroups(t, orch.Process.Pid)
			if t.Failed() {
				t.Logf("orchestrator's output:\n%s", stderr)
				if b, err := os.ReadFile(filepath.Join(out, "logs", "guard.log")); err == nil {
					t.Logf("guard.log:\n%s", b)
				}
			}
		})
	}
}

// startUntil starts cmd and returns once a line of its standard error
// contains marker; the output is collected.
func startUntil(t *testing.T, cmd *exec.Cmd, marker string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := &lockedBuffer{}
	seen := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			buf.WriteLine(sc.Text())
			if !said && strings.Contains(sc.Text(), marker) {
				said = true
				seen <- true
			}
		}
		if !said {
			seen <- false
		}
	}()
	select {
	case ok := <-seen:
		if !ok {
			t.Fatalf("ended before %q:\n%s", marker, buf)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("no %q after 2 minutes:\n%s", marker, buf)
	}
	return cmd, buf
}
