package testroot

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

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
