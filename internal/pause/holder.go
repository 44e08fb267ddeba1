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

// pollEvery bounds how long a holding thread stays in one wait: it waits in
// raw system calls, which the Go runtime cannot tell from running code, so
// it comes back to Go code at least this often (a stop-the-world that
// signals it ends the wait at once; this bounds it even where asynchronous
// preemption is off).
const pollEvery = 20 * time.Millisecond

// publishEvery is how many turns of a hold's loop (two clock reads each,
// some 100 ns on the development machine) pass between updates of its
// counters.
const publishEvery = 1024

// Holder holds a set of cores: while a hold lasts, one thread pinned to each
// core spins at real-time priority (SCHED_FIFO), so that nothing the fair
// scheduler runs (every service there, whatever its number of processes
// and threads) runs on it.
//
// A pause costs one eventfd write per core, and one wake-up per core, which
// the kernel delivers straight to the real-time thread. The threads wait
// and wake in raw system calls, outside the Go scheduler: a blocking call
// made through it hands the thread's processor over and wakes the
// runtime's monitor thread, which then polls every 20 µs, all of it on the
// held cores (about 125 µs of a shared core per round on the development
// machine, against about 10 µs this way; docs/method.md). With a bell
// ([WithBell]) the rounds do not even pass through the Go code of the
// process that owns the Holder: whoever rings it (the target's
// instrumentation, once every batch of calls) wakes the first holding
// thread directly, which reads how many rounds were rung and holds for
// them.
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

	bell      int           // read end of the bell, or -1
	perRound  time.Duration // pause per round rung on the bell
	busy      func() time.Duration
	heldTotal *atomic.Int64 // WithHeldTotal, or nil

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
	rounds    atomic.Int64 // rung on the bell
	busyIn    atomic.Int64 // the busy clock's advance during holds
	busyOver  atomic.Int64 // the holds it was read over

	mu     sync.Mutex // serialises Pause and Close
	closed bool
}

type spinner struct {
	core int
	fd   int           // a non-blocking eventfd that wakes the thread
	exit chan struct{} // closed when the goroutine (and its thread) ends
}

// A HolderOption configures a Holder.
type HolderOption func(*Holder)

// WithBell makes the Holder hold for perRound every time a byte is written
// to the pipe or FIFO whose read end is fd (which must be non-blocking; the
// Holder reads it but does not close it). A writer rings it without any
// call into this process: the first holding thread wakes, counts the bytes
// and holds for all of them, the hard cap included.
func WithBell(fd int, perRound time.Duration) HolderOption {
	return func(h *Holder) { h.bell, h.perRound = fd, perRound }
}

// WithBusyClock has the Holder read clock, a CPU-time clock that must
// never block (a process's, through a raw system call), at the start and
// the end of every hold: HoldStats.BusyIn says how far it advanced while
// the cores were held, over HoldStats.BusyOver of holds.
func WithBusyClock(clock func() time.Duration) HolderOption {
	return func(h *Holder) { h.busy = clock }
}

// WithHeldTotal has the Holder add the length of every hold, in
// nanoseconds, to total as the hold ends, before the first holding thread
// lets its core go: a process that runs only on the held cores, reading
// total, sees every hold that kept it from running and no other. The
// counter may live in memory shared with that process (a latency what-if's
// load generator keeps its clock in the held cores' time: real time less
// the holds).
func WithHeldTotal(total *atomic.Int64) HolderOption {
	return func(h *Holder) { h.heldTotal = total }
}

