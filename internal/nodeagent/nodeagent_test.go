package nodeagent

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/podcgroup"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// The tests lay out pods' cgroups as a kubelet with the cgroupfs driver
// does, under a test directory of this host's hierarchies, each with a real
// busy process, and run real agents (in this process, or in a child that
// is killed) on them.

func newUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func node(t *testing.T) podcgroup.Node {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups")
	}
	n, err := podcgroup.Open(DefaultCgroupRoot)
	if err != nil {
		t.Skip(err)
	}
	return n
}

type fakePod struct {
	uid string
	pid int
	cg  string // the pod's freezer cgroup
}

// makePod makes a pod's cgroups, with one container running a busy loop;
// all of it goes when the test ends, thawed first.
func makePod(t *testing.T, n podcgroup.Node) fakePod { t.Helper(); return makePodUnder(t, n, "") }

// makePodUnder is makePod for a pod under parent, a directory of each
// hierarchy's root (a node's kubelet root, nodeDir), or a fresh one ("").
func makePodUnder(t *testing.T, n podcgroup.Node, parent string) fakePod {
	t.Helper()
	uid := newUID()
	top := fmt.Sprintf("slowpoke-agenttest-%d-%s", os.Getpid(), uid[:8])
	if parent != "" {
		top = filepath.Join(parent, uid[:8])
	}
	rel := filepath.Join(top, "kubepods", "besteffort", "pod"+uid)
	ctr := filepath.Join(rel, "0123abcd")
	trees := []string{n.Freezer}
	if n.CPU != n.Freezer {
		trees = append(trees, n.CPU)
	}
	for _, tree := range trees {
		if err := os.MkdirAll(filepath.Join(tree, ctr), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := fakePod{uid: uid, pid: cmd.Process.Pid, cg: filepath.Join(n.Freezer, rel)}
	t.Cleanup(func() {
		thaw(p.cg, n.V2)
		cmd.Process.Kill()
		cmd.Wait()
		for _, tree := range trees {
			for d := filepath.Join(tree, ctr); strings.HasPrefix(d, filepath.Join(tree, top)); d = filepath.Dir(d) {
				for i := 0; i < 50 && os.Remove(d) != nil; i++ {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
	})
	for _, tree := range trees {
		if err := os.WriteFile(filepath.Join(tree, ctr, "cgroup.procs"), []byte(strconv.Itoa(p.pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func thaw(cg string, v2 bool) {
	if v2 {
		os.WriteFile(filepath.Join(cg, "cgroup.freeze"), []byte("0"), 0)
	} else {
		os.WriteFile(filepath.Join(cg, "freezer.state"), []byte("THAWED"), 0)
	}
}

// frozen says whether the pod's cgroup is frozen (or freezing).
func frozen(t *testing.T, n podcgroup.Node, p fakePod) bool {
	t.Helper()
	if n.V2 {
		b, _ := os.ReadFile(filepath.Join(p.cg, "cgroup.freeze"))
		return strings.TrimSpace(string(b)) == "1"
	}
	b, err := os.ReadFile(filepath.Join(p.cg, "freezer.state"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b)) != "THAWED"
}

func secret() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// freezeOthers configures the target's controller to freeze pods: rounds
// every batch×1 ms of the target's CPU, pause each.
func freezeOthers(t *testing.T, c *controller.Client, batch int, pause time.Duration, pods ...string) {
	t.Helper()
	cf := wire.Configure{Epoch: 1, Target: true, Batch: batch, PausePerRoundNS: int64(pause), CPUPerCallNS: int64(time.Millisecond),
		Pause: wire.Pause{Cgroup: &wire.CgroupPause{Pods: pods}}}
	if err := c.Configure(cf); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
}

// TestAgentFreezesOtherPods: the target's controller reads its pod's CPU
// and freezes the other service's pods in rounds that follow it, recorded
// in the ledger before; Stop, a lapsed lease and Close leave them thawed.
// It refuses to freeze the target's own pod, and the methods that need a
// process group.
func TestAgentFreezesOtherPods(t *testing.T) {
	n := node(t)
	tgt, o1, o2 := makePod(t, n), makePod(t, n), makePod(t, n)
	sec, dir := secret(), t.TempDir()
	a, err := Start(Config{Services: []Service{{Name: "t", Port: freePort(t), Pods: []string{tgt.uid}}, {Name: "o", Port: freePort(t), Pods: []string{o1.uid, o2.uid}}},
		Host: "127.0.0.1", StateDir: dir, Secret: sec, Lease: time.Second, MaxPause: 100 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c := controller.NewClient(a.Addr("t"), sec)
	defer c.Close()
	st0, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	st1, _ := c.Stats()
	if d := time.Duration(st1.CPUNS - st0.CPUNS); d < 20*time.Millisecond {
		t.Errorf("the target's pod used %v of CPU in 200 ms of a busy loop", d)
	}
	for _, tc := range []struct {
		name string
		cf   wire.Configure
		want string
	}{
		{"its own pod", wire.Configure{Target: true, Batch: 1, Pause: wire.Pause{Cgroup: &wire.CgroupPause{Pods: []string{tgt.uid}}}}, "never paused"},
		{"a pod not on the node", wire.Configure{Target: true, Batch: 1, CPUPerCallNS: 1000, Pause: wire.Pause{Cgroup: &wire.CgroupPause{Pods: []string{newUID()}}}}, "no cgroup of pod"},
		{"signals", wire.Configure{Target: true, Batch: 1, Pause: wire.Pause{Signal: &wire.SignalPause{}}}, "no process group"},
		{"cores", wire.Configure{Target: true, Batch: 1, Pause: wire.Pause{Cores: &wire.CoresPause{Cores: []int{0}}}}, "no process group"},
	} {
		err := c.Configure(tc.cf)
		if err == nil {
			err = c.Start()
			c.Stop()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	started := time.Now()
	freezeOthers(t, c, 10, 5*time.Millisecond, o1.uid, o2.uid)
	// Rounds follow the target's CPU, which a loaded machine may give it
	// slowly: the lease (1 s) is renewed, as the orchestrator does, until
	// the freezes come, and the slowdown must still run then.
	var st *wire.Stats
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := c.Renew(); err != nil {
			t.Fatal(err)
		}
		if st, err = c.Stats(); err != nil {
			t.Fatal(err)
		}
		if st.Pauses >= 3 || time.Now().After(deadline) {
			break
		}
	}
	if st.Pauses == 0 || st.PauseActualNS == 0 || !st.Active {
		t.Fatalf("no freezes: %d pauses, %v, active %v (%v since Start)", st.Pauses, time.Duration(st.PauseActualNS), st.Active, time.Since(started))
	}
	t.Logf("%d freezes, %v frozen in all, the longest %v", st.Pauses, time.Duration(st.PauseActualNS), time.Duration(st.PauseMaxNS))
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("ledgers: %v, want the agent's", ents)
	}
	c.Stop()
	time.Sleep(50 * time.Millisecond)
	if frozen(t, n, o1) || frozen(t, n, o2) {
		t.Error("a pod is frozen after Stop")
	}
	// The orchestrator falls silent: the lease lapses and the pods thaw.
	freezeOthers(t, c, 1, 80*time.Millisecond, o1.uid, o2.uid)
	waitFor(t, "a freeze", 2*time.Second, func() bool { return frozen(t, n, o1) })
	waitFor(t, "the lease to end the slowdown", 2*time.Second, func() bool { st, err := c.Stats(); return err == nil && !st.Active })
	time.Sleep(150 * time.Millisecond) // more than a freeze's cap
	if frozen(t, n, o1) || frozen(t, n, o2) {
		t.Error("a pod is frozen after the lease lapsed")
	}
	// Close thaws even a slowdown under way, and removes the ledger.
	freezeOthers(t, c, 1, 80*time.Millisecond, o1.uid, o2.uid)
	waitFor(t, "a freeze", 2*time.Second, func() bool { return frozen(t, n, o1) })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if frozen(t, n, o1) || frozen(t, n, o2) {
		t.Error("a pod is frozen after Close")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("ledgers left after Close: %v", ents)
	}
}

// TestAgentKilled: an agent in a child process freezes a pod and is
// SIGKILLed mid-freeze; the pod stays frozen (nothing else thaws it) until
// the next agent starts, which thaws it. An agent sent SIGTERM mid-freeze
// thaws before it exits 0.
func TestAgentKilled(t *testing.T) {
	n := node(t)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tgt, o := makePod(t, n), makePod(t, n)
			sec, dir := secret(), t.TempDir()
			cfg := Config{Services: []Service{{Name: "t", Port: freePort(t), Pods: []string{tgt.uid}}, {Name: "o", Port: freePort(t), Pods: []string{o.uid}}},
				Host: "127.0.0.1", StateDir: dir, Secret: sec, MaxPause: 2 * time.Second}
			agent, addr := startHelper(t, cfg)
			c := controller.NewClient(addr, sec)
			defer c.Close()
			freezeOthers(t, c, 1, 2*time.Second, o.uid)
			waitFor(t, "a freeze", 5*time.Second, func() bool { return frozen(t, n, o) })
			agent.Process.Signal(sig)
			err := agent.Wait()
			if sig == syscall.SIGTERM {
				if err != nil {
					t.Errorf("the agent exited with %v after SIGTERM", err)
				}
				if frozen(t, n, o) {
					t.Error("the pod is frozen after the agent's SIGTERM")
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Errorf("ledgers left: %v", ents)
				}
				return
			}
			time.Sleep(2500 * time.Millisecond) // past the freeze's cap
			if !frozen(t, n, o) {
				t.Fatal("the pod thawed after its agent was SIGKILLed, with no agent to thaw it: the test proves nothing")
			}
			cfg.Logger = quiet()
			a, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if frozen(t, n, o) {
				t.Error("the next agent left the pod frozen")
			}
		})
	}
}

// startHelper runs an agent with cfg in a child process (TestAgentHelper)
// and returns it and its target's control address. It is killed when the
// test ends.
func startHelper(t *testing.T, cfg Config) (*exec.Cmd, string) {
	t.Helper()
	b, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^TestAgentHelper$")
	cmd.Env = append(os.Environ(), "NODEAGENT_HELPER="+string(b))
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	return cmd, strings.TrimSpace(line)
}

// TestAgentHelper is the agent of startHelper.
func TestAgentHelper(t *testing.T) {
	env := os.Getenv("NODEAGENT_HELPER")
	if env == "" {
		t.Skip("a helper process")
	}
	var cfg Config
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Logger = quiet()
	a, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(a.Addr(cfg.Services[0].Name))
	if err := a.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	// Bound and closed at once: the agent binds it a moment later.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// The watchdog (Watch) leaves a live agent's frozen pod alone, and thaws
// it within a tick or two once the agent is SIGKILLed, long before the
// freeze's own cap, which died with the agent.
func TestWatchThawsKilledAgent(t *testing.T) {
	n := node(t)
	tgt, o := makePod(t, n), makePod(t, n)
	sec, dir := secret(), t.TempDir()
	const pause = 4 * time.Second
	cfg := Config{Services: []Service{{Name: "t", Port: freePort(t), Pods: []string{tgt.uid}}, {Name: "o", Port: freePort(t), Pods: []string{o.uid}}},
		Host: "127.0.0.1", StateDir: dir, Secret: sec, MaxPause: pause}
	agent, addr := startHelper(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- Watch(ctx, DefaultCgroupRoot, dir, WatchEvery, quiet()) }()
	defer func() {
		cancel()
		if err := <-watched; err != nil {
			t.Errorf("Watch: %v", err)
		}
	}()
	c := controller.NewClient(addr, sec)
	defer c.Close()
	freezeOthers(t, c, 1, pause, o.uid)
	waitFor(t, "a freeze", 5*time.Second, func() bool { return frozen(t, n, o) })
	frozenAt := time.Now()
	time.Sleep(5 * WatchEvery)
	if !frozen(t, n, o) {
		t.Fatalf("the pod thawed %v into a freeze of %v while its agent ran: the watchdog thawed a live agent's pod, or the freeze ended early", time.Since(frozenAt).Round(time.Millisecond), pause)
	}
	agent.Process.Signal(syscall.SIGKILL)
	agent.Wait()
	killed := time.Now()
	waitFor(t, "the watchdog's thaw", pause, func() bool { return !frozen(t, n, o) })
	if took := time.Since(killed); took > time.Second || time.Since(frozenAt) >= pause {
		t.Errorf("the pod thawed %v after its agent's SIGKILL (%v into a %v freeze): not the watchdog's doing", took.Round(time.Millisecond), time.Since(frozenAt).Round(time.Millisecond), pause)
	} else {
		t.Logf("thawed %v after the SIGKILL", took.Round(time.Millisecond))
	}
	// The watchdog removes the ledger once it has thawed what it records:
	// just after the thaw seen above, on a busy machine a little later.
	var left []os.DirEntry
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if left, _ = os.ReadDir(dir); len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) != 0 {
		t.Errorf("the gone agent's ledger is left: %v", left)
	}
}
