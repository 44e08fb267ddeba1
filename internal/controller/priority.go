package controller

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/threads"
)

// controllerNice is the nice value of controller threads.
const controllerNice = -20

// controllerSlice is the scheduler time slice the controller threads ask
// for: the shortest the kernel accepts.
const controllerSlice = 100 * time.Microsecond

// raisePriority gives every thread of the controller the highest normal
// scheduling weight (nice -20) and the shortest time slice. Threads the
// Go runtime creates later inherit the nice value from the thread that
// creates them; the slice is set again at the start of every slowdown run
// (StartSlowdown), for threads created since.
//
// Why the weight: a round must reach every controller at once, or
// services pause out of step and the pause is absorbed by whoever keeps
// running on their cores. Controllers sleep almost all the time but share
// cores with CPU-bound services; at the default weight a wake-up can wait
// for the running service's slice (measured 4-7 ms of round delay on a
// busy core, against 10 ms pauses). Real-time scheduling would be faster
// still, but the Go runtime's spinning threads can starve each other under
// SCHED_FIFO (seen here: a controller spinning at 100% that no longer
// handled SIGTERM), so it is not used. The service is started before this
// and keeps its own priority.
//
// Why the slice: the weight alone does not make a waking controller
// preempt the running service. The EEVDF scheduler (Linux 6.6 and later)
// lets the running task finish its slice first (RUN_TO_PARITY), up to
// about a millisecond; measured with perf on the 2-core machine (Linux
// 6.18), the controllers' timers fired on time and the controllers then
// waited 0.6-1.4 ms for a service thread to sleep of its own accord, while
// their stops were due. A task that asks for a shorter slice preempts on
// wake-up (since Linux 6.12): the stops started 250-300 µs late instead of
// 600-680 µs on dag-relay-grpc-conc-middle (docs/method.md, "Stops that
// take effect at once"). Older kernels ignore the slice; nothing else
// changes.
//
// Threads under another policy (a holder's real-time threads, see
// internal/pause) are left as they are.
func raisePriority() error {
	return threads.Each(func(tid int) error {
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy != unix.SCHED_NORMAL {
			return nil
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, controllerNice); err != nil {
			return err
		}
		shortSlice(tid)
		return nil
	})
}

// shortSlice asks for controllerSlice on thread tid (sched_setattr's
// sched_runtime, which the fair scheduler takes as the slice). Failure is
// harmless: the thread keeps the default slice.
func shortSlice(tid int) {
	unix.SchedSetAttr(tid, &unix.SchedAttr{
		Policy:  unix.SCHED_NORMAL,
		Nice:    controllerNice,
		Runtime: uint64(controllerSlice.Nanoseconds()),
	}, 0)
}
