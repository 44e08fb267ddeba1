package testroot

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// Env names the variable that carries the test binary's identity to the
// processes it starts: "PID:START", START its start time in /proc.
const Env = "SLOWPOKE_TEST_ROOT"

// every is how often a helper checks on the test binary.
const every = 200 * time.Millisecond

// Mark records this process as the test binary, for every process it
// starts from now on (they inherit the environment). Call it in TestMain
// before m.Run; a process that is itself a helper keeps its root.
func Mark() {
	if os.Getenv(Env) != "" {
		return
	}
	os.Setenv(Env, fmt.Sprintf("%d:%s", os.Getpid(), startTime(os.Getpid())))
}

// Follow ends this process (exit status 1) once the test binary that
// Mark named has ended. It returns at once; a process started without
// Mark's variable is left alone.
func Follow() {
	pid, start, ok := parse(os.Getenv(Env))
	if !ok || pid == os.Getpid() {
		return
	}
	go func() {
		for {
			time.Sleep(every)
			if !alive(pid, start) {
				os.Exit(1)
			}
		}
	}()
}

func parse(v string) (pid int, start string, ok bool) {
	p, start, found := strings.Cut(v, ":")
	pid, err := strconv.Atoi(p)
	return pid, start, found && err == nil && pid > 0 && start != ""
}

// alive says whether the process pid that started at start runs: not
// gone, not a zombie, not another process that took its pid.
func alive(pid int, start string) bool {
	s, ok := proc.Read(pid)
	return ok && !s.Ended() && s.Start == start
}

// startTime is the start time of pid in /proc ("?" when unknown).
func startTime(pid int) string {
	if s, ok := proc.Read(pid); ok {
		return s.Start
	}
	return "?"
}

// lockFile stays open for the life of a test binary that took the lock
// (Serialize); the kernel releases the lock when the process ends, however
// it ends.
var lockFile *os.File

// LockPath is the file whose lock Serialize takes.
var LockPath = filepath.Join(os.TempDir(), "slowpoke-serial-tests.lock")

// Serialize makes the test binaries that call it run one at a time on
// this machine, whatever go test runs beside them: it marks this process
// as the test binary (Mark) and waits for an exclusive lock on LockPath,
// held until the process ends. The packages whose tests time real
// processes (pausing, controllers, the experiment flow) call it in
// TestMain, so that plain `go test ./...`, which runs packages in
// parallel, does not run two of them on the same cores at once. A helper
// process (one that inherited another test binary's mark) returns at
// once: it must not wait for the lock its test binary holds. Where the
// lock cannot be taken, the tests run unserialized.
func Serialize() {
	Mark()
	if pid, _, ok := parse(os.Getenv(Env)); !ok || pid != os.Getpid() || lockFile != nil {
		return
	}
	f, err := os.OpenFile(LockPath, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return
	}
	lockFile = f
}
