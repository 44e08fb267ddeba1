package local

import (
	"os/exec"
	"runtime"

	"github.com/slowpoke-dev/slowpoke/internal/threads"
)

// spawner starts processes from one OS thread that lives as long as the
// program. Two reasons: a parent-death signal fires when the thread that
// forked the child exits, not the process, so forking from a thread that
// never exits makes it mean "the orchestrator died"; and the child inherits
// the forking thread's CPU affinity, which the spawner sets per start.
type spawner struct{ reqs chan spawnReq }

type spawnReq struct {
	cmd  *exec.Cmd
	cpus []int
	done chan error
}

var theSpawner = newSpawner()

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq)}
	go func() {
		runtime.LockOSThread() // never unlocked: this thread must not exit
		for r := range s.reqs {
			r.done <- threads.StartOn(r.cpus, r.cmd.Start)
		}
	}()
	return s
}

// start starts cmd pinned to cpus (none: inherit).
func (s *spawner) start(cmd *exec.Cmd, cpus []int) error {
	done := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, cpus: cpus, done: done}
	return <-done
}
