package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// startOutside starts a helper as something other than slowpoke would: in
// this test's own process group, not a controller's child. It is
// continued and killed when the test ends.
func startOutside(t *testing.T, role string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = childEnv(role)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range attach.Tree([]int{cmd.Process.Pid}) {
			syscall.Kill(pid, syscall.SIGCONT)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Wait()
	})
	return cmd
}

// attachCtl starts a controller attached to the process pid and its
// children.
func attachCtl(t *testing.T, name string, pid int) *Controller {
	t.Helper()
	var tree []int
	waitFor(t, "the helper's child", 5*time.Second, func() bool { tree = attach.Tree([]int{pid}); return len(tree) >= 2 })
	st, err := attach.Capture(name, []int{pid})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(Config{Name: name, Attach: st, Secret: testSecret, MaxPause: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Signal(syscall.SIGTERM); c.Wait() })
	return c
}

// A controller attached to processes it did not start stops and
// continues them, and only them (not the process group they share with
// this test), and gives them back, running, when told to stop: it never
// ends them.
func TestAttachedPausedNotOwned(t *testing.T) {
	svc := startOutside(t, "forkspin")
	bystander := startOutside(t, "spin") // same process group, not the service's
	c := attachCtl(t, "svc", svc.Process.Pid)
	tree := attach.Tree([]int{svc.Process.Pid})
	if c.PID() != svc.Process.Pid {
		t.Errorf("PID %d, want the attached process %d", c.PID(), svc.Process.Pid)
	}
	if st := c.Stats(); st.PID != svc.Process.Pid {
		t.Errorf("stats: PID %d, want %d", st.PID, svc.Process.Pid)
	}
	// CPU time is accounted in clock ticks: a helper started a moment ago
	// on a busy machine may not have been charged one yet.
	waitFor(t, "the service's CPU time in its stats", 5*time.Second, func() bool { return c.Stats().CPUNS > 0 })
	c.pauser.Pause(5 * time.Second)
	for _, pid := range tree {
		waitFor(t, "the service's processes to stop", 2*time.Second, func() bool { return procState(pid) == "T" })
	}
	if procState(bystander.Process.Pid) == "T" {
		t.Error("a process of the same group, not of the service, was stopped")
	}
	// Told to stop mid-pause: the service is continued, and runs on.
	c.Signal(syscall.SIGTERM)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the controller did not let go after SIGTERM")
	}
	if code := c.Wait(); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	for _, pid := range tree {
		if s := procState(pid); s == "T" || s == "" || s == "Z" {
			t.Errorf("process %d of the service: state %q after the controller let go, want it running", pid, s)
		}
	}
}

// The attached process exiting ends the controller (status 1), its
// children continued.
func TestAttachedExitReleases(t *testing.T) {
	svc := startOutside(t, "forkspin")
	c := attachCtl(t, "svc", svc.Process.Pid)
	tree := attach.Tree([]int{svc.Process.Pid})
	c.pauser.Pause(5 * time.Second)
	for _, pid := range tree {
		waitFor(t, "the service's processes to stop", 2*time.Second, func() bool { return procState(pid) == "T" })
	}
	svc.Process.Signal(syscall.SIGKILL)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the controller went on after its attached process exited")
	}
	if code := c.Wait(); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	for _, pid := range tree[1:] {
		if s := procState(pid); s == "T" {
			t.Errorf("process %d left stopped", pid)
		}
	}
}

// An attached target's rounds follow the CPU of all its processes (the CPU
// trigger: it is not instrumented), and pause its neighbour.
func TestAttachedTargetCPUTrigger(t *testing.T) {
	svc := startOutside(t, "forkspin")
	a := attachCtl(t, "a", svc.Process.Pid)
	b := startCtl(t, "b", "spin", time.Second)
	const perCall, batch = 500 * time.Microsecond, 20
	must(t, b.Configure(wire.Configure{Epoch: 2, PausePerRoundNS: int64(time.Millisecond)}))
	must(t, a.Configure(wire.Configure{Epoch: 2, Target: true, Batch: batch, CPUPerCallNS: int64(perCall), PausePerRoundNS: int64(time.Millisecond), Pause: signalPause(wire.SignalPause{Neighbours: []wire.Neighbour{{Name: "b", Addr: b.Addr()}}})}))
	must(t, b.StartSlowdown())
	cpu0 := a.serviceCPU()
	must(t, a.StartSlowdown())
	time.Sleep(time.Second)
	a.stopSlowdown()
	used := time.Duration(a.serviceCPU() - cpu0)
	st := a.Stats()
	want := float64(used) / float64(perCall*batch)
	t.Logf("target used %v of CPU (tick-accounted): %d rounds for %.1f due", used, st.RoundsStarted, want)
	if want < 10 {
		t.Fatalf("the target used only %v of CPU: cannot judge", used)
	}
	// /proc's tick accounting (serviceCPU) lags the exact clocks the
	// trigger reads by up to a few ticks per process.
	if got := float64(st.RoundsStarted); got < 0.6*want || got > 1.4*want+2 {
		t.Errorf("%d rounds, want about %.1f", st.RoundsStarted, want)
	}
	if pids := a.set.PIDs(); len(pids) < 2 || !slices.Contains(pids, svc.Process.Pid) {
		t.Errorf("the target's processes %v: want the attached process and its child", pids)
	}
	waitFor(t, "b to pause", 3*time.Second, func() bool { return b.Stats().Pauses > 0 })
}

