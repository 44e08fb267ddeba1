// Package cpuwork burns a given amount of CPU time on the calling thread.
//
// The emulator and the benchmark applications use it for their per-call
// work. It measures the thread's own CPU clock, never the wall clock: a
// wall-clock loop that is stopped by SIGSTOP would finish early after
// SIGCONT and absorb the virtual-speedup pause, and one that is preempted by
// a neighbour would do less work than asked.
package cpuwork

import (
	"context"
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

// Contended is per-call work that grows with the calls a service runs at
// once: a wait without CPU (a data store, an outside API), then CPU work
// plus an extra amount for every other call then in flight (contention on
// a lock or a cache). The zero value is ready to use; one Contended counts
// the calls of one service.
type Contended struct{ inflight atomic.Int64 }

// Do counts the call in flight until Done. It waits wait, then spins work
// plus perOther for every other call in flight at that moment. If ctx ends
// during the wait, it returns ctx's error and the call is no longer
// counted (no Done is due).
func (c *Contended) Do(ctx context.Context, wait, work, perOther time.Duration) error {
	c.inflight.Add(1)
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			c.Done()
			return ctx.Err()
		}
	}
	if perOther > 0 {
		work += time.Duration(c.inflight.Load()-1) * perOther
	}
	Spin(work)
	return nil
}

// Done ends a call that Do counted.
func (c *Contended) Done() { c.inflight.Add(-1) }

// InFlight is the number of calls counted now.
func (c *Contended) InFlight() int64 { return c.inflight.Load() }
