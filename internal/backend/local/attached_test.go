package local

import (
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

	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// An attached service that stays in its own cgroup (cgroup v2) cannot be
// frozen: the cgroup method is refused, naming it.
func TestPauseMethodAttachedWithoutCgroup(t *testing.T) {
	own := Placement{Target: "cart", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
	d := &Deployment{placement: own, runDir: "/sys/fs/cgroup/unified/slowpoke/run-1-1", services: map[string]*Service{
		"db": {Service: backend.Service{Name: "db"}, attached: &attach.State{Service: "db"}},
	}}
	if _, err := d.PauseMethod(pause.MethodCgroup); err == nil || !strings.Contains(err.Error(), `service "db" is attached and stays in its own cgroup`) {
		t.Errorf("PauseMethod(cgroup) = %v", err)
	}
	d.services["db"].Cgroup = "/sys/fs/cgroup/freezer/slowpoke/run-1-1/db"
	if _, err := d.PauseMethod(pause.MethodCgroup); err != nil {
		t.Errorf("with the service in slowpoke's cgroup: %v", err)
	}
}

// A killed run that left no record: what is in an attached service's
// cgroup is continued and moved out, never ended; what is in a started
// service's is ended.
func TestCleanLeftoversReleasesAttached(t *testing.T) {
	h, err := pause.FindHierarchy()
	if err != nil || h.V2 {
		t.Skipf("no v1 freezer cgroups here (%v)", err)
	}
	// An orchestrator that is gone: a process that ran and was reaped.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dir := fmt.Sprintf("run-%d-1", gone.Process.Pid)
	var procs []*exec.Cmd
	t.Cleanup(func() {
		for _, p := range procs {
			p.Process.Signal(syscall.SIGCONT)
			p.Process.Kill()
			p.Wait()
		}
		for _, leaf := range []string{"attached.db", "web"} {
			pause.Cgroup{Path: filepath.Join(h.Root, dir, leaf)}.Thaw()
			os.Remove(filepath.Join(h.Root, dir, leaf))
		}
		os.Remove(filepath.Join(h.Root, dir))
	})
	start := func(leaf string) *exec.Cmd {
		cg, err := h.Create(dir + "/" + leaf)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		if err := os.WriteFile(filepath.Join(cg.Path, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(syscall.SIGSTOP)
		cg.Freeze()
		return cmd
	}
	db, web := start("attached.db"), start("web")
	cleanLeftovers(&h)
	st, ok := proc.Read(db.Process.Pid)
	if !ok || st.Ended() || st.State == 'T' {
		t.Errorf("the attached service's process: state %c (there: %v), want it running", st.State, ok)
	}
	if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", db.Process.Pid)); strings.Contains(string(b), dir) {
		t.Errorf("the attached service's process is still in the run's cgroup: %s", b)
	}
	if st, ok := proc.Read(web.Process.Pid); ok && !st.Ended() {
		t.Errorf("the started service's process is left: state %c", st.State)
	}
	if _, err := os.Stat(filepath.Join(h.Root, dir)); err == nil {
		t.Error("the run's cgroup directory is left")
	}
}

// An attached service whose work is done by a child of the process
// attached to (a shell script's worker, a pre-fork server's workers): the
// seam's CPU time and scheduling for the service are its every process's,
// not the root's alone, which only waits.
func TestAttachedCPUCoversChildren(t *testing.T) {
	root := exec.Command("sh", "-c", "while :; do :; done & wait")
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range attach.Tree([]int{root.Process.Pid}) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		root.Wait()
	})
	// The child burner runs once the root has forked it.
	var burner int
	for deadline := time.Now().Add(5 * time.Second); burner == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the shell started no child")
		}
		for _, pid := range attach.Tree([]int{root.Process.Pid}) {
			if pid != root.Process.Pid {
				burner = pid
			}
		}
	}
	st, err := attach.Capture("worker", []int{root.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	d := &Deployment{services: map[string]*Service{"worker": {Service: backend.Service{Name: "worker"},
		PID: st.Root().PID, startTick: st.Root().Start, attached: st}}}
	var m backend.Meter = d
	cpu0, err := m.CPUTime("worker")
	if err != nil {
		t.Fatal(err)
	}
	ran0, _ := m.SchedWaits("worker")
	child0, _ := proc.CPUClock(burner)
	time.Sleep(500 * time.Millisecond)
	cpu1, err := m.CPUTime("worker")
	if err != nil {
		t.Fatal(err)
	}
	ran1, _ := m.SchedWaits("worker")
	child1, _ := proc.CPUClock(burner)
	burnt := child1 - child0
	if burnt < 100*time.Millisecond {
		t.Skipf("the child burnt only %v in 500 ms: the machine is too busy to tell", burnt)
	}
	// The service's CPU grew with its child's (and the root's, about
	// nothing); read before and after the child's, it may differ from it
	// by what the child burnt between the reads.
	if got := cpu1 - cpu0; got < burnt*8/10 {
		t.Errorf("the service's CPU time grew by %v while its child burnt %v", got, burnt)
	}
	if got := ran1 - ran0; got < burnt*8/10 {
		t.Errorf("the service's threads ran %v by schedstat while its child burnt %v", got, burnt)
	}
	// Those whose CPU clocks a pause on a shared core reads
	// (wire.SignalPause.CorePeers): the child too.
	if pids := d.ProcessIDs("worker"); !slices.Contains(pids, burner) || !slices.Contains(pids, root.Process.Pid) {
		t.Errorf("ProcessIDs = %v, want the root %d and its child %d", pids, root.Process.Pid, burner)
	}
}
