package threads

import (
	"errors"
	"fmt"
	"os"
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
