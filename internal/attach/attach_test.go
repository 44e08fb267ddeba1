package attach

import (
	"bufio"
	"context"
	"fmt"
	"github.com/slowpoke-dev/slowpoke/internal/testroot"
	"io"
	"net"
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

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/threads"
)

// The test binary is also the service attached to, run with $ATTACH_HELPER:
//
//	listen: listens on a TCP port (ATTACH_REUSEPORT=1: one that others
//	  may listen on too, given as ATTACH_PORT), prints "port N", and for
//	  every line "fork" on its standard input starts a child that holds
//	  the listening socket and prints "child PID";
//	sleep: waits to be killed.
func TestMain(m *testing.M) {
	switch os.Getenv("ATTACH_HELPER") {
	case "listen":
		helperListen()
		return
	case "sleep":
		select {}
	}
	testroot.Serialize() // one timing package at a time (testroot.Serialize)
	os.Exit(m.Run())
}

func helperListen() {
	lc := net.ListenConfig{}
	if os.Getenv("ATTACH_REUSEPORT") == "1" {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
			return serr
		}
	}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:"+os.Getenv("ATTACH_PORT"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("port", ln.Addr().(*net.TCPAddr).Port)
	f, _ := ln.(*net.TCPListener).File()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "fork" {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), "ATTACH_HELPER=sleep")
			c.ExtraFiles = []*os.File{f}
			if err := c.Start(); err != nil {
				fmt.Println("error", err)
				continue
			}
			fmt.Println("child", c.Process.Pid)
		}
	}
	select {} // stdin closed: go on listening until killed
}

// helper is a listening helper process started by a test.
type helper struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	port int
	kids []int
}

// startHelper starts a listening helper; every process it starts is
// continued and killed when the test ends, pass or fail, by its PID.
func startHelper(t *testing.T, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), "ATTACH_HELPER=listen"), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		for _, pid := range append([]int{cmd.Process.Pid}, h.kids...) {
			unix.Kill(pid, unix.SIGCONT)
			unix.Kill(pid, unix.SIGKILL)
		}
		cmd.Wait()
		// The children are reparented away from this test: wait until
		// they are gone, by their PIDs.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			alive := false
			for _, k := range h.kids {
				if st, ok := proc.Read(k); ok && !st.Ended() {
					alive = true
				}
			}
			if !alive {
				break
			}
		}
	})
	line := h.line(t)
	if _, err := fmt.Sscanf(line, "port %d", &h.port); err != nil {
		t.Fatalf("helper: %q", line)
	}
	return h
}

func (h *helper) line(t *testing.T) string {
	t.Helper()
	if !h.out.Scan() {
		t.Fatal("the helper said nothing")
	}
	return h.out.Text()
}

// fork makes the helper start a child holding its socket.
func (h *helper) fork(t *testing.T) int {
	t.Helper()
	fmt.Fprintln(h.in, "fork")
	var pid int
	if line := h.line(t); func() error { _, err := fmt.Sscanf(line, "child %d", &pid); return err }() != nil {
		t.Fatalf("helper: %q", line)
	}
	h.kids = append(h.kids, pid)
	return pid
}

func (h *helper) pid() int { return h.cmd.Process.Pid }

// testCgroup makes a v1 freezer cgroup for one test under slowpoke's own
// directory, removed when the test ends (its processes are the test's to
// end first). It skips where there is none.
func testCgroup(t *testing.T, name string) pause.Cgroup {
	t.Helper()
	h, err := pause.FindHierarchy()
	if err != nil || h.V2 {
		t.Skipf("no v1 freezer cgroups here (%v)", err)
	}
	cg, err := h.Create(fmt.Sprintf("attach-test-%d/%s", os.Getpid(), name))
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		cg.Thaw()
		// What a failed test left in it goes back to this test's own
		// freezer cgroup (the processes are ended by their own cleanup,
		// which runs after this one).
		own, _ := proc.Cgroups(os.Getpid())
		home := filepath.Join(freezerMount(), own["freezer"], "cgroup.procs")
		left, _ := cg.Procs()
		for _, pid := range left {
			os.WriteFile(home, []byte(strconv.Itoa(pid)), 0)
		}
		for i := 0; i < 100; i++ {
			if unix.Rmdir(cg.Path) == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		unix.Rmdir(filepath.Dir(cg.Path))
	})
	return cg
}

