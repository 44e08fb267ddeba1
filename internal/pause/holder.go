package pause

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// holdPriority is the real-time priority of the holding threads: the
// lowest, so that the kernel's own real-time threads (migration,
// watchdogs) still preempt them, while every task of the fair scheduler
// (services, load generator, controllers) waits.
const holdPriority = 1

// Holder holds a set of cores: while a hold lasts, one thread pinned to each
// core spins at real-time priority (SCHED_FIFO), so that nothing the fair
// scheduler runs (every service there, whatever its number of processes
// and threads) runs on it.
//
// A pause costs one timer write per core from the caller, and one wake-up
// per core, which the kernel delivers straight to the real-time thread;
// the threads keep their own accounting. Nothing else runs per pause, so
// the caller may itself run on a held core: it simply waits, like
// everything else there, until the hold ends.
//
// Safety: a hold ends by itself at its end time, and never more than the
// hard cap after it began, whoever calls what: the threads read the clock
// as they spin. They die with the process, which frees the cores at once
// (SIGKILL included). Between slowdown runs there are no real-time
// threads: Close ends them.
//
// The kernel's real-time throttling (sched_rt_runtime_us, 95% of every
// second by default) and, since Linux 6.12, the fair server leave the fair
// scheduler a share of each core whatever a real-time thread does: holds
// that take more than that share of a second are cut short, which the CPU
// the threads got while holding shows (HoldStats.HeldCPU below Held).
type Holder struct {
	cores    []int
	max      time.Duration
	base     time.Time // the atomics count nanoseconds from here (monotonic)
	spinners []*spinner

	until   atomic.Int64 // the hold lasts until then (ns since base)
	closing atomic.Bool

	// Counters; the per-core ones are summed over the cores.
	requested atomic.Int64
	clipped   atomic.Int64
	held      atomic.Int64 // per core
	heldCPU   atomic.Int64 // per core
	holds     atomic.Int64 // per core
	late      atomic.Int64 // per core: from the pause's arming to the thread's start
	longest   atomic.Int64
	armedAt   atomic.Int64 // when the hold that is starting was asked for

	mu     sync.Mutex // serialises arming and Close
	closed bool
}

type spinner struct {
	core int
	fd   int           // a blocking timerfd, armed to wake the thread
	exit chan struct{} // closed when the goroutine (and its thread) ends
}

// NewHolder starts one real-time thread per core, idle until the first
// pause. It fails, starting nothing, where the process may not use
// real-time scheduling (it needs CAP_SYS_NICE or an RLIMIT_RTPRIO, and in a
// cgroup v1 cpu hierarchy a real-time budget) or may not run on a core.
func NewHolder(cores []int, max time.Duration) (*Holder, error) {
	if len(cores) == 0 {
		return nil, errors.New("pause: no cores to hold")
	}
	if max <= 0 {
		return nil, errors.New("pause: the hard cap on a hold must be positive")
	}
	cores = slices.Compact(slices.Sorted(slices.Values(cores)))
	h := &Holder{cores: cores, max: max, base: time.Now()}
	// A spinning thread keeps its processor for the whole hold; the rest
	// of the process, and a thread that wakes up for a hold, need others.
	if need := len(cores) + 2; runtime.GOMAXPROCS(0) < need {
		runtime.GOMAXPROCS(need)
	}
	for _, core := range cores {
		fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("pause: timerfd: %w", err)
		}
		s := &spinner{core: core, fd: fd, exit: make(chan struct{})}
		ready := make(chan error, 1)
		go h.spin(s, ready)
		if err := <-ready; err != nil {
			<-s.exit
			unix.Close(fd)
			h.Close()
			return nil, err
		}
		h.spinners = append(h.spinners, s)
	}
	return h, nil
}

// Cores are the held cores, in increasing order.
func (h *Holder) Cores() []int { return slices.Clone(h.cores) }

func (h *Holder) now() int64 { return int64(time.Since(h.base)) }

