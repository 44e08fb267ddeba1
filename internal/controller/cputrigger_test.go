package controller

import (
	"syscall"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// groupClocks sums the process CPU clocks of every live process of pgid.
func groupClocks(pgid int) (sum time.Duration, n int) {
	for _, s := range proc.Group(pgid) {
		if !s.Ended() {
			sum += processCPU(s.PID)
			n++
		}
	}
	return sum, n
}

// The meter counts every process of the group, a child the service
// started included, exactly as their CPU clocks advance, and nothing they
// used before it was made.
func TestCPUMeterCountsTheWholeGroup(t *testing.T) {
	c := startCtl(t, "forkspin", "forkspin", time.Second)
	waitFor(t, "the child spinner", 5*time.Second, func() bool { _, n := groupClocks(c.PID()); return n == 2 })
	m := newCPUMeter(c.PID(), time.Now())
	before := m.base // what the meter starts from
	time.Sleep(300 * time.Millisecond)
	lo, _ := groupClocks(c.PID())
	got := m.read(time.Now())
	hi, _ := groupClocks(c.PID())
	t.Logf("meter %v, clocks %v-%v", got, lo-before, hi-before)
	if lo-before < 50*time.Millisecond {
		t.Fatalf("the group used only %v of CPU in 300ms: cannot judge", lo-before)
	}
	// The meter reads each process between the test's two readings of it.
	if got < lo-before-time.Millisecond || got > hi-before {
		t.Fatalf("meter counted %v, the group's clocks advanced %v-%v", got, lo-before, hi-before)
	}
}

// A child born after the meter was made counts from its birth; a process
// that is gone stops counting without taking anything back.
func TestCPUMeterChildrenBornAndGone(t *testing.T) {
	clocks := map[int]time.Duration{1: 5 * time.Millisecond}
	listed := []proc.Stat{{PID: 1, State: 'R'}}
	now := time.Now()
	m := newCPUMeterOf(func() []proc.Stat { return listed }, func(pid int) time.Duration { return clocks[pid] }, now)
	clocks[1] = 8 * time.Millisecond
	if got := m.read(now); got != 3*time.Millisecond {
		t.Fatalf("after 3ms of the first process: %v", got)
	}
	listed = append(listed, proc.Stat{PID: 2, State: 'R'})
	clocks[2] = 4 * time.Millisecond
	if got := m.read(now); got != 3*time.Millisecond {
		t.Fatalf("a child counted before the meter listed the processes again: %v", got)
	}
	now = now.Add(cpuRelistEvery) // as the relisting finds the new process
	if got := m.read(now); got != 7*time.Millisecond {
		t.Fatalf("with a child born since: %v", got)
	}
	delete(clocks, 1) // exited: its clock reads 0
	clocks[2] = 6 * time.Millisecond
	if got := m.read(now); got != 9*time.Millisecond {
		t.Fatalf("after the first exited: %v", got)
	}
	listed = []proc.Stat{{PID: 1, State: 'Z'}, {PID: 2, State: 'R'}}
	now = now.Add(cpuRelistEvery)
	if got := m.read(now); got != 9*time.Millisecond || len(m.pids) != 1 {
		t.Fatalf("after a relisting with the first a zombie: %v, reading %v", got, m.pids)
	}
}

// Rounds of a target without instrumentation follow its CPU time: one
// every Batch×CPUPerCallNS, and the other service pauses for each.
func TestCPUTriggerStartsRoundsByCPU(t *testing.T) {
	a := startCtl(t, "a", "spin", time.Second)
	b := startCtl(t, "b", "spin", time.Second)
	n := wire.Neighbour{Name: "b", Addr: b.Addr()}
	const perCall, batch = 500 * time.Microsecond, 20 // a round every 10ms of the target's CPU
	must(t, b.Configure(wire.Configure{Epoch: 2, PausePerRoundNS: int64(time.Millisecond)}))
	must(t, a.Configure(wire.Configure{Epoch: 2, Target: true, Batch: batch, CPUPerCallNS: int64(perCall), PausePerRoundNS: int64(time.Millisecond), Pause: signalPause(wire.SignalPause{Neighbours: []wire.Neighbour{n}})}))
	must(t, b.StartSlowdown())
	cpu0 := processCPU(a.PID())
	must(t, a.StartSlowdown())
	time.Sleep(500 * time.Millisecond)
	a.stopSlowdown()
	used := processCPU(a.PID()) - cpu0
	st := a.Stats()
	want := float64(used) / float64(perCall*batch)
	t.Logf("target used %v of CPU: %d rounds for %.1f due", used, st.RoundsStarted, want)
	if want < 10 {
		t.Fatalf("the target used only %v of CPU: cannot judge", used)
	}
	if got := float64(st.RoundsStarted); got < 0.7*want || got > 1.1*want+1 {
		t.Fatalf("%d rounds for %v of the target's CPU, want about %.1f", st.RoundsStarted, used, want)
	}
	waitFor(t, "the rounds to reach b", 3*time.Second, func() bool { return b.Stats().RoundsReceived == st.RoundsStarted })
	if p := b.Stats().Pauses; p == 0 {
		t.Fatal("b never paused")
	}
	// Stopped: no more rounds.
	time.Sleep(50 * time.Millisecond)
	if after := a.Stats().RoundsStarted; after != st.RoundsStarted {
		t.Fatalf("%d rounds after the stop", after-st.RoundsStarted)
	}
}

// An instrumented target asked to follow its CPU starts no round from its
// calls, however many it serves.
func TestCPUTriggerIgnoresCallTicks(t *testing.T) {
	a := startCtl(t, "a", "calls", time.Second)
	waitFor(t, "instrumentation to connect", 5*time.Second, func() bool { return a.Stats().AgentConnected })
	// A round every 10 s of CPU: never in this test; every call would be
	// a round if calls counted.
	must(t, a.Configure(wire.Configure{Epoch: 1, Target: true, Batch: 1, CPUPerCallNS: int64(10 * time.Second)}))
	must(t, a.StartSlowdown())
	time.Sleep(300 * time.Millisecond)
	a.stopSlowdown()
	if st := a.Stats(); st.RoundsStarted != 0 || st.Calls == 0 {
		t.Fatalf("%d rounds over %d calls", st.RoundsStarted, st.Calls)
	}
}

func TestCPUTriggerConfigureChecks(t *testing.T) {
	a := startCtl(t, "a", "spin", time.Second)
	for _, cf := range []wire.Configure{
		{Epoch: 1, Target: true, Batch: 1, CPUPerCallNS: -1},
		{Epoch: 1, Target: true, Batch: 1, CPUPerCallNS: int64(wire.MaxCPUPerCall) + 1},
		{Epoch: 1, CPUPerCallNS: int64(time.Millisecond)},
	} {
		if err := a.Configure(cf); err == nil {
			t.Errorf("accepted %+v", cf)
		}
	}
	// Without instrumentation a call-counted target cannot start; one
	// whose rounds follow its CPU can.
	must(t, a.Configure(wire.Configure{Epoch: 1, Target: true, Batch: 1}))
	if err := a.StartSlowdown(); err == nil {
		t.Fatal("a call-counted slowdown started without instrumentation")
	}
	must(t, a.Configure(wire.Configure{Epoch: 1, Target: true, Batch: 1, CPUPerCallNS: int64(time.Millisecond)}))
	must(t, a.StartSlowdown())
	a.stopSlowdown()
}

// BenchmarkCPUMeterRead is the cost of one read of the CPU of this test's
// process group (the trigger reads once or twice a round, see cpuWait).
func BenchmarkCPUMeterRead(b *testing.B) {
	m := newCPUMeter(syscall.Getpgrp(), time.Now())
	if len(m.pids) == 0 {
		b.Fatal("no process in this process group")
	}
	now := time.Now()
	b.ResetTimer()
	for b.Loop() {
		m.read(now)
	}
}

func TestCPUWait(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		used, perRound time.Duration
		cores          int
		want           time.Duration
	}{
		{0, 10 * ms, 1, 10 * ms},                          // a whole round to go, on one core
		{4 * ms, 10 * ms, 1, 6 * ms},                      // part of it used
		{24 * ms, 10 * ms, 2, 3 * ms},                     // 6ms left, on two cores
		{9900 * time.Microsecond, 10 * ms, 1, cpuPollMin}, // nearly due: no busy loop
		{0, 10 * time.Second, 1, cpuPollMax},              // a long round: still read now and then
		{0, 10 * ms, 0, 10 * ms},                          // cores unknown: one
	} {
		if got := cpuWait(tc.used, tc.perRound, tc.cores); got != tc.want {
			t.Errorf("cpuWait(%v, %v, %d) = %v, want %v", tc.used, tc.perRound, tc.cores, got, tc.want)
		}
	}
}