func TestFind(t *testing.T) {
	single := startHelper(t)
	forked := startHelper(t)
	forked.fork(t)
	forked.fork(t)
	// Two unrelated processes listening on one port (SO_REUSEPORT).
	free := freePort(t)
	reuse1 := startHelper(t, "ATTACH_REUSEPORT=1", "ATTACH_PORT="+strconv.Itoa(free))
	startHelper(t, "ATTACH_REUSEPORT=1", "ATTACH_PORT="+strconv.Itoa(free))

	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A PID that no process has: one that ran and was reaped.
	gone := exec.Command("true")
	gone.Run()

	tests := []struct {
		name    string
		attach  spec.Attach
		want    []int
		wantErr string
	}{
		{"port", spec.Attach{Port: single.port}, []int{single.pid()}, ""},
		{"port held by a parent and its children", spec.Attach{Port: forked.port}, []int{forked.pid()}, ""},
		{"port held by unrelated processes", spec.Attach{Port: reuse1.port}, nil, "none is the parent of the others"},
		{"port nobody listens on", spec.Attach{Port: freePort(t)}, nil, "nothing listens on TCP port"},
		{"pid file", spec.Attach{PIDFile: write("ok.pid", strconv.Itoa(single.pid())+"\n")}, []int{single.pid()}, ""},
		{"pid file with more lines", spec.Attach{PIDFile: write("more.pid", strconv.Itoa(single.pid())+"\nsomething else\n")}, []int{single.pid()}, ""},
		{"stale pid file", spec.Attach{PIDFile: write("stale.pid", strconv.Itoa(gone.Process.Pid))}, nil, "which is not running"},
		{"pid file without a pid", spec.Attach{PIDFile: write("bad.pid", "hello")}, nil, "does not hold a PID"},
		{"no pid file", spec.Attach{PIDFile: filepath.Join(dir, "none.pid")}, nil, "no such file"},
		{"no such cgroup", spec.Attach{Cgroup: "/no-such-cgroup-here"}, nil, "no cgroup /no-such-cgroup-here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(&tt.attach)
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Find(%+v) = %v, %v; want an error containing %q", tt.attach, got, err, tt.wantErr)
			case tt.wantErr == "" && (err != nil || !slices.Equal(got, tt.want)):
				t.Errorf("Find(%+v) = %v, %v; want %v", tt.attach, got, err, tt.want)
			}
		})
	}

	t.Run("cgroup", func(t *testing.T) {
		cg := testCgroup(t, "find")
		sub, err := (pause.Hierarchy{Root: filepath.Dir(cg.Path)}).Create(filepath.Base(cg.Path) + "/sub")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Rmdir(sub.Path) })
		a, b := startHelper(t), startHelper(t)
		for _, m := range []struct {
			dir string
			pid int
		}{{cg.Path, a.pid()}, {sub.Path, b.pid()}} {
			if err := os.WriteFile(filepath.Join(m.dir, "cgroup.procs"), []byte(strconv.Itoa(m.pid)), 0); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { a.cmd.Process.Kill(); b.cmd.Process.Kill(); a.cmd.Wait(); b.cmd.Wait() })
		want := []int{a.pid(), b.pid()}
		slices.Sort(want)
		got, err := Find(&spec.Attach{Cgroup: cg.Path})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("by directory: %v, %v; want %v", got, err, want)
		}
		// As /proc/PID/cgroup writes it.
		rel := strings.TrimPrefix(cg.Path, freezerMount())
		got, err = Find(&spec.Attach{Cgroup: rel})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("by %s: %v, %v; want %v", rel, got, err, want)
		}
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestCaptureRefuses(t *testing.T) {
	stopped := startHelper(t)
	unix.Kill(stopped.pid(), unix.SIGSTOP)
	waitState(t, stopped.pid(), 'T')
	tests := []struct {
		name string
		pid  int
		want string
	}{
		{"init", 1, "refusing to attach to PID 1"},
		{"slowpoke itself", os.Getpid(), "slowpoke itself runs under process"},
		{"slowpoke's parent", os.Getppid(), "slowpoke itself runs under process"},
		{"a stopped process", stopped.pid(), "is stopped"},
		{"a kernel thread", 2, "kernel thread"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Capture("x", []int{tt.pid}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Capture(%d) = %v, want an error containing %q", tt.pid, err, tt.want)
			}
		})
	}
}

func waitState(t *testing.T, pid int, state byte) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, _ := proc.Read(pid)
		if st.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d in state %c, want %c", pid, st.State, state)
		}
	}
}

// affinity is a process's threads' CPU affinity and nice value, and its
// freezer cgroup.
type snapshot struct {
	threads map[int]string
	freezer string
}