// NewHolder starts one real-time thread per core, idle until the first
// pause. It fails, starting nothing, where the process may not use
// real-time scheduling (it needs CAP_SYS_NICE or an RLIMIT_RTPRIO, and in a
// cgroup v1 cpu hierarchy a real-time budget) or may not run on a core.
func NewHolder(cores []int, max time.Duration, opts ...HolderOption) (*Holder, error) {
	if len(cores) == 0 {
		return nil, errors.New("pause: no cores to hold")
	}
	if max <= 0 {
		return nil, errors.New("pause: the hard cap on a hold must be positive")
	}
	cores = slices.Compact(slices.Sorted(slices.Values(cores)))
	h := &Holder{cores: cores, max: max, base: time.Now(), bell: -1}
	for _, o := range opts {
		o(h)
	}
	// A pause of 0 per round (a point with no reduction) counts the rounds
	// rung and holds nothing, as the other methods' empty stops do.
	if h.bell >= 0 && h.perRound < 0 {
		return nil, errors.New("pause: a bell's pause per round must not be negative")
	}
	// A holding thread keeps its processor for good (it waits in raw
	// system calls); the rest of the process, and a thread that wakes up
	// for a hold, need others.
	if need := len(cores) + 2; runtime.GOMAXPROCS(0) < need {
		runtime.GOMAXPROCS(need)
	}
	// Every thread waits for start before its first wait, so that the
	// list of threads is complete before one of them can ring the others.
	start := make(chan struct{})
	for i, core := range cores {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err == nil {
			s := &spinner{core: core, fd: fd, exit: make(chan struct{})}
			ready := make(chan error, 1)
			go h.spin(s, i == 0, ready, start)
			if err = <-ready; err == nil {
				h.spinners = append(h.spinners, s)
				continue
			}
			<-s.exit
			unix.Close(fd)
		} else {
			err = fmt.Errorf("pause: eventfd: %w", err)
		}
		h.closing.Store(true)
		close(start)
		h.Close()
		return nil, err
	}
	close(start)
	return h, nil
}

// Cores are the held cores, in increasing order.
func (h *Holder) Cores() []int { return slices.Clone(h.cores) }

func (h *Holder) now() int64 { return int64(time.Since(h.base)) }

// spin is one holding thread: it waits to be woken, then spins until the
// hold's end or the hard cap. The first one also answers the bell and
// reads the busy clock.
func (h *Holder) spin(s *spinner, first bool, ready chan<- error, start <-chan struct{}) {
	defer close(s.exit)
	// Never unlocked: the thread ends with this goroutine, so a real-time
	// thread never returns to the runtime's pool to run other goroutines.
	runtime.LockOSThread()
	if err := s.realTime(); err != nil {
		ready <- err
		return
	}
	// Should the runtime keep this thread after all (it never ends the
	// main thread), it goes back to the fair scheduler.
	defer unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0)
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	bell := first && h.bell >= 0
	if bell {
		fds = append(fds, unix.PollFd{Fd: int32(h.bell), Events: unix.POLLIN})
	}
	busy := first && h.busy != nil
	ready <- nil
	<-start
	for {
		if err := poll(fds, pollEvery); err != nil && err != unix.EINTR {
			return
		}
		if h.closing.Load() {
			return
		}
		readEventfd(s.fd)
		if bell {
			if n := readBell(h.bell); n > 0 {
				h.ring(n)
			}
		}
		begin := h.now()
		if begin >= h.until.Load() {
			continue // woken by the timeout, or for a hold that has already ended
		}
		h.hold(begin, first, busy)
	}
}

// realTime pins the calling thread, locked to its goroutine, to the
// spinner's core and moves it to the real-time scheduler.
func (s *spinner) realTime() error {
	var set unix.CPUSet
	set.Set(s.core)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pause: cannot run a thread on CPU %d: %w", s.core, err)
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: holdPriority}, 0); err != nil {
		return fmt.Errorf("pause: holding cores needs real-time scheduling (SCHED_FIFO), which this process may not use: %w (run as root or with CAP_SYS_NICE; in a cgroup v1 cpu hierarchy the cgroup also needs cpu.rt_runtime_us > 0)", err)
	}
	return nil
}

// hold is one hold of a holding thread's core, which began at begin: it
// spins until the hold's end or the hard cap, and counts the hold. first
// and busy are as in spin.
func (h *Holder) hold(begin int64, first, busy bool) {
	cpu0 := threadCPU()
	var busy0 time.Duration
	if busy {
		busy0 = h.busy()
	}
	h.late.Add(max(0, begin-h.armedAt.Load()))
	shown, shownCPU := h.spinHeld(begin, cpu0)
	end := h.now()
	took := end - begin
	if first && h.heldTotal != nil {
		h.heldTotal.Add(took)
	}
	if busy {
		h.busyIn.Add(int64(h.busy() - busy0))
		h.busyOver.Add(took)
	}
	h.held.Add(end - shown)
	h.heldCPU.Add(int64(threadCPU() - shownCPU))
	h.holds.Add(1)
	for l := h.longest.Load(); took > l && !h.longest.CompareAndSwap(l, took); l = h.longest.Load() {
	}
}

