package controller

import (
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/attach"
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
	// cpuPollMin and cpuPollMax bound the wait between two reads of the
	// target's CPU. The trigger waits until the next round could be due at
	// the earliest, the CPU left to its boundary spread over all of the
	// target's cores, so that a round is late by at most cpuPollMin and a
	// round costs one or two reads instead of one every millisecond: on the
	// 2-core host a wake-up costs 30-60 µs of CPU (a 1 ms ticker: 4-5% of
	// a core).
	cpuPollMin = 500 * time.Microsecond
	cpuPollMax = 50 * time.Millisecond
	// cpuRelistEvery is how often the service's processes are listed
	// again (a scan of /proc, about 0.75 ms of CPU with 70 processes), to count
	// the children it starts.
	cpuRelistEvery = time.Second
)

// cpuMeter sums the CPU time that a process group's processes use from the
// meter's creation on. Each process is read through its process CPU clock
// (all its threads, exact to the nanosecond, up to date even while they
// run), not /proc's tick counts, nor /proc/PID/schedstat, which holds the
// leader thread only. A process that exits loses at most one poll's CPU;
// one that starts counts from its birth (attach.CPUCounter sums them).
type cpuMeter struct {
	list   func() []proc.Stat // the processes to count
	clock  func(pid int) time.Duration
	pids   []int // as list last listed them
	sum    attach.CPUCounter
	base   time.Duration // the sum at the meter's creation: what they used before counts not
	listed time.Time
}

func newCPUMeter(pgid int, now time.Time) *cpuMeter {
	return newCPUMeterOf(func() []proc.Stat { return proc.Group(pgid) }, processCPU, now)
}

// newCPUMeterOf is newCPUMeter on the processes list returns (an attached
// service's, which form no process group of slowpoke's), read by clock.
func newCPUMeterOf(list func() []proc.Stat, clock func(pid int) time.Duration, now time.Time) *cpuMeter {
	m := &cpuMeter{list: list, clock: clock}
	m.relist(now)
	m.base = m.sum.Read(m.pids, m.clock)
	return m
}

// relist lists the processes again, to count the children they started.
func (m *cpuMeter) relist(now time.Time) {
	m.listed = now
	m.pids = m.pids[:0]
	for _, s := range m.list() {
		if !s.Ended() {
			m.pids = append(m.pids, s.PID)
		}
	}
}

// read returns the CPU time its processes used since the meter was made.
func (m *cpuMeter) read(now time.Time) time.Duration {
	if now.Sub(m.listed) >= cpuRelistEvery {
		m.relist(now)
	}
	return m.sum.Read(m.pids, m.clock) - m.base
}

// cpuTrigger starts the target's rounds from its CPU time until stop is
// closed: every perCall of CPU is one call for onCount, and a round is due
// every batch calls. cores is the most CPU time the target can use per
// unit of wall time.
func (c *Controller) cpuTrigger(perCall time.Duration, batch, cores int, stop <-chan struct{}) {
	m := c.newMeter(time.Now())
	perRound := perCall * time.Duration(max(1, batch))
	t := time.NewTimer(cpuWait(0, perRound, cores))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			used := m.read(now)
			c.onCount(uint64(used/perCall), true)
			t.Reset(cpuWait(used, perRound, cores))
		}
	}
}

// cpuWait is how long the trigger may wait, having seen used of CPU, before
// the next round could be due: the CPU left to the next multiple of
// perRound, used at the fastest on every one of cores.
func cpuWait(used, perRound time.Duration, cores int) time.Duration {
	left := perRound - used%perRound
	return min(max(left/time.Duration(max(1, cores)), cpuPollMin), cpuPollMax)
}