// An attached service whose work is done by a child of the process
// attached to: its CPU time, as the busy measurements and the holder's
// busy clock read it, is its every process's, not the root's alone, which
// only waits.
func TestAttachedCPUTimeCoversChildren(t *testing.T) {
	svc := startOutside(t, "forkwait")
	c := attachCtl(t, "svc", svc.Process.Pid)
	var child int
	for _, pid := range attach.Tree([]int{svc.Process.Pid}) {
		if pid != svc.Process.Pid {
			child = pid
		}
	}
	busy := c.busyClock()
	cpu0, busy0, child0 := c.serviceCPUTime(), busy(), processCPU(child)
	time.Sleep(500 * time.Millisecond)
	cpu1, busy1, child1 := c.serviceCPUTime(), busy(), processCPU(child)
	burnt := child1 - child0
	if burnt < 100*time.Millisecond {
		t.Skipf("the child burnt only %v in 500 ms: the machine is too busy to tell", burnt)
	}
	if got := cpu1 - cpu0; got < burnt*8/10 {
		t.Errorf("the service's CPU time grew by %v while its child burnt %v", got, burnt)
	}
	if got := busy1 - busy0; got < burnt*8/10 {
		t.Errorf("the busy clock grew by %v while its child burnt %v", got, burnt)
	}
}

// An attached service moved to other cores after its controller attached
// to it (a deployment retargeted live: the old target back on the shared
// cores, the new one on cores of its own) is checked where it runs now,
// not where it was attached: holding the cores it left is accepted, and
// holding those it runs on is refused. (Before, the controller of an
// attached service judged by the cores it was attached on, so that every
// target after the first was refused with "core N runs the target".)
func TestAttachedConfigureFollowsRetarget(t *testing.T) {
	var own unix.CPUSet
	must(t, unix.SchedGetaffinity(0, &own))
	var cores []int
	for cpu := 0; cpu < 1024 && len(cores) < 2; cpu++ {
		if own.IsSet(cpu) {
			cores = append(cores, cpu)
		}
	}
	if len(cores) < 2 {
		t.Skipf("needs 2 CPUs, may use %v", cores)
	}
	shared, target := cores[0], cores[1]
	svc := startOutside(t, "forkspin")
	c := attachCtl(t, "svc", svc.Process.Pid)
	c.cfg.CPUs = []int{shared} // attached while another service was the target
	holding := func(cs ...int) wire.Configure {
		return wire.Configure{Target: true, Batch: 1, Pause: wire.Pause{Cores: &wire.CoresPause{Cores: cs}}}
	}
	for _, step := range []struct {
		now, left int
	}{{target, shared}, {shared, target}} {
		pinMembers(t, c, step.now)
		if err := c.Configure(holding(step.left)); err != nil {
			t.Errorf("on core %d, holding core %d: %v", step.now, step.left, err)
		}
		err := c.Configure(holding(step.now))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("core %d runs the target", step.now)) {
			t.Errorf("on core %d, holding it: %v, want it refused", step.now, err)
		}
		if got := c.serviceCPUs(); !slices.Equal(got, []int{step.now}) {
			t.Errorf("serviceCPUs = %v, want [%d]", got, step.now)
		}
		if n := c.numCPUs(); n != 1 {
			t.Errorf("numCPUs = %d, want 1", n)
		}
	}
}

// pinMembers moves every thread of every process of c's attached service
// to core, as a retarget does.
func pinMembers(t *testing.T, c *Controller, core int) {
	t.Helper()
	var set unix.CPUSet
	set.Set(core)
	for _, st := range c.members() {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", st.PID))
		if err != nil {
			continue
		}
		for _, task := range tasks {
			var tid int
			fmt.Sscan(task.Name(), &tid)
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				t.Fatalf("pin thread %d of %d: %v", tid, st.PID, err)
			}
		}
	}
}
