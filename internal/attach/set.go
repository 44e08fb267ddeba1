package attach

import (
	"errors"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// Set holds a pidfd on every process of an attached service, to stop and
// continue them (a controller's pauses): signals go through the pidfds, so
// a PID recycled after its process exited is never signalled. Refresh adds
// the processes the service started since; a process leaves the set only
// once it has exited, so a continue reaches every process a stop reached.
type Set struct {
	state *State
	mu    sync.Mutex
	fds   map[int]int // pid → pidfd
	list  []int       // the pidfds, for signalling without a map walk
	pids  atomic.Pointer[[]int]
}

// Open opens a set on the service's processes now.
func (s *State) Open() *Set {
	set := &Set{state: s, fds: map[int]int{}}
	set.Refresh()
	return set
}

// Refresh adds the service's processes not yet in the set and drops those
// that have exited. It costs a scan of /proc.
func (set *Set) Refresh() {
	members := set.state.Members()
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.fds == nil {
		return // closed
	}
	listed := make(map[int]bool, len(members))
	for _, st := range members {
		listed[st.PID] = true
	}
	for pid, fd := range set.fds {
		// A member Members just read is running; only the others need
		// a look at their main thread.
		if exited(fd) || !listed[pid] && leaderEnded(pid) {
			unix.Close(fd)
			delete(set.fds, pid)
		}
	}
	for _, st := range members {
		if _, ok := set.fds[st.PID]; ok || len(set.fds) >= MaxProcs {
			continue
		}
		fd, err := unix.PidfdOpen(st.PID, 0)
		if err != nil {
			continue
		}
		// The pidfd is the listed process's only if the PID still has
		// its start time.
		if now, ok := proc.Read(st.PID); !ok || now.Start != st.Start {
			unix.Close(fd)
			continue
		}
		set.fds[st.PID] = fd
	}
	set.list = set.list[:0]
	pids := make([]int, 0, len(set.fds))
	for pid, fd := range set.fds {
		set.list = append(set.list, fd)
		pids = append(pids, pid)
	}
	set.pids.Store(&pids)
}

// leaderEnded reports whether pid's main thread has exited: a process
// killed with SIGKILL shows as a zombie as soon as its main thread is
// gone, while its pidfd becomes readable only once its last thread is; it
// runs no more either way. Should the PID name another process by now,
// the old one was reaped, and its pidfd reads as exited.
func leaderEnded(pid int) bool {
	st, ok := proc.Read(pid)
	return !ok || st.Ended()
}

// exited reports whether a pidfd's process has exited (it is readable).
func exited(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// Signal sends sig to every process of the set. It goes on past failures
// (a process that exited meanwhile) and returns the first other than
// ESRCH; with no process at all, an error.
func (set *Set) Signal(sig unix.Signal) error {
	set.mu.Lock()
	defer set.mu.Unlock()
	if len(set.list) == 0 {
		return errors.New("attach: the service has no process left")
	}
	var first error
	for _, fd := range set.list {
		// Raw: it never blocks, and a call through the scheduler wakes
		// the Go runtime's monitor thread (see controller.cpuClock).
		if _, _, e := unix.RawSyscall6(unix.SYS_PIDFD_SEND_SIGNAL, uintptr(fd), uintptr(sig), 0, 0, 0, 0); e != 0 && e != unix.ESRCH && first == nil {
			first = e
		}
	}
	return first
}

// PIDs lists the processes of the set.
func (set *Set) PIDs() []int {
	set.mu.Lock()
	defer set.mu.Unlock()
	out := make([]int, 0, len(set.fds))
	for pid := range set.fds {
		out = append(out, pid)
	}
	return out
}

// Snapshot lists the processes of the set as its last Refresh left them,
// without taking its lock: for a reader that must never block (a CPU clock
// read while cores are held). Do not modify the slice.
func (set *Set) Snapshot() []int {
	if p := set.pids.Load(); p != nil {
		return *p
	}
	return nil
}

// Close closes the pidfds.
func (set *Set) Close() {
	set.mu.Lock()
	defer set.mu.Unlock()
	for _, fd := range set.fds {
		unix.Close(fd)
	}
	set.fds, set.list = nil, nil
	set.pids.Store(nil)
}

// Wait returns a channel closed once process p has exited (at once if it
// is not running).
func Wait(p Process) <-chan struct{} {
	done := make(chan struct{})
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil || !p.Alive() {
		if err == nil {
			unix.Close(fd)
		}
		close(done)
		return done
	}
	go func() {
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err == nil || !errors.Is(err, unix.EINTR) {
				break
			}
		}
		close(done)
	}()
	return done
}
