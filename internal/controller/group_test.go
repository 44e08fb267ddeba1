package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/threads"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// twoCores returns the first and the last CPU this process may use, or
// skips the test on a machine with one.
func twoCores(t *testing.T) (first, last int) {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	first, last = -1, -1
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first == last {
		t.Skip("needs two CPUs")
	}
	return first, last
}

// startTarget starts a controller whose child is an instrumented service
// receiving a steady stream of calls, pinned to cpus.
func startTarget(t *testing.T, cpus []int, maxPause time.Duration) *Controller {
	t.Helper()
	c, err := Start(Config{
		Name: "target", Command: []string{os.Args[0]}, Env: childEnv("calls"), Secret: testSecret, CPUs: cpus,
		MaxPause: maxPause, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Signal(syscall.SIGKILL)
		c.Wait()
	})
	waitFor(t, "instrumentation to connect", 5*time.Second, func() bool { return c.Stats().AgentConnected })
	return c
}

// startSpinner starts a CPU-bound process standing for another service,
// pinned to core, in cg when given.
func startSpinner(t *testing.T, core int, cg *pause.Cgroup) int {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = childEnv("spin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Every thread of the spinner stays on core.
	start := cmd.Start
	if cg != nil {
		start = func() error { return cg.Start(cmd) }
	}
	if err := threads.StartOn([]int{core}, start); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		if cg != nil {
			cg.Thaw()
		}
		unix.Kill(-pid, unix.SIGKILL)
		cmd.Wait()
	})
	return pid
}

// share is the share of a core pid used over about window, divided by the
// time that really passed: on a busy machine the sleep overruns.
func share(pid int, window time.Duration) float64 {
	c0, t0 := processCPU(pid), time.Now()
	time.Sleep(window)
	return float64(processCPU(pid)-c0) / float64(time.Since(t0))
}

