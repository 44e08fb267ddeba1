package guard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/slowpoke-dev/slowpoke/internal/cpuwork"
	"github.com/slowpoke-dev/slowpoke/internal/inservice"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/stale"
	"github.com/slowpoke-dev/slowpoke/internal/testroot"
)

const roleEnv = "SLOWPOKE_GUARD_TEST_ROLE"

// TestMain lets the test binary play every process of a run: the guard
// ("guard" as its argument, as the orchestrator starts it), an
// orchestrator, controllers and services.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "guard" {
		os.Exit(Main(os.Stdin, os.Stderr))
	}
	if os.Getenv(roleEnv) != "" {
		testroot.Follow() // a helper: end with the test binary
	}
	switch os.Getenv(roleEnv) {
	case "":
		testroot.Serialize() // one timing package at a time (testroot.Serialize)
		os.Exit(m.Run())
	case "service":
		for {
			cpuwork.Spin(time.Millisecond)
			time.Sleep(time.Millisecond)
		}
	case "wrapper": // a shell wrapper's shape: a child in the same group, and wait
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), roleEnv+"=service")
		if err := cmd.Start(); err != nil {
			os.Exit(3)
		}
		fmt.Println(cmd.Process.Pid)
		cmd.Wait()
	case "controller":
		fakeController()
	case "orchestrator":
		fakeOrchestrator()
	}
	os.Exit(100)
}

// fakeController starts its service as the real controller does (a
// process group of its own, SIGCONT when the controller dies, in the
// service's cgroup when there is one, the service's name and a socket in a
// directory named after the controller in its environment), prints the
// service's PID and its child's, and waits.
func fakeController() {
	dir, err := os.MkdirTemp("", stale.Prefix(inservice.SocketDirKind))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(4)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=wrapper",
		inservice.EnvSocket+"="+filepath.Join(dir, "link.sock"), inservice.EnvService+"="+os.Getenv("NAME"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGCONT}
	out, _ := cmd.StdoutPipe()
	if p := os.Getenv("CGROUP"); p != "" {
		err = pause.Cgroup{Path: p, V2: os.Getenv("CGROUP_V2") == "1"}.Start(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(4)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	fmt.Printf("%d %s\n", cmd.Process.Pid, strings.TrimSpace(line))
	for {
		time.Sleep(time.Hour)
	}
}

// runInfo is what the fake orchestrator tells the test.
type runInfo struct {
	Guard       int      `json:"guard"`
	Controllers []int    `json:"controllers"`
	Services    []int    `json:"services"` // every process of every service
	Cgroups     []string `json:"cgroups"`
	Record      string   `json:"record"`
	Dir         string   `json:"dir"`
}

// fakeOrchestrator starts a guard and two controllers as the local backend
// does, freezes the first service's cgroup (a round in progress), prints
// what it started, and ends the run cleanly when its standard input closes.
func fakeOrchestrator() {
	dir := os.Getenv("DIR")
	g, err := Spawn(os.Args[0], filepath.Join(dir, "guard.log"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(5)
	}
	me, _ := Identify(os.Getpid())
	run := Run{Orchestrator: me, Record: filepath.Join(dir, "run.json")}
	os.WriteFile(run.Record, []byte("{}"), 0o600)
	var cgs []pause.Cgroup
	noGroups := os.Getenv("NO_GROUPS") == "1" // as before a run knows its services' groups, without cgroups
	if h, err := pause.FindHierarchy(); err == nil && !noGroups {
		run.V2 = h.V2
		for i := 0; i < 2; i++ {
			// Named as a run's (run-PID-START of the orchestrator), so
			// that a real run started meanwhile leaves them alone, and
			// the next one removes them if this test is killed.
			cg, err := h.Create(fmt.Sprintf("run-%d-%s/s%d", me.PID, me.Start, i))
			if err != nil {
				break
			}
			cgs = append(cgs, cg)
			run.Cgroups = append(run.Cgroups, cg.Path)
		}
	}
	if err := g.Run(run); err != nil {
		fmt.Println("error", err)
		os.Exit(6)
	}
	info := runInfo{Guard: g.PID(), Cgroups: run.Cgroups, Record: run.Record, Dir: dir}
	var ctls []*exec.Cmd
	var groups []Proc
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), roleEnv+"=controller", fmt.Sprintf("NAME=s%d", i))
		if i < len(cgs) {
			cmd.Env = append(cmd.Env, "CGROUP="+cgs[i].Path, "CGROUP_V2="+map[bool]string{true: "1", false: "0"}[cgs[i].V2])
		}
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(7)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		var svc, child int
		fmt.Sscan(line, &svc, &child)
		ctl, _ := Identify(cmd.Process.Pid)
		group, _ := Identify(svc)
		groups = append(groups, group)
		s := Service{Name: fmt.Sprintf("s%d", i), Controller: ctl, Group: group}
		if noGroups {
			s.Group = Proc{}
		}
		if i < len(cgs) {
			s.Cgroup, s.V2 = cgs[i].Path, cgs[i].V2
		}
		g.Service(s)
		info.Controllers = append(info.Controllers, cmd.Process.Pid)
		ctls = append(ctls, cmd)
		info.Services = append(info.Services, svc, child)
	}
	if len(cgs) > 0 {
		cgs[0].Freeze()
	}
	b, _ := json.Marshal(info)
	fmt.Println(string(b))
	io.Copy(io.Discard, os.Stdin)
	// A clean end, as the local backend's: the services first (their
	// cgroups, or their groups where there are none), then the
	// controllers, then Done. A service left to its controller's death
	// would race Done at the guard.
	for _, cg := range cgs {
		cg.Kill(time.Second)
		cg.Remove()
	}
	for _, grp := range groups {
		grp.SignalGroup(unix.SIGCONT)
		grp.SignalGroup(unix.SIGKILL)
	}
	for _, c := range ctls {
		c.Process.Kill()
		c.Wait() // gone before the test looks
	}
	g.Done()
	os.Exit(0)
}

