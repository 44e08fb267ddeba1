package controller

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// clockTick is the kernel's USER_HZ, fixed at 100 on Linux for /proc.
const clockTick = 100

// groupCPU returns the CPU time (ns) of every live process in process group
// pgid, from the kernel's per-process accounting in /proc/PID/stat.
func groupCPU(pgid int) int64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		pg, cpu, ok := statCPU(pid)
		if ok && pg == pgid {
			total += cpu
		}
	}
	return total
}

// statCPU parses /proc/PID/stat: process group and utime+stime in ns.
func statCPU(pid int) (pgrp int, cpuNS int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name may contain spaces and parentheses: fields start
	// after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); pgrp is field 5, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, false
	}
	pg, err1 := strconv.Atoi(string(f[2]))
	ut, err2 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err3 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return pg, (ut + st) * (1e9 / clockTick), true
}

// threadsCPU returns the on-CPU time (ns) of all threads of pid from
// schedstat, which has nanosecond resolution (stat has 10 ms ticks). It is
// used to see whether the target keeps working through a pause.
func threadsCPU(pid int) int64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if sp := bytes.IndexByte(b, ' '); sp > 0 {
			if v, err := strconv.ParseInt(string(b[:sp]), 10, 64); err == nil {
				total += v
			}
		}
	}
	return total
}

// processCPU returns the CPU time of every thread of pid, live ones and
// exited ones, with nanosecond resolution, from the process CPU clock
// (clock_getcpuclockid). It returns 0 for a process that is gone.
func processCPU(pid int) time.Duration {
	var ts unix.Timespec
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) from the kernel's headers.
	id := int32((^pid)<<3 | 2)
	if unix.ClockGettime(id, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// selfCPU is this process's CPU time, all threads, from the kernel's
// precise per-process clock (not /proc's 10 ms ticks).
func selfCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