// The target's controller pauses the other services itself with the cores
// and cgroup methods: rounds take a good share of the others' CPU, the
// pause counters say so, and stopping the run gives it back (no holding
// thread, no frozen cgroup left).
func TestGroupMethodsPauseTheOthers(t *testing.T) {
	first, last := twoCores(t)
	for _, m := range []pause.Method{pause.MethodCores, pause.MethodCgroup} {
		t.Run(string(m), func(t *testing.T) {
			cf := wire.Configure{Epoch: 1, Target: true, Batch: 5, PausePerRoundNS: int64(4 * time.Millisecond)}
			var cg *pause.Cgroup
			var held *pause.HeldFile
			if m == pause.MethodCgroup {
				c := testCgroup(t, "others")
				cg = &c
				cf.Pause.Cgroup = &wire.CgroupPause{Freeze: []string{c.Path}}
			} else {
				var err error
				if held, err = pause.CreateHeldFile(filepath.Join(t.TempDir(), wire.HeldFileKind+"-test")); err != nil {
					t.Fatal(err)
				}
				defer held.Close()
				cf.Pause.Cores = &wire.CoresPause{Cores: []int{last}, HeldFile: held.Path()}
			}
			other := startSpinner(t, last, cg)
			c := startTarget(t, []int{first}, time.Second)
			if err := c.Configure(cf); err != nil {
				t.Fatal(err)
			}
			free := share(other, 300*time.Millisecond)
			if err := c.StartSlowdown(); err != nil {
				if errors.Is(err, unix.EPERM) {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			t0 := time.Now()
			paused := share(other, 600*time.Millisecond)
			window := time.Since(t0)
			c.stopSlowdown()
			st := c.Stats()
			c.mu.Lock()
			ticked := c.c.started
			c.mu.Unlock()
			after := share(other, 300*time.Millisecond)
			t.Logf("other service's share of its core: %.2f free, %.2f paused, %.2f after; %d pauses, %v asked, %v made",
				free, paused, after, st.Pauses, time.Duration(st.PauseRequestedNS), time.Duration(st.PauseActualNS))
			if free < 0.3 {
				t.Skipf("the core is too busy to tell (%.2f free)", free)
			}
			// The free share is the mean of the windows before and after
			// (the machine's other load moves between windows), and the
			// pauses must have taken at least half of what they held: with
			// f of the window paused the share falls to about free*(1-f).
			ref := (free + after) / 2
			f := min(float64(st.PauseActualNS)/float64(window), 1)
			// Below a quarter of the window paused, the machine's noise is as
			// large as the effect: only the counters are checked.
			if (f >= 0.25 && paused > ref*(1-f/2)) || st.Pauses == 0 || st.PauseActualNS < st.PauseRequestedNS/2 {
				t.Errorf("the others were not paused: share %.2f against %.2f free (%.0f%% of the window paused); stats %+v", paused, ref, 100*f, st)
			}
			if after < free/2 {
				t.Errorf("the other service got %.2f of its core after the run, %.2f before", after, free)
			}
			if m == pause.MethodCores {
				// Every hold's time was added to the held-time file.
				if got := held.Total().Load(); got < st.PauseActualNS*9/10 || got > st.PauseActualNS*11/10 {
					t.Errorf("held-time file %v, the holds %v", time.Duration(got), time.Duration(st.PauseActualNS))
				}
				if st.PauseHeldCPUNS < st.PauseActualNS/2 {
					t.Errorf("the holding thread got %v of CPU in %v held", time.Duration(st.PauseHeldCPUNS), time.Duration(st.PauseActualNS))
				}
				// The instrumentation rang every round on the bell: none
				// went through the controller's ticks.
				if st.RoundsStarted == 0 || ticked != 0 {
					t.Errorf("%d rounds started, %d of them from ticks; want all from the bell", st.RoundsStarted, ticked)
				}
				// The target runs on a core that is never held: it kept
				// running through the holds, and the holder measured it.
				if st.PauseWindowNS < st.PauseActualNS/2 || st.PauseBusyNS <= 0 {
					t.Errorf("the target's CPU over the holds: %v over %v (held %v)", time.Duration(st.PauseBusyNS), time.Duration(st.PauseWindowNS), time.Duration(st.PauseActualNS))
				}
				if _, err := os.Stat(filepath.Join(c.sockDir, "bell")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the bell is left after the run: %v", err)
				}
			}
			if n := realtimeThreadsOf(t, os.Getpid()); n != 0 {
				t.Errorf("%d real-time threads left after the run", n)
			}
			if cg != nil {
				if frozen, _ := cg.Frozen(); frozen {
					t.Error("cgroup left frozen after the run")
				}
			}
		})
	}
}

// A freeze is never longer than the hard cap, whatever is asked.
func TestFreezeHardCap(t *testing.T) {
	first, last := twoCores(t)
	cg := testCgroup(t, "capped")
	startSpinner(t, last, &cg)
	// A cap long enough for the test to see the freeze on a busy machine.
	const hardCap = time.Second
	c := startTarget(t, []int{first}, hardCap)
	must(t, c.Configure(wire.Configure{Epoch: 1, Target: true, Batch: 1 << 20, PausePerRoundNS: int64(100 * time.Millisecond), Pause: wire.Pause{Cgroup: &wire.CgroupPause{Freeze: []string{cg.Path}}}}))
	must(t, c.StartSlowdown())
	defer c.stopSlowdown()
	c.mu.Lock()
	grp := c.grp
	c.mu.Unlock()
	grp.Pause(time.Hour)
	start := time.Now()
	waitFor(t, "the freeze", time.Second, func() bool { f, _ := cg.Frozen(); return f })
	waitFor(t, "the hard cap to thaw", 5*time.Second, func() bool { f, _ := cg.Frozen(); return !f })
	if took := time.Since(start); took > hardCap+3*time.Second {
		t.Fatalf("thawed after %v; the cap is %v", took, hardCap)
	}
}

// Configure refuses what its method cannot do here, beyond the message's
// form (wire's tests check that, and one case here that Configure asks).
func TestConfigureMethodChecks(t *testing.T) {
	c := startCtl(t, "target", "spin", time.Second)
	// The service runs on core 0 now; it was started on core 1 (a
	// deployment retargeted since): the check follows where it runs.
	c.cfg.CPUs = []int{1}
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(c.cmd.Process.Pid, &set); err != nil {
		t.Fatal(err)
	}
	cores := func(cs ...int) wire.Pause { return wire.Pause{Cores: &wire.CoresPause{Cores: cs}} }
	freeze := func(p string) wire.Pause { return wire.Pause{Cgroup: &wire.CgroupPause{Freeze: []string{p}}} }
	notCgroup := filepath.Join(t.TempDir(), "slowpoke", "x")
	must(t, os.MkdirAll(notCgroup, 0o755))
	tests := []struct {
		name string
		cf   wire.Configure
		want string
	}{
		{"the target's own core", wire.Configure{Target: true, Batch: 1, Pause: cores(2, 0)}, "core 0 runs the target"},
		{"not a cgroup file system", wire.Configure{Target: true, Batch: 1, Pause: freeze(notCgroup)}, "not on a cgroup file system"},
		{"a form wire refuses", wire.Configure{Pause: cores(1)}, "only the target"},
		{"over the hard cap", wire.Configure{PausePerRoundNS: int64(2 * time.Second)}, "hard cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Configure(tt.cf)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Configure = %v, want an error about %q", err, tt.want)
			}
		})
	}
	must(t, c.Configure(wire.Configure{Target: true, Batch: 1, Pause: cores(1, 2)}))
	must(t, c.Configure(wire.Configure{Batch: 1}))
}

// realtimeThreadsOf counts pid's threads under SCHED_FIFO.
func realtimeThreadsOf(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		var tid int
		fmt.Sscan(e.Name(), &tid)
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy == unix.SCHED_FIFO {
			n++
		}
	}
	return n
}

