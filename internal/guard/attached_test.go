package guard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// startProc starts the test binary in a role; it is continued and killed
// by its PID when the test ends, its children too.
func startProc(t *testing.T, role string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range attach.Tree([]int{cmd.Process.Pid}) {
			unix.Kill(pid, unix.SIGCONT)
			unix.Kill(pid, unix.SIGKILL)
		}
		cmd.Wait()
	})
	return cmd
}

// affinities is each process's freezer cgroup and every thread's CPU
// affinity (its count of CPUs), by "PID" and "PID/TID".
func affinities(pids []int) map[string]string {
	m := map[string]string{}
	for _, pid := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, ":freezer:") {
				m[strconv.Itoa(pid)] = line
			}
		}
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, tk := range tasks {
			tid, _ := strconv.Atoi(tk.Name())
			var set unix.CPUSet
			unix.SchedGetaffinity(tid, &set)
			m[strconv.Itoa(pid)+"/"+tk.Name()] = strconv.Itoa(set.Count())
		}
	}
	return m
}

// asBefore reports what differs from before in now (what was there then:
// a Go program starts threads as it goes).
func asBefore(before, now map[string]string) []string {
	var diff []string
	for k, v := range before {
		if now[k] != v {
			diff = append(diff, fmt.Sprintf("%s: %q, was %q", k, now[k], v))
		}
	}
	return diff
}

// A service slowpoke did not start (attach), pinned, moved into the run's
// cgroup, stopped and frozen as by a pause: when its controller is killed,
// and when the orchestrator is, the guard gives it back running, out of the
// run's cgroup, its affinity as it was, and never ends it.
func TestAttachedGivenBack(t *testing.T) {
	h, err := pause.FindHierarchy()
	if err != nil || h.V2 {
		t.Skipf("no v1 freezer cgroups here (%v)", err)
	}
	var set unix.CPUSet
	unix.SchedGetaffinity(0, &set)
	if set.Count() < 2 {
		t.Skip("needs two CPUs to pin to one")
	}
	for _, fault := range []string{"controller", "orchestrator", "controller then orchestrator"} {
		t.Run(fault+" killed", func(t *testing.T) {
			wrapper, tree, before := startWrapped(t)
			orch := startProc(t, "service") // stands in for the orchestrator
			ctl := startProc(t, "service")  // and for the controller
			orchID, _ := Identify(orch.Process.Pid)
			ctlID, _ := Identify(ctl.Process.Pid)
			// Named as the local backend names an attached service's cgroup:
			// a run starting meanwhile (another package's test) moves its
			// processes out, and never kills them.
			cg, err := h.Create(fmt.Sprintf("run-%d-%s/attached.svc", orchID.PID, orchID.Start))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cg.Thaw(); cg.Remove() })
			st, err := attach.Capture("svc", []int{wrapper})
			if err != nil {
				t.Fatal(err)
			}
			st.Cgroup = cg.Path
			guardLog := filepath.Join(t.TempDir(), "guard.log")
			g, err := Spawn(os.Args[0], guardLog)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if t.Failed() {
					b, _ := os.ReadFile(guardLog)
					t.Logf("processes %v; the guard's log:\n%s", tree, b)
				}
			})
			t.Cleanup(func() { g.cmd.Process.Kill(); <-g.Exited() })
			if err := g.Run(Run{Orchestrator: orchID, Cgroups: []string{cg.Path}}); err != nil {
				t.Fatal(err)
			}
			if err := g.Service(Service{Name: "svc", Controller: ctlID, Cgroup: cg.Path, Attached: st}); err != nil {
				t.Fatal(err)
			}
			if err := st.Apply([]int{0}, &cg); err != nil {
				t.Fatal(err)
			}
			for _, pid := range tree {
				unix.Kill(pid, unix.SIGSTOP)
			}
			cg.Freeze()
			if len(asBefore(before, affinities(tree))) == 0 {
				t.Fatal("not pinned nor moved")
			}

			for _, pid := range tree {
				if _, ok := proc.Read(pid); !ok {
					t.Fatalf("process %d of the service is gone before any fault (processes %v)", pid, tree)
				}
			}
			victim := ctl
			if fault == "orchestrator" {
				victim = orch
			}
			victim.Process.Kill()
			if fault == "controller then orchestrator" {
				// Given back once its controller died; then one of its
				// processes is found in the run's cgroup again (as one
				// a restore missed would be) when the run ends: it is
				// given back too, not ended with the cgroup.
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if procs, _ := cg.Procs(); len(procs) == 0 {
						break
					}
				}
				if err := os.WriteFile(filepath.Join(cg.Path, "cgroup.procs"), []byte(strconv.Itoa(tree[1])), 0); err != nil {
					t.Fatal(err)
				}
				orch.Process.Kill()
			}
			var diff []string
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if diff = asBefore(before, affinities(tree)); len(diff) == 0 && running(tree) {
					break
				}
			}
			if len(diff) > 0 {
				t.Errorf("after the %s's death, not as before: %v", fault, diff)
			}
			for _, pid := range tree {
				if s, ok := proc.Read(pid); !ok || s.Ended() || s.State == 'T' {
					t.Errorf("process %d of the attached service: state %c (alive %v), want it running", pid, s.State, ok)
				}
			}
			if procs, _ := cg.Procs(); len(procs) > 0 {
				t.Errorf("processes %v left in the run's cgroup", procs)
			}
			if fault != "controller" {
				select {
				case <-g.Exited():
				case <-time.After(10 * time.Second):
					t.Error("the guard did not end the run")
				}
				if ctlID.Alive() {
					t.Error("the guard left the controller running")
				}
				if _, err := os.Stat(cg.Path); err == nil {
					t.Error("the run's cgroup is left")
				}
			}
		})
	}
}

// startWrapped starts a service in the shape of a shell wrapper (a child
// in the same group, and wait), waits until both processes run, and
// returns the wrapper's PID, both processes and their affinities before
// anything touched them.
func startWrapped(t *testing.T) (int, []int, map[string]string) {
	t.Helper()
	svc := startProc(t, "wrapper")
	var tree []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		tree = attach.Tree([]int{svc.Process.Pid})
		before := affinities(tree)
		// Each process's freezer line and at least one thread: read
		// whole, so that a process gone later shows as a difference.
		complete := len(tree) == 2
		for _, pid := range tree {
			complete = complete && before[strconv.Itoa(pid)] != "" && before[strconv.Itoa(pid)+"/"+strconv.Itoa(pid)] != ""
		}
		if complete && running(tree) {
			return svc.Process.Pid, tree, before
		}
		if time.Now().After(deadline) {
			t.Fatalf("the wrapped service did not come up: processes %v, read %v", tree, before)
		}
	}
}

func running(pids []int) bool {
	for _, pid := range pids {
		if s, ok := proc.Read(pid); !ok || s.State == 'T' {
			return false
		}
	}
	return true
}
