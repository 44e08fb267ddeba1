package controller

import (
	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/threads"
)

// controllerNice is the nice value of controller threads.
const controllerNice = -20

// raisePriority gives every thread of the controller the highest normal
// scheduling weight (nice -20). Threads the Go runtime creates later inherit
// it from the thread that creates them.
//
// Why: a round must reach every controller at once, or services pause out
// of step and the pause is absorbed by whoever keeps running on their
// cores. Controllers sleep almost all the time but share cores with
// CPU-bound services; at the default weight a wake-up can wait for the
// running service's slice (measured 4-7 ms of round delay on a busy core,
// against 10 ms pauses). With the highest weight it is scheduled almost at
// once. Real-time scheduling would be faster still, but the Go runtime's
// spinning threads can starve each other under SCHED_FIFO (seen here: a
// controller spinning at 100% that no longer handled SIGTERM), so it is not
// used. The service is started before this and keeps its own priority.
func raisePriority() error {
	return threads.Each(func(tid int) error {
		return unix.Setpriority(unix.PRIO_PROCESS, tid, controllerNice)
	})
}