// startRun starts the fake orchestrator and reads what it started.
func startRun(t *testing.T, env ...string) (*exec.Cmd, io.WriteCloser, runInfo) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), roleEnv+"=orchestrator", "DIR="+dir), env...)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	var info runInfo
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("orchestrator said %q", line)
	}
	t.Cleanup(func() {
		// Whatever the test did, nothing of the run may outlive it. A
		// process killed a moment ago may still be exiting: give it a
		// moment before calling it left over.
		pids := append(append([]int{info.Guard}, info.Controllers...), info.Services...)
		for deadline := time.Now().Add(5 * time.Second); !gone(pids...) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		for _, pid := range pids {
			if p, ok := Identify(pid); ok && p.Alive() {
				t.Errorf("process %d of the run is still there", pid)
				unix.Kill(pid, unix.SIGKILL)
			}
		}
		for _, p := range info.Cgroups {
			cg := pause.Cgroup{Path: p}
			cg.Kill(time.Second)
			cg.Remove()
		}
		cmd.Process.Kill()
		cmd.Wait()
		stale.Sweep(os.TempDir(), inservice.SocketDirKind) // the killed controllers'
	})
	return cmd, stdin, info
}

func gone(pids ...int) bool {
	for _, pid := range pids {
		if _, alive := Identify(pid); alive {
			return false
		}
	}
	return true
}

