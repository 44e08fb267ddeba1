package testroot

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

const roleEnv = "TESTROOT_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		Mark()
		os.Exit(m.Run())
	case "root": // start a sleeping helper, print its pid, then wait to be killed
		os.Unsetenv(Env)
		Mark()
		helper := exec.Command(os.Args[0])
		helper.Env = append(os.Environ(), roleEnv+"=helper")
		if err := helper.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(helper.Process.Pid) + "\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	case "helper":
		Follow()
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

// A helper ends soon after the test binary that started it is killed,
// and not before.
func TestHelperEndsWithItsRoot(t *testing.T) {
	root := exec.Command(os.Args[0], "-test.run=^$")
	root.Env = append(os.Environ(), roleEnv+"=root")
	out, err := root.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { root.Process.Kill(); root.Wait() }()
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("the root's output %q", buf[:n])
	}
	helperAlive := func() bool {
		s, ok := proc.Read(pid)
		return ok && !s.Ended()
	}
	defer func() {
		if helperAlive() {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}()
	time.Sleep(3 * every)
	if !helperAlive() {
		t.Fatal("the helper ended while its root ran")
	}
	root.Process.Kill()
	root.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for helperAlive() {
		if time.Now().After(deadline) {
			t.Fatal("the helper still runs 10 s after its root was killed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"12:345", true},
		{"12:", false},
		{":345", false},
		{"x:1", false},
		{"-3:1", false},
		{"", false},
	} {
		if _, _, ok := parse(tc.v); ok != tc.ok {
			t.Errorf("parse(%q) ok %v, want %v", tc.v, ok, tc.ok)
		}
	}
	if !alive(os.Getpid(), startTime(os.Getpid())) {
		t.Error("this process is not alive")
	}
	if alive(os.Getpid(), "1") {
		t.Error("a wrong start time is alive")
	}
}

// Serialize holds an exclusive lock on LockPath for the test binary's
// life, so that a second test binary waits; a helper takes none.
func TestSerialize(t *testing.T) {
	old := LockPath
	LockPath = t.TempDir() + "/lock"
	defer func() { LockPath = old }()
	if lockFile != nil {
		t.Skip("this test binary already holds the lock")
	}
	tryLock := func() error {
		f, err := os.OpenFile(LockPath, os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	// As a helper of another test binary: no lock.
	t.Setenv(Env, "1:123")
	Serialize()
	if lockFile != nil || tryLock() != nil {
		t.Fatal("a helper took the lock")
	}
	// As the test binary: the lock is held.
	t.Setenv(Env, "")
	os.Unsetenv(Env)
	Serialize()
	defer func() { lockFile.Close(); lockFile = nil }()
	if lockFile == nil {
		t.Fatal("the test binary did not take the lock")
	}
	if err := tryLock(); err != unix.EWOULDBLOCK {
		t.Fatalf("a second taker got %v, want EWOULDBLOCK", err)
	}
}
