package experiment

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// userHZ is the kernel's USER_HZ, the unit of /proc/stat, fixed at 100.
const userHZ = 100

// sharedIdle is the idle time (idle and iowait) the given CPUs have
// accumulated since boot, summed over them, from /proc/stat; 0 when it
// cannot be read.
func sharedIdle(cpus []int) time.Duration {
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
	return time.Duration(ticks) * time.Second / userHZ
}

// processCPUTime is this process's CPU time, all threads.
func processCPUTime() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