func waitGone(t *testing.T, what string, timeout time.Duration, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !gone(pids...) {
		if time.Now().After(deadline) {
			var left []string
			for _, pid := range pids {
				if _, alive := Identify(pid); alive {
					b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
					left = append(left, strings.TrimSpace(string(b)))
				}
			}
			t.Fatalf("%s still there after %v:\n%s", what, timeout, strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The orchestrator killed with SIGKILL, a service frozen meanwhile: the
// guard ends every controller and every process of every service (a
// wrapper's child included), thaws and removes the cgroups and the run
// record, and exits. Several times, since what a kill interrupts varies.
func TestOrchestratorKilled(t *testing.T) {
	for trial := 0; trial < 3; trial++ {
		orch, _, info := startRun(t)
		all := append(append([]int{info.Guard}, info.Controllers...), info.Services...)
		for _, pid := range all {
			if gone(pid) {
				t.Fatalf("process %d of the run ended before the test began", pid)
			}
		}
		start := time.Now()
		orch.Process.Kill()
		orch.Wait()
		waitGone(t, "the run's processes", 10*time.Second, all...)
		t.Logf("trial %d: everything ended %v after the kill", trial+1, time.Since(start).Round(time.Millisecond))
		for _, p := range info.Cgroups {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("cgroup %s left", p)
			}
		}
		if _, err := os.Stat(info.Record); err == nil {
			t.Error("run record left")
		}
	}
}

// The orchestrator killed while it started the run, before it knew its
// services' process groups, on a machine without cgroups: the guard finds
// each service as its controller's child before it kills the controller,
// and ends it.
func TestOrchestratorKilledBeforeGroupsKnown(t *testing.T) {
	orch, _, info := startRun(t, "NO_GROUPS=1")
	if len(info.Cgroups) != 0 {
		t.Fatalf("cgroups %v in a run without them", info.Cgroups)
	}
	all := append(append([]int{info.Guard}, info.Controllers...), info.Services...)
	orch.Process.Kill()
	orch.Wait()
	waitGone(t, "the run's processes", 10*time.Second, all...)
}

// A controller killed with SIGKILL before the orchestrator learned its
// service's process group, on a machine without cgroups: its service is
// no longer its child, and the guard finds it (its child too) by its
// environment and ends it; the other service runs on.
func TestControllerKilledBeforeGroupsKnown(t *testing.T) {
	orch, stdin, info := startRun(t, "NO_GROUPS=1")
	if gone(append(info.Controllers, info.Services...)...) {
		t.Fatal("the run's processes ended before the test began")
	}
	unix.Kill(info.Services[0], unix.SIGSTOP) // as a round would leave it
	unix.Kill(info.Controllers[0], unix.SIGKILL)
	waitGone(t, "the killed controller's service", 10*time.Second, info.Services[0], info.Services[1])
	if gone(info.Controllers[1]) || gone(info.Services[2]) || gone(info.Services[3]) {
		t.Error("the other service or its controller ended too")
	}
	stdin.Close()
	if err := orch.Wait(); err != nil {
		t.Fatalf("orchestrator: %v", err)
	}
	waitGone(t, "the guard after a clean end", 5*time.Second, info.Guard)
}

// A controller killed with SIGKILL: its service (its child too) ends, the
// run's cgroups are thawed, and the other service runs on; the run then
// ends cleanly.
func TestControllerKilled(t *testing.T) {
	orch, stdin, info := startRun(t)
	if gone(append(info.Controllers, info.Services...)...) {
		t.Fatal("the run's processes ended before the test began")
	}
	unix.Kill(info.Controllers[0], unix.SIGKILL)
	waitGone(t, "the killed controller's service", 10*time.Second, info.Services[0], info.Services[1])
	if gone(info.Controllers[1]) || gone(info.Services[2]) || gone(info.Services[3]) {
		t.Error("the other service or its controller ended too")
	}
	if len(info.Cgroups) > 0 {
		if frozen, err := (pause.Cgroup{Path: info.Cgroups[0]}).Frozen(); frozen || err != nil {
			b, _ := os.ReadFile(filepath.Join(info.Cgroups[0], "freezer.state"))
			procs, _ := os.ReadFile(filepath.Join(info.Cgroups[0], "cgroup.procs"))
			log, _ := os.ReadFile(filepath.Join(info.Dir, "guard.log"))
			t.Errorf("cgroup still frozen (%v): %q, procs %q\n%s", err, b, procs, log)
		}
	}
	stdin.Close()
	if err := orch.Wait(); err != nil {
		t.Fatalf("orchestrator: %v", err)
	}
	waitGone(t, "the guard after a clean end", 5*time.Second, info.Guard)
}

func TestStartTime(t *testing.T) {
	me, ok := Identify(os.Getpid())
	if !ok || !me.Alive() {
		t.Fatalf("this process: %+v, %v", me, ok)
	}
	if (Proc{PID: me.PID, Start: me.Start + "1"}).Alive() {
		t.Error("a recycled PID passes for the same process")
	}
	if (Proc{PID: 1 << 22, Start: "1"}).Alive() {
		t.Error("a missing process is alive")
	}
}

// The orchestrator dies with a service's message still unread in the pipe:
// the guard reads the pipe to its end before it ends the run, so that the
// service told last is ended too.
func TestLateMessageEnded(t *testing.T) {
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Skipf("sleep: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	orch, ctl := start(), start()
	g, in, logb, send := startGuard(t)
	o, _ := Identify(orch.Process.Pid)
	c, _ := Identify(ctl.Process.Pid)
	send(message{Op: "run", Run: &Run{Orchestrator: o}})
	time.Sleep(200 * time.Millisecond) // the guard watches the orchestrator
	orch.Process.Kill()
	orch.Wait()
	time.Sleep(200 * time.Millisecond) // its pidfd has fired
	send(message{Op: "service", Service: &Service{Name: "late", Controller: c}})
	in.Close()
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the guard did not exit:\n%s", logb.String())
	}
	if c.Alive() {
		t.Errorf("the late service's controller (PID %d) outlived the run:\n%s", c.PID, logb.String())
	}
}

// A service told to the guard after its controller died (the guard reads
// its pipe late, on a busy host) is ended as if the controller had died
// after: not left running until the run ends.
func TestServiceOfDeadController(t *testing.T) {
	start := func(group bool) (*exec.Cmd, chan struct{}) {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
		if err := cmd.Start(); err != nil {
			t.Skipf("sleep: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-exited })
		return cmd, exited
	}
	orch, _ := start(false)
	ctl, ctlExited := start(false)
	svc, exited := start(true)
	g, in, logb, send := startGuard(t)
	o, _ := Identify(orch.Process.Pid)
	c, _ := Identify(ctl.Process.Pid)
	grp, _ := Identify(svc.Process.Pid)
	send(message{Op: "run", Run: &Run{Orchestrator: o}})
	ctl.Process.Kill()
	<-ctlExited
	send(message{Op: "service", Service: &Service{Name: "told-late", Controller: c, Group: grp}})
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Errorf("the service of a controller dead before the guard heard of it still runs:\n%s", logb.String())
	}
	in.Close()
	g.Wait()
}

// startGuard starts a guard (this test binary as "slowpoke guard"), killed
// when the test ends; send writes it a message, its log is in logb.
func startGuard(t *testing.T) (g *exec.Cmd, in io.WriteCloser, logb *strings.Builder, send func(message)) {
	t.Helper()
	g = exec.Command(os.Args[0], "guard")
	in, _ = g.StdinPipe()
	logb = &strings.Builder{}
	g.Stderr = logb
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Process.Kill(); g.Wait() })
	send = func(m message) {
		b, _ := json.Marshal(m)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	return g, in, logb, send
}

// strays finds a service's processes by their environment, and only for
// the controller that started them: not for another service's name, not
// for a controller whose pid now runs another process (a reused pid).
func TestStrays(t *testing.T) {
	me, ok := Identify(os.Getpid())
	if !ok {
		t.Skip("cannot read start times from /proc")
	}
	sock := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d-test", inservice.SocketDirKind, me.PID), "link.sock")
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{inservice.EnvService + "=svc", inservice.EnvSocket + "=" + sock}
	if err := cmd.Start(); err != nil {
		t.Skip("cannot run sleep:", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, ok := proc.Getenv(cmd.Process.Pid, inservice.EnvService); ok {
			break // the environment is set a moment after exec begins
		}
	}
	for _, tc := range []struct {
		name  string
		s     Service
		found bool
	}{
		{"its controller", Service{Name: "svc", Controller: me}, true},
		{"another service", Service{Name: "other", Controller: me}, false},
		{"a reused pid", Service{Name: "svc", Controller: Proc{PID: me.PID, Start: "0"}}, false},
		{"another controller", Service{Name: "svc", Controller: Proc{PID: me.PID + 1, Start: me.Start}}, false},
	} {
		ps := strays(tc.s)
		found := slices.ContainsFunc(ps, func(s proc.Stat) bool { return s.PID == cmd.Process.Pid })
		if found != tc.found || len(ps) > 1 {
			t.Errorf("%s: strays %v, want the child (PID %d) %v", tc.name, ps, cmd.Process.Pid, tc.found)
		}
	}
}

// A Proc is signalled only while its pid is still its own: a Proc with
// another start time (a recycled pid) is never signalled, and a group is
// signalled whole through its leader.
func TestProcSignal(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { unix.Kill(-pid, unix.SIGKILL); cmd.Wait() })
	me, ok := Identify(pid)
	if !ok {
		t.Fatal("cannot identify the test's process")
	}
	// Both sleeps are in the group before anything is signalled.
	waitFor(t, 5*time.Second, func() bool {
		n := 0
		for _, st := range proc.All() {
			if st.PGRP == pid && st.PID != pid {
				n++
			}
		}
		return n == 2
	})
	other := Proc{PID: pid, Start: me.Start + "0"}
	if other.Signal(unix.SIGKILL) || other.SignalGroup(unix.SIGKILL) {
		t.Fatal("a Proc with another start time was signalled")
	}
	if (Proc{}).Signal(unix.SIGKILL) || (Proc{PID: -1}).SignalGroup(unix.SIGKILL) {
		t.Fatal("an empty Proc was signalled")
	}
	if !me.Alive() {
		t.Fatal("the process died of a refused signal")
	}
	if !me.SignalGroup(unix.SIGKILL) {
		t.Fatal("the group was not signalled")
	}
	cmd.Wait()
	waitFor(t, 5*time.Second, func() bool {
		for _, st := range proc.All() {
			if st.PGRP == pid && !st.Ended() {
				return false
			}
		}
		return true
	})
	if me.Signal(unix.SIGKILL) {
		t.Error("an ended process was signalled")
	}
}

func waitFor(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
