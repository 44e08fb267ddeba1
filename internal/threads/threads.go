package threads

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Each calls fn with the id of every thread of this process. A thread that
// exits meanwhile (fn returns ESRCH) is skipped; any other error stops the
// walk and is returned.
func Each(fn func(tid int) error) error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := fn(tid); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
}

// SetAffinity sets the CPU affinity of every thread of this process;
// threads created later inherit it from the thread that creates them.
func SetAffinity(set *unix.CPUSet) error {
	return Each(func(tid int) error {
		if err := unix.SchedSetaffinity(tid, set); err != nil {
			return fmt.Errorf("set the CPU affinity of thread %d: %w", tid, err)
		}
		return nil
	})
}

// CPUSet returns the affinity mask of the CPUs listed.
func CPUSet(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return set
}

// CPUs lists the CPUs of an affinity mask, in ascending order.
func CPUs(set *unix.CPUSet) []int {
	var out []int
	for i := 0; i < len(set)*64 && len(out) < set.Count(); i++ {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out
}

// StartOn calls start (an exec.Cmd's Start, or a function that starts one)
// on a thread pinned to cpus for the call only: the child it forks
// inherits that affinity, and so does every thread the child makes, which
// pinning the child's PID after it started would not do (that pins its
// first thread only). With no cpus it calls start as it is.
func StartOn(cpus []int, start func() error) error {
	if len(cpus) == 0 {
		return start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("read the CPU affinity: %w", err)
	}
	set := CPUSet(cpus)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("set CPU affinity %v: %w", cpus, err)
	}
	defer unix.SchedSetaffinity(0, &old)
	return start()
}
