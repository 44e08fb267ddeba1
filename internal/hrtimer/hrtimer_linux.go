//go:build linux

package hrtimer

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Max is the longest wait worth a Timer; longer waits should use a runtime
// timer for all but the last part.
//
// The Go runtime parks idle threads in epoll_wait with millisecond
// granularity, so runtime timers fire up to ~1ms late, which would show up as
// open-loop latency. A timerfd read through the runtime's network poller
// wakes the goroutine when the kernel's high-resolution timer expires (epoll
// returns as soon as the fd is readable) and, unlike nanosleep, does not hold
// a scheduler P while waiting. See Timer.Sleep for the busy case.
const Max = 2 * time.Millisecond

// Timer sleeps precisely; it is owned by one goroutine at a time.
type Timer struct {
	fd  int
	f   *os.File // the fd registered with the network poller
	buf [8]byte
}

type itimerspec struct {
	interval, value syscall.Timespec
}

const (
	clockMonotonic = 1
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

// New returns a timer, or nil if timerfd is unavailable (the caller then
// falls back to runtime timers).
func New() *Timer {
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return nil
	}
	return &Timer{fd: int(fd), f: os.NewFile(fd, "timerfd")}
}

// Sleep blocks the calling goroutine for about d (> 0): until the timerfd
// expires or, whichever comes first, until a read deadline set to the same
// instant passes. The deadline is a runtime timer, which fires promptly when
// the scheduler is busy (and the network poller is consulted less often);
// the timerfd fires promptly when the process is idle. It returns false if
// the timer could not be used.
func (t *Timer) Sleep(d time.Duration) bool {
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	_, _, errno := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if errno != 0 {
		return false
	}
	if err := t.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		return false
	}
	_, err := t.f.Read(t.buf[:])
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}

// Close releases the timer.
func (t *Timer) Close() { t.f.Close() }