func snap(t *testing.T, pid int) snapshot {
	t.Helper()
	s := snapshot{threads: map[int]string{}}
	tids, err := threadIDs(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		var set unix.CPUSet
		unix.SchedGetaffinity(tid, &set)
		prio, _ := unix.Getpriority(unix.PRIO_PROCESS, tid)
		s.threads[tid] = fmt.Sprintf("cpus %v nice %d", threads.CPUs(&set), 20-prio)
	}
	cgs, _ := proc.Cgroups(pid)
	s.freezer = cgs["freezer"]
	return s
}

// A service attached, pinned, moved into slowpoke's cgroup, stopped and
// frozen, with a child born during the run, is given back as it was: every
// process running, every thread on its cores with its nice value, every
// process in its cgroup; the child, in its parent's.
func TestApplyRestore(t *testing.T) {
	avail, _ := currentCPUs()
	if len(avail) < 2 {
		t.Skip("needs two CPUs to pin to one")
	}
	h := startHelper(t)
	kid := h.fork(t)
	// Not as a service starts: one thread of the root on the last CPU
	// only, and the root niced.
	tids, _ := threadIDs(h.pid())
	last := avail[len(avail)-1]
	one := threads.CPUSet([]int{last})
	if err := unix.SchedSetaffinity(tids[len(tids)-1], &one); err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		unix.Setpriority(unix.PRIO_PROCESS, tid, 3)
	}
	before := map[int]snapshot{h.pid(): snap(t, h.pid()), kid: snap(t, kid)}

	cg := testCgroup(t, "restore")
	s, err := Capture("svc", []int{h.pid()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Root().PID != h.pid() || len(s.Procs) != 2 {
		t.Fatalf("captured %+v, want the helper and its child", s.Procs)
	}
	s.Cgroup = cg.Path
	if err := s.Apply([]int{avail[0]}, &cg); err != nil {
		t.Fatal(err)
	}
	born := h.fork(t) // during the run: it starts in slowpoke's cgroup
	procs, _ := cg.Procs()
	slices.Sort(procs)
	want := []int{h.pid(), kid, born}
	slices.Sort(want)
	if !slices.Equal(procs, want) {
		t.Errorf("slowpoke's cgroup holds %v, want %v", procs, want)
	}
	for _, pid := range want {
		for tid, a := range snap(t, pid).threads {
			if !strings.HasPrefix(a, fmt.Sprintf("cpus [%d] ", avail[0])) {
				t.Errorf("process %d thread %d: %s, want it pinned to CPU %d", pid, tid, a, avail[0])
			}
		}
	}

	// Paused as a controller pauses it, and frozen; then given back.
	set := s.Open()
	defer set.Close()
	if got := set.PIDs(); len(got) != 3 {
		t.Errorf("the set holds %v, want 3 processes", got)
	}
	if err := set.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for _, pid := range want {
		waitState(t, pid, 'T')
	}
	if err := cg.Freeze(); err != nil {
		t.Fatal(err)
	}
	if problems := s.Restore(); len(problems) > 0 {
		t.Errorf("Restore: %v", problems)
	}
	for _, pid := range want {
		if st, _ := proc.Read(pid); st.State == 'T' {
			t.Errorf("process %d is left stopped", pid)
		}
	}
	if frozen, _ := cg.Frozen(); frozen {
		t.Error("slowpoke's cgroup is left frozen")
	}
	if procs, _ := cg.Procs(); len(procs) > 0 {
		t.Errorf("processes %v are left in slowpoke's cgroup", procs)
	}
	for pid, b := range before {
		same(t, pid, b, snap(t, pid))
	}
	// The child born in the run: its parent's cgroup, and its parent's
	// first thread's affinity and nice value.
	nb := snap(t, born)
	if nb.freezer != before[h.pid()].freezer {
		t.Errorf("the child born in the run is in %s, want %s", nb.freezer, before[h.pid()].freezer)
	}
	first := before[h.pid()].threads[h.pid()]
	for tid, a := range nb.threads {
		if a != first {
			t.Errorf("born thread %d: %s, want %s", tid, a, first)
		}
	}
	// Restore again changes nothing.
	if problems := s.Restore(); len(problems) > 0 {
		t.Errorf("a second Restore: %v", problems)
	}
	same(t, h.pid(), before[h.pid()], snap(t, h.pid()))
}

// same checks that a process is as it was: its cgroup, and every thread
// it had then (a Go program starts threads as it goes).
func same(t *testing.T, pid int, before, after snapshot) {
	t.Helper()
	if after.freezer != before.freezer {
		t.Errorf("process %d: in %s after the run, %s before", pid, after.freezer, before.freezer)
	}
	for tid, b := range before.threads {
		if a, ok := after.threads[tid]; ok && a != b {
			t.Errorf("process %d thread %d: %s after the run, %s before", pid, tid, a, b)
		}
	}
}

// A Set drops the processes that exit, and refuses to signal when none is
// left; its signals reach only the service's processes.
func TestSet(t *testing.T) {
	h := startHelper(t)
	kid := h.fork(t)
	other := startHelper(t)
	s, err := Capture("svc", []int{h.pid()})
	if err != nil {
		t.Fatal(err)
	}
	set := s.Open()
	defer set.Close()
	if err := set.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, kid, 'T')
	if st, _ := proc.Read(other.pid()); st.State == 'T' {
		t.Error("a process not of the service was stopped")
	}
	set.Signal(unix.SIGCONT)
	unix.Kill(kid, unix.SIGKILL)
	// Reaped by init once it has exited: wait until it is gone.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, ok := proc.Read(kid); !ok || st.Ended() {
			break
		}
	}
	set.Refresh()
	if got := set.PIDs(); !slices.Equal(got, []int{h.pid()}) {
		t.Errorf("after the child exited the set holds %v, want [%d]", got, h.pid())
	}
	h.cmd.Process.Kill()
	h.cmd.Wait()
	select {
	case <-Wait(s.Root()):
	case <-time.After(5 * time.Second):
		t.Error("Wait: no exit seen")
	}
	set.Refresh()
	if err := set.Signal(unix.SIGCONT); err == nil {
		t.Error("Signal with no process left: no error")
	}
}

func currentCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	return threads.CPUs(&set), nil
}

// A CPU counter's sum never decreases: a process that leaves the set
// keeps what it had used, one that joins counts all it used.
func TestCPUCounter(t *testing.T) {
	clocks := map[int]time.Duration{1: 10, 2: 20}
	clock := func(pid int) time.Duration { return clocks[pid] }
	var c CPUCounter
	if got := c.Read([]int{1, 2}, clock); got != 30 {
		t.Errorf("first read %v, want 30", got)
	}
	clocks[1], clocks[3] = 15, 7
	delete(clocks, 2) // exited
	if got := c.Read([]int{1, 2, 3}, clock); got != 42 {
		t.Errorf("after 2 exited and 3 joined: %v, want 42", got)
	}
	if got := c.Read([]int{1, 3}, clock); got != 42 {
		t.Errorf("unchanged: %v, want 42", got)
	}
}

// Without a cgroup of its own, a service's processes are listed by a scan
// of /proc at most every relistEvery: a child started in between joins the
// list at the next scan, and one that exits leaves it at once.
func TestMembersRelist(t *testing.T) {
	h := startHelper(t)
	kid := h.fork(t)
	s, err := Capture("svc", []int{h.pid()})
	if err != nil {
		t.Fatal(err)
	}
	scanned := time.Now()
	if got := s.PIDs(); !slices.Contains(got, h.pid()) || !slices.Contains(got, kid) {
		t.Fatalf("members %v, want the helper %d and its child %d", got, h.pid(), kid)
	}
	born := h.fork(t)
	unix.Kill(kid, unix.SIGKILL)
	waitGone := time.Now().Add(5 * time.Second)
	for st, ok := proc.Read(kid); ok && !st.Ended() && time.Now().Before(waitGone); st, ok = proc.Read(kid) {
		time.Sleep(time.Millisecond)
	}
	got := s.PIDs()
	if time.Since(scanned) < relistEvery && slices.Contains(got, born) {
		t.Errorf("members %v within %v of the last scan: the child born since is there (no scan expected)", got, relistEvery)
	}
	if slices.Contains(got, kid) {
		t.Errorf("members %v: the child that exited is there", got)
	}
	time.Sleep(relistEvery)
	if got := s.PIDs(); !slices.Contains(got, born) {
		t.Errorf("members %v after %v: want the child born since, %d", got, relistEvery, born)
	}
}

// An attached service's CPU time counts its children's and grows as they
// work.
func TestReadAttached(t *testing.T) {
	h := startHelper(t)
	h.fork(t)
	var c CPUCounter
	a := &spec.Attach{Port: h.port}
	first, err := c.ReadAttached(a)
	if err != nil {
		t.Fatal(err)
	}
	pids := Tree([]int{h.pid()})
	if len(pids) < 2 {
		t.Fatalf("the helper's tree %v has no child", pids)
	}
	var sum time.Duration
	for _, pid := range pids {
		if ct, err := proc.CPUClock(pid); err == nil {
			sum += ct
		}
	}
	if first <= 0 || first > sum {
		t.Fatalf("first read %v, want positive and at most the tree's %v read after it", first, sum)
	}
	if _, err := c.ReadAttached(&spec.Attach{Port: freePort(t)}); err == nil {
		t.Fatal("a port nobody listens on: no error")
	}
}