// spin is one holding thread: it waits on its timerfd, then spins until the
// hold's end or the hard cap.
func (h *Holder) spin(s *spinner, ready chan<- error) {
	defer close(s.exit)
	// Never unlocked: the thread ends with this goroutine, so a real-time
	// thread never returns to the runtime's pool to run other goroutines.
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(s.core)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		ready <- fmt.Errorf("pause: cannot run a thread on CPU %d: %w", s.core, err)
		return
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: holdPriority}, 0); err != nil {
		ready <- fmt.Errorf("pause: holding cores needs real-time scheduling (SCHED_FIFO), which this process may not use: %w (run as root or with CAP_SYS_NICE; in a cgroup v1 cpu hierarchy the cgroup also needs cpu.rt_runtime_us > 0)", err)
		return
	}
	// Should the runtime keep this thread after all (it never ends the
	// main thread), it goes back to the fair scheduler.
	defer unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0)
	ready <- nil
	var buf [8]byte
	for {
		// A blocking read: the runtime lets another thread have this
		// thread's processor meanwhile, and the kernel wakes this real-time
		// thread at once when the timer fires, preempting whatever the fair
		// scheduler runs on the core.
		if _, err := unix.Read(s.fd, buf[:]); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if h.closing.Load() {
			return
		}
		start := h.now()
		if start >= h.until.Load() {
			continue // armed for a hold that has already ended
		}
		cpu0 := threadCPU()
		h.late.Add(max(0, start-h.armedAt.Load()))
		for {
			t := h.now()
			u := h.until.Load()
			if t >= u {
				break
			}
			if t-start >= int64(h.max) {
				// The hard cap: this hold ends for every core, and what
				// it still owed is dropped, a Pause that extended it
				// meanwhile included (else a second hold would follow
				// at once).
				for ; u > t; u = h.until.Load() {
					if h.until.CompareAndSwap(u, t) {
						h.clipped.Add(u - t)
						break
					}
				}
				break
			}
		}
		took := h.now() - start
		h.held.Add(took)
		h.heldCPU.Add(int64(threadCPU() - cpu0))
		h.holds.Add(1)
		for l := h.longest.Load(); took > l && !h.longest.CompareAndSwap(l, took); l = h.longest.Load() {
		}
	}
}

// threadCPU is the calling thread's CPU time, read with a raw system call
// (it never blocks).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if _, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// Pause holds every core for d more: a hold that is running is extended by
// d, otherwise one starts now. It does not wait for the hold. A zero pause
// still wakes the threads (what a round costs, without the pause).
func (h *Holder) Pause(d time.Duration) {
	if d < 0 {
		return
	}
	h.requested.Add(int64(d))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		h.clipped.Add(int64(d))
		return
	}
	now := h.now()
	for {
		u := h.until.Load()
		next := u + int64(d)
		if u <= now {
			next = now + int64(d)
			h.armedAt.Store(now)
		}
		if h.until.CompareAndSwap(u, next) {
			break
		}
	}
	// Arm every thread, spinning or not: one that is still spinning just
	// wakes once more afterwards and finds the hold over; one that has
	// just seen the old end passes and starts again.
	for _, s := range h.spinners {
		arm(s.fd)
	}
}

// arm fires fd at once.
func arm(fd int) error {
	return unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Value: unix.Timespec{Nsec: 1}}, nil)
}

// Halt ends any hold now.
func (h *Holder) Halt() { h.until.Store(0) }

// HoldStats are a Holder's counters: per core (the mean over the cores)
// where it says so.
type HoldStats struct {
	Requested time.Duration // pause asked for
	Clipped   time.Duration // dropped to honour the hard cap, or after Close
	Held      time.Duration // time the cores were held, per core
	HeldCPU   time.Duration // CPU the threads got while holding, per core
	Holds     uint64        // holds, per core
	Late      time.Duration // from the asking to the thread's start, summed over holds, per core
	Longest   time.Duration // the longest single hold of any core
}

// Stats returns the counters since the Holder was made.
func (h *Holder) Stats() HoldStats {
	n := int64(max(1, len(h.spinners)))
	return HoldStats{
		Requested: time.Duration(h.requested.Load()),
		Clipped:   time.Duration(h.clipped.Load()),
		Held:      time.Duration(h.held.Load() / n),
		HeldCPU:   time.Duration(h.heldCPU.Load() / n),
		Holds:     uint64(h.holds.Load() / n),
		Late:      time.Duration(h.late.Load() / n),
		Longest:   time.Duration(h.longest.Load()),
	}
}

// Close ends any hold and the threads, and returns once they have ended.
func (h *Holder) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	if rest := h.until.Swap(0) - h.now(); rest > 0 {
		h.clipped.Add(rest)
	}
	h.closing.Store(true)
	for _, s := range h.spinners {
		arm(s.fd)
	}
	for _, s := range h.spinners {
		<-s.exit
		unix.Close(s.fd)
	}
}
