package proc

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CoresIdle is the idle time (idle and iowait) the given CPUs have
// accumulated since boot, summed over them, from /proc/stat; 0 when it
// cannot be read.
func CoresIdle(cpus []int) time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	want := map[string]bool{}
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	var ticks int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// cpuN user nice system idle iowait ...
		if len(fields) < 6 || !want[fields[0]] {
			continue
		}
		for _, f := range fields[4:6] {
			if v, err := strconv.ParseInt(f, 10, 64); err == nil {
				ticks += v
			}
		}
	}
	return time.Duration(ticks) * time.Second / clockTick
}

// OnlineCPUs is every CPU /proc/stat counts (the online ones), whether or
// not this process may run on it; nil when it cannot be read.
func OnlineCPUs() []int {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil
	}
	defer f.Close()
	var cpus []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, _, _ := strings.Cut(sc.Text(), " ")
		if num, ok := strings.CutPrefix(name, "cpu"); ok {
			if n, err := strconv.Atoi(num); err == nil {
				cpus = append(cpus, n)
			}
		}
	}
	return cpus
}

// CPUClock reads the CPU time process pid has used so far, all its
// threads, from its CPU clock (clock_gettime), which is exact where
// /proc/PID/stat counts in ticks.
func CPUClock(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, errors.New("proc: no process")
	}
	clock := int32((^pid)<<3 | 2) // the process's CPU clock (CPUCLOCK_SCHED)
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}
