package local

import (
	"context"
	"fmt"
	"github.com/slowpoke-dev/slowpoke/internal/testroot"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// helperPortEnv, set, makes the test binary a service of its own instead
// of running the tests (TestMain): it listens on that port and spins.
const helperPortEnv = "SLOWPOKE_LOCAL_TEST_LISTEN_SPIN"

func TestMain(m *testing.M) {
	if port := os.Getenv(helperPortEnv); port != "" {
		listenAndSpin(port)
		return
	}
	testroot.Serialize() // one timing package at a time (testroot.Serialize)
	os.Exit(m.Run())
}

// listenAndSpin accepts (and closes) connections on port and burns CPU
// until killed: a service, started outside slowpoke, to attach to.
func listenAndSpin(port string) {
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for x := uint64(0); ; x++ {
		x ^= x << 13
	}
}

// startOutside starts the test binary as a service that listens on a
// free port, outside slowpoke, and returns the port. It is continued and
// killed when the test ends, pass or fail.
func startOutside(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperPortEnv+"="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helper does not listen on port %d", port)
		}
	}
}

// buildSlowpoke builds slowpoke (for the controllers) into dir.
func buildSlowpoke(t *testing.T, dir string) string {
	t.Helper()
	exe := filepath.Join(dir, "slowpoke")
	if out, err := exec.Command("go", "build", "-o", exe, "github.com/slowpoke-dev/slowpoke/cmd/slowpoke").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// startAttachedPair starts two services outside slowpoke, a and b, and a
// deployment attached to both with a as the target.
func startAttachedPair(t *testing.T) *Deployment {
	t.Helper()
	if testing.Short() {
		t.Skip("builds slowpoke and starts services")
	}
	if avail, err := AvailableCPUs(); err != nil || len(avail) < 2 {
		t.Skipf("needs 2 CPUs (have %v, %v)", avail, err)
	}
	dir := t.TempDir()
	exe := buildSlowpoke(t, dir)
	pa, pb := startOutside(t), startOutside(t)
	yaml := fmt.Sprintf(`name: attached-pair
services:
  - {name: a, attach: {port: %d}}
  - {name: b, attach: {port: %d}}
entry: http://127.0.0.1:%d
workload:
  connections: 1
  duration: 1s
  requests:
    - {name: x, method: GET, path: /, weight: 1}
`, pa, pb, pa)
	s, err := spec.Parse([]byte(yaml), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Start(ctx, s, Options{Options: backend.Options{Target: "a", Logf: t.Logf}, Executable: exe, LogDir: filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	return d
}

// Retargeting a deployment of attached services (none started by
// slowpoke, none instrumented: the CPU trigger) moves the new target to
// the target's cores and the old one to the shared cores, and the new
// target's controller then accepts the configuration of every pause
// method and pauses the other service, itself never paused. (Before, an
// attached service's controller judged by the cores it was attached on:
// the cores method's every target after the first was refused with
// "core 0 runs the target, which is never paused".)
func TestRetargetAttached(t *testing.T) {
	d := startAttachedPair(t)
	p0 := d.Placement()
	checkOn(t, d, "a", p0.TargetCPUs)
	checkOn(t, d, "b", p0.CPUs("b"))
	for _, step := range []struct{ target, other string }{{"b", "a"}, {"a", "b"}} {
		if err := d.Retarget(step.target); err != nil {
			t.Fatal(err)
		}
		p := d.Placement()
		checkOn(t, d, step.target, p.TargetCPUs)
		checkOn(t, d, step.other, p.CPUs(step.other))
		for _, m := range []pause.Method{pause.MethodCores, pause.MethodCgroup, pause.MethodSignal} {
			t.Run(step.target+" "+string(m), func(t *testing.T) {
				if _, err := d.PauseMethod(m); err != nil {
					t.Skipf("not here: %v", err)
				}
				slowdown(t, d, m, step.target, step.other)
			})
		}
	}
}

// slowdown configures target and other for method m as the orchestrator
// does, with the CPU trigger, runs a short slowdown, and checks that
// other was paused and target never was.
func slowdown(t *testing.T, d *Deployment, m pause.Method, target, other string) {
	t.Helper()
	tc, oc := d.Service(target).Control, d.Service(other).Control
	tcf := wire.Configure{Epoch: 1, Target: true, Batch: 5, CPUPerCallNS: int64(time.Millisecond), PausePerRoundNS: int64(time.Millisecond)}
	ocf := wire.Configure{Epoch: 1, PausePerRoundNS: int64(time.Millisecond)}
	switch m {
	case pause.MethodCores:
		tcf.Pause.Cores = &wire.CoresPause{Cores: d.Placement().HoldCores()}
		ocf.Pause.Cores = &wire.CoresPause{}
	case pause.MethodCgroup:
		cg, _ := d.FreezeRefs(other)
		tcf.Pause.Cgroup = &wire.CgroupPause{Freeze: []string{cg}}
		ocf.Pause.Cgroup = &wire.CgroupPause{}
	case pause.MethodSignal:
		tcf.Pause.Signal = &wire.SignalPause{Neighbours: []wire.Neighbour{{Name: other, Addr: oc.Addr()}}}
		ocf.Pause.Signal = &wire.SignalPause{}
	}
	if err := oc.Configure(ocf); err != nil {
		t.Fatalf("configure %s: %v", other, err)
	}
	if err := tc.Configure(tcf); err != nil {
		t.Fatalf("configure %s as the target: %v", target, err)
	}
	for _, c := range []*struct {
		name string
		err  error
	}{{other, oc.Start()}, {target, tc.Start()}} {
		if c.err != nil {
			t.Fatalf("start %s: %v", c.name, c.err)
		}
	}
	// Until the other is paused (at least 300 ms, at most 10 s: on a busy
	// machine the target may get little CPU, and its rounds follow its
	// CPU), the target's processes are watched for a stop.
	pausing := tc // the target's controller pauses the other itself
	if m == pause.MethodSignal {
		pausing = oc // the other's controller stops it
	}
	stopped := 0
	var st *wire.Stats
	start := time.Now()
	for deadline := start.Add(10 * time.Second); ; {
		stopped += timesStopped(d, target, 100*time.Millisecond)
		var err error
		if st, err = pausing.Stats(); err != nil {
			t.Fatal(err)
		}
		if st.Pauses > 0 && st.PauseActualNS > 0 && time.Since(start) >= 300*time.Millisecond || time.Now().After(deadline) {
			break
		}
	}
	tst, err := tc.Stats()
	tc.Stop()
	oc.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d rounds started by %s, %d pauses of %s, %v", m, tst.RoundsStarted, target, st.Pauses, other, time.Duration(st.PauseActualNS))
	if st.Pauses == 0 || st.PauseActualNS == 0 {
		t.Errorf("%s was not paused within 10 s: %+v", other, st)
	}
	if stopped > 0 {
		t.Errorf("the target %s was seen stopped %d times", target, stopped)
	}
}

// timesStopped samples the state of target's processes for d, and says
// how many times one was seen stopped.
func timesStopped(d *Deployment, target string, dur time.Duration) int {
	n := 0
	for end := time.Now().Add(dur); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		pids, _ := d.processesOf(d.proc(target))
		for _, pid := range pids {
			if st, ok := proc.Read(pid); ok && (st.State == 'T' || st.State == 't') {
				n++
			}
		}
	}
	return n
}