// A service whose processes leave its process group (a pre-fork server's
// workers in sessions of their own) is still ended whole when it exits:
// its cgroup holds them all.
func TestCgroupEndsWhatTheServiceLeft(t *testing.T) {
	cg := testCgroup(t, "prefork")
	workersFile := t.TempDir() + "/workers"
	c, err := Start(Config{
		Name: "prefork", Command: []string{os.Args[0]}, Env: append(childEnv("prefork"), "WORKERS_FILE="+workersFile),
		Secret: testSecret, Cgroup: cg.Path, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	var workers []int
	waitFor(t, "the workers", 5*time.Second, func() bool {
		b, _ := os.ReadFile(workersFile)
		workers = workers[:0]
		for _, f := range strings.Fields(string(b)) {
			var pid int
			fmt.Sscan(f, &pid)
			workers = append(workers, pid)
		}
		return len(workers) == 3
	})
	if procs, _ := cg.Procs(); len(procs) != 4 {
		t.Fatalf("cgroup holds %v, want the server and its 3 workers", procs)
	}
	c.Signal(syscall.SIGTERM) // reaches the server's group, not the workers' sessions
	done := make(chan int, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the controller did not end")
	}
	for _, pid := range workers {
		if procState(pid) != "" && procState(pid) != "Z" {
			t.Errorf("worker %d outlived its server", pid)
			unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// A freeze that fails on one of its cgroups (removed meanwhile) leaves
// none of the others frozen: no hard cap is armed for a stop that failed,
// so the stop must be undone at once.
func TestFailedFreezeThaws(t *testing.T) {
	_, last := twoCores(t)
	cg, gone := testCgroup(t, "kept"), testCgroup(t, "gone")
	startSpinner(t, last, &cg)
	f, err := pause.OpenFreezer([]pause.Cgroup{cg, gone})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gone.Remove(); err != nil {
		t.Fatal(err)
	}
	if f.Set(true) == nil {
		f.Set(false)
		t.Skip("a removed cgroup's freezer file still takes writes here")
	}
	f.Set(false)
	p := newPauser(time.Hour, freezeStopper{f})
	defer p.Close()
	for i := 0; i < 5; i++ {
		p.Pause(time.Hour)
		time.Sleep(20 * time.Millisecond)
		if frozen, _ := cg.Frozen(); frozen {
			t.Fatalf("after a failed freeze, %s stays frozen", cg.Path)
		}
	}
}

// A stop lasts as long as asked, counted up to the continue. The threads
// a continue wakes may run before the pauser does again; had that time
// been counted as stopped, the stops that follow would have been
// shortened by as much, and the paused service would have had more of its
// core than the pauses leave it (on the development machine, about half
// of every 2 ms freeze came back to the spinner that way).
func TestStopsTakeTheirLength(t *testing.T) {
	_, last := twoCores(t)
	cg := testCgroup(t, "length")
	spinner := startSpinner(t, last, &cg)
	// The pauser shares the spinner's core, as a controller shares its
	// service's.
	pinProcess(t, last)
	f, err := pause.OpenFreezer([]pause.Cgroup{cg})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := newPauser(time.Second, freezeStopper{f})
	const each = 2 * time.Millisecond
	var asked time.Duration
	c0, t0 := processCPU(spinner), time.Now()
	for time.Since(t0) < time.Second {
		p.Pause(each)
		asked += each
		time.Sleep(2 * each)
	}
	p.Close()
	used, elapsed := processCPU(spinner)-c0, time.Since(t0)
	// What the spinner did not get: the freezes, and whatever else ran
	// on its core (this test among others), so never less than the
	// freezes. The last pause asked may have been cut short by Close.
	lost := elapsed - used
	t.Logf("asked %v of freezes in %v; the spinner lost %v; the pauser counted %v stopped", asked, elapsed, lost, time.Duration(p.stats().actual))
	if lost < asked*85/100-each {
		t.Errorf("the spinner lost %v of its core to %v of freezes asked: the stops were shortened", lost, asked)
	}
}

// pinProcess pins every thread of the test process to cpu (threads made
// later inherit it) and undoes it when the test ends.
func pinProcess(t *testing.T, cpu int) {
	t.Helper()
	var was, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		t.Fatal(err)
	}
	one.Set(cpu)
	t.Cleanup(func() {
		if err := threads.SetAffinity(&was); err != nil {
			t.Errorf("restore the test's CPU affinity: %v", err)
		}
	})
	if err := threads.SetAffinity(&one); err != nil {
		t.Fatal(err)
	}
}

// testCgroup makes a cgroup for a test, under test-<pid>, and ends and
// removes it when the test ends; it skips the test where cgroups cannot be
// made.
func testCgroup(t *testing.T, name string) pause.Cgroup {
	t.Helper()
	h, err := pause.FindHierarchy()
	if err != nil {
		t.Skipf("no cgroups: %v", err)
	}
	cg, err := h.Create(fmt.Sprintf("test-%d/%s", os.Getpid(), name))
	if err != nil {
		t.Skipf("no cgroups: %v", err)
	}
	t.Cleanup(func() { cg.Kill(time.Second); cg.Remove() })
	return cg
}
