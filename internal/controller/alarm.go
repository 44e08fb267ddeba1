package controller

import (
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// alarm wakes the pause loop at a deadline. It is a timerfd that the Go
// runtime's network poller watches: the kernel's high-resolution timer
// fires it (Go's own timers wait on the poller's millisecond timeout, up to
// about 1 ms late), and the goroutine waiting for it parks like any other,
// so that its thread and processor are free meanwhile.
//
// Why not a precise blocking sleep (clock_nanosleep) on a locked thread, as
// before: every such sleep kept the processor in a system call, which
// kept the runtime's monitor thread (sysmon) polling every 20 µs and made
// it hand the processor to another thread; a paused service's controller
// made about 34 voluntary context switches per round (docs/method.md,
// "What rounds cost").
//
// C receives after the armed time, at most one pending value; a value may
// be stale (from an earlier arming), so waiters check the clock again. If
// no timerfd can be had, a Go timer stands in.
type alarm struct {
	C chan struct{}

	fd    int             // the timerfd, -1 when a Go timer stands in
	f     *os.File        // fd, watched by the poller
	rc    syscall.RawConn // f's, to read it with a raw system call
	mu    sync.Mutex
	timer *time.Timer // the stand-in
}

func newAlarm() *alarm {
	a := &alarm{C: make(chan struct{}, 1), fd: -1}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return a
	}
	// A non-blocking descriptor given to os.NewFile is read through the
	// poller. Its Fd method must not be called: that would make it
	// blocking again.
	f := os.NewFile(uintptr(fd), "pause-alarm")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return a
	}
	a.fd, a.f, a.rc = fd, f, rc
	go a.loop()
	return a
}

// loop turns every expiration into a value on C until the alarm is closed.
// The poller says when the timerfd is readable; the read itself is raw,
// because a system call through the scheduler wakes the runtime's monitor
// thread (see cpuClock).
func (a *alarm) loop() {
	var buf [8]byte // the expiration count, not needed
	read := func(fd uintptr) bool {
		_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		return e != unix.EAGAIN // not yet fired (or re-armed since): wait again
	}
	for {
		if err := a.rc.Read(read); err != nil {
			return // closed
		}
		a.fire()
	}
}

func (a *alarm) fire() {
	select {
	case a.C <- struct{}{}:
	default:
	}
}

// set arms the alarm to fire after d (at once for d <= 0), replacing any
// earlier arming, and drops a pending value.
func (a *alarm) set(d time.Duration) {
	select {
	case <-a.C:
	default:
	}
	if d <= 0 {
		d = 1 // a zero timerfd value would disarm it
	}
	if a.fd >= 0 {
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
		if unix.TimerfdSettime(a.fd, 0, &spec, nil) == nil {
			return
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.timer == nil {
		a.timer = time.AfterFunc(d, a.fire)
	} else {
		a.timer.Reset(d)
	}
}

// stop disarms the alarm.
func (a *alarm) stop() {
	if a.fd >= 0 {
		unix.TimerfdSettime(a.fd, 0, &unix.ItimerSpec{}, nil)
	}
	a.mu.Lock()
	if a.timer != nil {
		a.timer.Stop()
	}
	a.mu.Unlock()
}

// close releases the timerfd and ends its loop; the alarm is not used
// after.
func (a *alarm) close() {
	a.stop()
	if a.f != nil {
		a.f.Close()
	}
}