// spinHeld spins, from begin, when the thread's CPU time was cpu0, until
// the hold's end, the hard cap or Close. It returns the time and CPU time
// up to which it has counted the hold as held.
func (h *Holder) spinHeld(begin int64, cpu0 time.Duration) (shown int64, shownCPU time.Duration) {
	// The counters follow a long hold as it goes (every publishEvery
	// turns of the loop), so that a snapshot taken during it reads
	// the holding thread's CPU with the rest of the process's.
	shown, shownCPU = begin, cpu0
	for i := 1; ; i++ {
		t := h.now()
		u := h.until.Load()
		if t >= u || h.closing.Load() {
			return shown, shownCPU
		}
		if i%publishEvery == 0 {
			c := threadCPU()
			h.held.Add(t - shown)
			h.heldCPU.Add(int64(c - shownCPU))
			shown, shownCPU = t, c
		}
		if t-begin >= int64(h.max) {
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
			return shown, shownCPU
		}
	}
}

// poll waits for one of fds to be readable, at most timeout, in a raw
// system call (see Holder). ppoll is never restarted after a signal: a
// signal the runtime sends this thread (to stop the world) ends the wait.
func poll(fds []unix.PollFd, timeout time.Duration) error {
	ts := unix.NsecToTimespec(int64(timeout))
	_, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// readEventfd resets a non-blocking eventfd.
func readEventfd(fd int) {
	var buf [8]byte
	unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
}

// wakeEventfd makes a non-blocking eventfd readable. It never blocks.
func wakeEventfd(fd int) {
	one := uint64(1)
	unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&one)), 8)
}

// readBell empties the non-blocking bell and returns how many bytes
// (rounds) it held.
func readBell(fd int) int64 {
	var buf [512]byte
	var n int64
	for {
		r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		if e != 0 || r == 0 {
			return n
		}
		n += int64(r)
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
	h.extend(d)
	// Wake every thread, spinning or not: one that is still spinning just
	// wakes once more afterwards and finds the hold over; one that has
	// just seen the old end passes and starts again.
	for _, s := range h.spinners {
		wakeEventfd(s.fd)
	}
}

// ring holds for n rounds rung on the bell. It runs on the first holding
// thread, which holds too once it returns: it wakes only the others, and
// takes no lock (Close waits for this thread before it closes anything).
func (h *Holder) ring(n int64) {
	h.rounds.Add(n)
	d := time.Duration(n) * h.perRound
	h.requested.Add(int64(d))
	if h.closing.Load() {
		h.clipped.Add(int64(d))
		return
	}
	h.extend(d)
	for _, s := range h.spinners[1:] {
		wakeEventfd(s.fd)
	}
}

// extend moves the hold's end d later, or starts a hold of d now.
func (h *Holder) extend(d time.Duration) {
	now := h.now()
	for {
		u := h.until.Load()
		next := u + int64(d)
		if u <= now {
			next = now + int64(d)
			h.armedAt.Store(now)
		}
		if h.until.CompareAndSwap(u, next) {
			return
		}
	}
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
	Rounds    uint64        // rounds rung on the bell
	BusyIn    time.Duration // how far the busy clock advanced during holds (WithBusyClock)
	BusyOver  time.Duration // the holds' time it was read over
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
		Rounds:    uint64(h.rounds.Load()),
		BusyIn:    time.Duration(h.busyIn.Load()),
		BusyOver:  time.Duration(h.busyOver.Load()),
	}
}

// Close ends any hold and the threads, and returns once they have ended.
// It does not close the bell.
func (h *Holder) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	h.closing.Store(true)
	if rest := h.until.Swap(0) - h.now(); rest > 0 {
		h.clipped.Add(rest)
	}
	for _, s := range h.spinners {
		wakeEventfd(s.fd)
	}
	for _, s := range h.spinners {
		<-s.exit
		unix.Close(s.fd)
	}
}
