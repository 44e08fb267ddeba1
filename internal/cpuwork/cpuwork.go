// Package cpuwork burns a given amount of CPU time on the calling thread.
//
// The emulator and the benchmark applications use it for their per-call
// work. It measures the thread's own CPU clock, never the wall clock: a
// wall-clock loop that is stopped by SIGSTOP would finish early after
// SIGCONT and absorb the virtual-speedup pause, and one that is preempted by
// a neighbour would do less work than asked.
package cpuwork

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// chunk is the number of loop iterations between clock reads: enough to keep
// the clock_gettime cost under a few percent, small enough (a few µs) for
// sub-10µs precision.
const chunk = 2000

// sink keeps the loop result observable so the compiler cannot drop it.
var sink uint64

// Spin consumes d of CPU time on the current thread. The goroutine is locked
// to its thread for the duration so the thread clock measures its own work.
func Spin(d time.Duration) {
	if d <= 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := ThreadTime()
	x := atomic.LoadUint64(&sink) | 1
	for ThreadTime()-start < d {
		for i := 0; i < chunk; i++ {
			// xorshift: cheap, not optimisable away, no memory traffic.
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	atomic.StoreUint64(&sink, x)
}

// ThreadTime returns the CPU time consumed so far by the calling thread.
func ThreadTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic("cpuwork: CLOCK_THREAD_CPUTIME_ID unavailable: " + err.Error())
	}
	return time.Duration(ts.Nano())
}
