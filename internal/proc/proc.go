package proc

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// clockTick is the kernel's USER_HZ, fixed at 100 on Linux for /proc.
const clockTick = 100

// Stat is what slowpoke reads of a process.
type Stat struct {
	PID   int
	State byte // R, S, D, T, Z, X, ...
	PPID  int
	PGRP  int
	CPU   time.Duration // user and system time
	Start string        // start time in clock ticks after boot, as /proc writes it
	Flags uint64        // the kernel's per-process flags (PF_*)
}

// The kernel's per-process flags that slowpoke reads (include/linux/sched.h).
const (
	pfExiting = 0x00000004
	pfKthread = 0x00200000
)

// Kernel says whether the process is a kernel thread.
func (s Stat) Kernel() bool { return s.Flags&pfKthread != 0 }

// Exiting says whether the process is exiting: it has no program any more
// (its /proc/PID/exe is gone) and is about to end.
func (s Stat) Exiting() bool { return s.Flags&pfExiting != 0 }

// Ended says whether the process has exited and waits to be reaped.
func (s Stat) Ended() bool { return s.State == 'Z' || s.State == 'X' }

// Read reads pid's stat; false if there is no such process (or /proc
// cannot be read).
func Read(pid int) (Stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	return parse(pid, b)
}

// All reads every process's stat.
func All() []Stat {
	ents, _ := os.ReadDir("/proc")
	out := make([]Stat, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, ok := Read(pid); ok {
			out = append(out, s)
		}
	}
	return out
}

// Group reads the stat of every process of process group pgid, its
// leader's included.
func Group(pgid int) []Stat {
	var out []Stat
	for _, s := range All() {
		if s.PGRP == pgid {
			out = append(out, s)
		}
	}
	return out
}

// Waits sums, over every thread of every process of process group pgid,
// the time spent running and the time spent runnable but waiting for a
// core (/proc/PID/task/TID/schedstat, kept by the kernel's scheduler). Their
// ratio is how much the group's work was stretched by others on its cores.
// Both are 0 where schedstat cannot be read.
func Waits(pgid int) (run, wait time.Duration) {
	var pids []int
	for _, st := range Group(pgid) {
		pids = append(pids, st.PID)
	}
	return WaitsOf(pids)
}

// WaitsOf is Waits over the given processes.
func WaitsOf(pids []int) (run, wait time.Duration) {
	for _, pid := range pids {
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/schedstat")
			if err != nil {
				continue
			}
			f := bytes.Fields(b)
			if len(f) < 2 {
				continue
			}
			r, err1 := strconv.ParseInt(string(f[0]), 10, 64)
			w, err2 := strconv.ParseInt(string(f[1]), 10, 64)
			if err1 == nil && err2 == nil {
				run += time.Duration(r)
				wait += time.Duration(w)
			}
		}
	}
	return run, wait
}

// Getenv returns the value of key in the environment pid was started with
// (/proc/PID/environ), and whether it was there. A process's environment
// can be read by its own user and by root only: for others it is not
// there. For a moment after exec begins, it is empty.
func Getenv(pid int, key string) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
	prefix := []byte(key + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v), true
		}
	}
	return "", false
}

// parse parses a stat line. The command's name, in parentheses, may hold
// spaces and parentheses itself: the fields start after the last ')'.
func parse(pid int, b []byte) (Stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); ppid 4, pgrp 5, flags 9, utime 14,
	// stime 15, starttime 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	ut, err3 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err4 := strconv.ParseInt(string(f[12]), 10, 64)
	flags, err5 := strconv.ParseUint(string(f[6]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil {
		return Stat{}, false
	}
	return Stat{PID: pid, State: f[0][0], PPID: ppid, PGRP: pgrp, Flags: flags,
		CPU: time.Duration(ut+st) * (time.Second / clockTick), Start: string(f[19])}, true
}
