package controller

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// groupCPU returns the CPU time (ns) of every live process in process group
// pgid, from the kernel's per-process accounting in /proc/PID/stat.
func groupCPU(pgid int) int64 {
	var total int64
	for _, s := range proc.Group(pgid) {
		total += int64(s.CPU)
	}
	return total
}

// statCPU reads pid's process group and CPU time (ns).
func statCPU(pid int) (pgrp int, cpuNS int64, ok bool) {
	s, ok := proc.Read(pid)
	return s.PGRP, int64(s.CPU), ok
}

// processCPU returns the CPU time of every thread of pid, live ones and
// exited ones, with nanosecond resolution, from the process CPU clock
// (clock_getcpuclockid). It returns 0 for a process that is gone.
func processCPU(pid int) time.Duration {
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) from the kernel's headers.
	return cpuClock(int32((^pid)<<3 | 2))
}

// selfCPU is this process's CPU time, all threads, from the kernel's
// precise per-process clock (not /proc's 10 ms ticks).
func selfCPU() time.Duration { return cpuClock(unix.CLOCK_PROCESS_CPUTIME_ID) }

// cpuClock reads a CPU-time clock, 0 on error. It makes the system call
// raw: clock_gettime never blocks, and a call through the scheduler wakes
// the Go runtime's monitor thread (sysmon) from its deep sleep, after which
// it polls every 20 µs while the controller is busy. The pause loop reads
// these clocks on every stop; sysmon's wake-ups were about 40% of the
// controllers' CPU on a shared core (perf), and making these calls raw
// took the controllers' CPU per round from 306 µs to 217-270 µs on a
// 3-service chain (docs/method.md, "What rounds cost").
func cpuClock(id int32) time.Duration {
	var ts unix.Timespec
	if _, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
