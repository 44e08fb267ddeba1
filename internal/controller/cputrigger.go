package controller

import (
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// The CPU trigger: on a target whose calls are not counted (a service in
// any language, without slowpoke's instrumentation), rounds follow the
// target's CPU time instead. Every CPUPerCallNS of CPU that the service's
// processes use counts as one call, so a round starts each time it has
// used another Batch×CPUPerCallNS: the same rounds as every Batch calls
// while its CPU per call is steady (as Coz's sampled delays equal
// per-execution delays in expectation).
const (
	// cpuPollEvery is how often the target's CPU is read: a round is late
	// by at most this much, against rounds of several milliseconds of
	// CPU. Each read is one clock_gettime per process of the service.
	cpuPollEvery = time.Millisecond
	// cpuRelistEvery is how often the service's processes are listed
	// again (a scan of /proc), to count the children it starts.
	cpuRelistEvery = 250 * time.Millisecond
	// maxCPUPerCall bounds Configure.CPUPerCallNS.
	maxCPUPerCall = 10 * time.Second
)

// cpuMeter sums the CPU time that a process group's processes use from the
// meter's creation on. Each process is read through its process CPU clock
// (all its threads, exact to the nanosecond, up to date even while they
// run), not /proc's tick counts, nor /proc/PID/schedstat, which holds the
// leader thread only. A process that exits loses at most one poll's CPU;
// one that starts counts from its birth.
type cpuMeter struct {
	pgid   int
	last   map[int]time.Duration // each process's clock at its last read
	total  time.Duration
	listed time.Time
	clock  func(pid int) time.Duration // processCPU; a test may replace it
}

func newCPUMeter(pgid int, now time.Time) *cpuMeter {
	m := &cpuMeter{pgid: pgid, last: map[int]time.Duration{}, clock: processCPU}
	for _, s := range proc.Group(pgid) {
		if !s.Ended() {
			m.last[s.PID] = m.clock(s.PID) // what they used before counts not
		}
	}
	m.listed = now
	return m
}

// read returns the CPU time the group used since the meter was made.
func (m *cpuMeter) read(now time.Time) time.Duration {
	if now.Sub(m.listed) >= cpuRelistEvery {
		m.listed = now
		for _, s := range proc.Group(m.pgid) {
			if _, known := m.last[s.PID]; !known && !s.Ended() {
				m.last[s.PID] = 0 // born since: all its CPU is new
			}
		}
	}
	for pid, prev := range m.last {
		cur := m.clock(pid)
		if cur == 0 { // gone (or reaped and not yet relisted)
			delete(m.last, pid)
			continue
		}
		if cur > prev {
			m.total += cur - prev
			m.last[pid] = cur
		}
	}
	return m.total
}

// cpuTrigger starts the target's rounds from its CPU time until stop is
// closed: every perCall of CPU is one call for onCount.
func (c *Controller) cpuTrigger(perCall time.Duration, stop <-chan struct{}) {
	m := newCPUMeter(c.pgid, time.Now())
	t := time.NewTicker(cpuPollEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			c.onCount(uint64(m.read(now)/perCall), true)
		}
	}
}
