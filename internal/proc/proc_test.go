package proc

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want Stat
		ok   bool
	}{
		{"plain", "42 (sleep) S 7 42 42 0 -1 4194304 100 0 0 0 150 50 0 0 20 0 1 0 12345 1000 10",
			Stat{PID: 42, State: 'S', PPID: 7, PGRP: 42, Flags: 4194304, CPU: 2 * time.Second, Start: "12345"}, true},
		{"kernel thread", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 1 0 0 20 0 1 0 31 0 0",
			Stat{PID: 42, State: 'S', Flags: 2129984, CPU: 10 * time.Millisecond, Start: "31"}, true},
		{"name with spaces and parentheses", "42 (a) b (c)) Z 1 40 40 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 99 0 0",
			Stat{PID: 42, State: 'Z', PPID: 1, PGRP: 40, CPU: 30 * time.Millisecond, Start: "99"}, true},
		{"no parenthesis", "42 sleep S 7 42", Stat{}, false},
		{"too short", "42 (x) S 7 42 42", Stat{}, false},
		{"flags not a number", "42 (x) S 1 42 42 0 -1 x 0 0 0 0 1 2 0 0 20 0 1 0 99 0 0", Stat{}, false},
		{"not a number", "42 (x) S x 42 42 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 99 0 0", Stat{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parse(42, []byte(tc.line))
			if ok != tc.ok || got != tc.want {
				t.Errorf("parse = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// A real child: running, in this process's group, then ended and
// unreaped, then gone.
func TestReadRealProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot run sleep:", err)
	}
	pid := cmd.Process.Pid
	s, ok := Read(pid)
	if !ok || s.PPID != os.Getpid() || s.PGRP != syscall.Getpgrp() || s.Ended() || s.Start == "" {
		t.Fatalf("running child: %+v, %v", s, ok)
	}
	if !slices.ContainsFunc(All(), func(a Stat) bool { return a.PID == pid && a.Start == s.Start }) {
		t.Error("All misses the child")
	}
	if !slices.ContainsFunc(Group(syscall.Getpgrp()), func(a Stat) bool { return a.PID == pid }) {
		t.Error("Group misses the child, in this process's group")
	}
	if slices.ContainsFunc(Group(pid), func(a Stat) bool { return a.PID == pid }) {
		t.Error("Group puts the child in a group of its own")
	}
	cmd.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if z, _ := Read(pid); z.Ended() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed child never showed as ended")
		}
	}
	cmd.Wait()
	if _, ok := Read(pid); ok {
		t.Error("a reaped child is still read")
	}
	if me, ok := Read(os.Getpid()); !ok || me.PID != os.Getpid() || me.Ended() || me.Kernel() || me.Exiting() {
		t.Errorf("this process: %+v, %v", me, ok)
	}
	// PID 2 is the kernel's kthreadd where this runs in the host's PID
	// namespace.
	if k, ok := Read(2); ok && k.PPID == 0 && !k.Kernel() {
		t.Errorf("PID 2, child of no process: %+v, not read as a kernel thread", k)
	}
}

// A real child's environment, as it was started with: a variable set, an
// empty one, one missing, and a name that is only a prefix of another.
func TestGetenvRealProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"SLOWPOKE_X=a=b", "SLOWPOKE_EMPTY=", "SLOWPOKE_XY=other"}
	if err := cmd.Start(); err != nil {
		t.Skip("cannot run sleep:", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The kernel sets the new environment a moment after exec has begun,
	// when Start has returned already.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, ok := Getenv(cmd.Process.Pid, "SLOWPOKE_X"); ok {
			break
		}
	}
	for _, tc := range []struct {
		key, want string
		ok        bool
	}{
		{"SLOWPOKE_X", "a=b", true},
		{"SLOWPOKE_EMPTY", "", true},
		{"SLOWPOKE_MISSING", "", false},
		{"SLOWPOKE", "", false},
	} {
		if v, ok := Getenv(cmd.Process.Pid, tc.key); v != tc.want || ok != tc.ok {
			t.Errorf("Getenv(%s) = %q, %v; want %q, %v", tc.key, v, ok, tc.want, tc.ok)
		}
	}
	if _, ok := Getenv(1<<22, "PATH"); ok {
		t.Error("a missing process has an environment")
	}
}

// Two CPU-bound children in a group of their own, pinned to one core:
// neither ever sleeps, so every moment of each is either running or
// waiting for the core, and Waits sees both, summed over both children.
// (How the core is shared is the scheduler's: under go test ./... other
// packages' tests take CPU 0 too, and the loops ran 139 ms and waited 856
// ms of 2 x 500.)
func TestWaitsRealProcesses(t *testing.T) {
	sh := "taskset -c 0 sh -c 'while :; do :; done' & taskset -c 0 sh -c 'while :; do :; done' & wait"
	cmd := exec.Command("sh", "-c", sh)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip("cannot run sh:", err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	time.Sleep(100 * time.Millisecond)
	run0, wait0 := Waits(cmd.Process.Pid)
	start := time.Now()
	time.Sleep(500 * time.Millisecond)
	run1, wait1 := Waits(cmd.Process.Pid)
	elapsed := time.Since(start)
	run, wait := run1-run0, wait1-wait0
	if run0 == 0 {
		t.Skip("no schedstat here")
	}
	// Both loops ran and both waited (one core for two), and between them
	// they account for twice the time that passed, less the readings'
	// own skew.
	if run <= 0 || wait < 100*time.Millisecond || run+wait < 2*elapsed*8/10 {
		t.Errorf("two loops sharing a core for %v: ran %v, waited %v", elapsed.Round(time.Millisecond), run, wait)
	}
}

func TestParseCgroups(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
	}{
		{"0::/user.slice/session-1.scope\n", map[string]string{"": "/user.slice/session-1.scope"}},
		{"6:freezer:/\n4:memory:/a/b\n2:cpu,cpuacct:/c\n0::/\n", map[string]string{"freezer": "/", "memory": "/a/b", "cpu": "/c", "cpuacct": "/c", "": "/"}},
		{"9:name=systemd:/x\n", map[string]string{"name=systemd": "/x"}},
		{"garbage\n", map[string]string{}},
	}
	for _, tc := range tests {
		got := ParseCgroups(tc.in)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("ParseCgroups(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
