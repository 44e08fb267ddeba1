package controller

import (
	"sync"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// stopper is what a pauser stops and continues: the service's process
// group (signals) or a set of cgroups (a freezer). cont may be called from
// any goroutine, more than once: the hard cap's timer calls it too.
type stopper interface {
	stop() error
	cont()
}

// timedStopper is a stopper told how long each stop is to last, from
// when stopFor is called, and again whenever the stop under way grows
// (lengthen: the new length in all, never less than before): what it
// stops on other nodes then ends on time there (TimedPodFreezer). cont
// still ends every stop.
type timedStopper interface {
	stopper
	stopFor(d time.Duration) error
	lengthen(d time.Duration)
}

// signalStopper stops and continues a process group with signals.
type signalStopper func(stop bool) error

func (s signalStopper) stop() error { return s(true) }
func (s signalStopper) cont()       { s(false) }

// pauser stops and continues what its stopper pauses. It keeps the total
// stopped time equal to the total requested time: a stop that overran
// (late timer, busy machine) shortens the next one, so oversleeping does not
// bias the measurement. A single stop never exceeds max; what a stop cannot
// take within max is dropped and counted as clipped.
type pauser struct {
	max time.Duration
	s   stopper
	// others returns the CPU time used so far by never-paused processes on
	// the service's cores, divided by the number of those cores; nil or
	// constant when there are none. A stop is extended by what they used
	// during it: the pause must take its full length out of the cores'
	// capacity, not lend part of it to them.
	others func() time.Duration
	// corePeers is the same for the other paused services on the
	// service's cores. Stops due together start and end a little apart;
	// a peer that runs while this service is stopped uses the core the
	// pause should have left idle. At the end of the stop as asked, it is
	// extended once by what the peers used since it began: once, because
	// later the peers' own stops may have ended, and what they use then
	// is theirs. A peer whose stop started earlier or was shorter may
	// already have resumed before that end, and is counted too.
	corePeers func() time.Duration

	add    chan pauseRequest
	halt   chan struct{}
	done   chan struct{}
	exited chan struct{} // closed when the loop has returned

	mu      sync.Mutex
	st      pauseStats    // counters since the last reset
	owes    time.Duration // what the stops owe: asked, less clipped and forgiven, plus extensions
	stopped bool
	since   time.Time // when the running stop began, if stopped
}

func newPauser(max time.Duration, s stopper) *pauser {
	p := &pauser{
		max:    max,
		s:      s,
		add:    make(chan pauseRequest, 1024),
		halt:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go p.loop()
	return p
}

// pauseRequest is d more of pause, to start no earlier than at (zero: now).
type pauseRequest struct {
	d  time.Duration
	at time.Time
}

// maxLead bounds how long a stop may be deferred: wire.MaxLead, a
// variable so that tests can observe long leads.
var maxLead = wire.MaxLead

// Pause asks for d more of pause. It never blocks; a full queue drops the
// request (counted as clipped).
func (p *pauser) Pause(d time.Duration) { p.PauseAt(d, time.Time{}) }

// PauseAt asks for d more of pause, starting at at if that is still ahead:
// services that share cores are given the same at so that they stop
// together. A stop already running or already deferred takes d on.
func (p *pauser) PauseAt(d time.Duration, at time.Time) {
	select {
	case p.add <- pauseRequest{d, at}:
	default:
		p.mu.Lock()
		p.st.requested += d
		p.st.clipped += d
		p.mu.Unlock()
	}
}

// Halt ends any stop now and forgets pauses still owed.
func (p *pauser) Halt() {
	select {
	case p.halt <- struct{}{}:
	default:
	}
}

// Close ends the loop, leaving what it paused continued, and returns once
// the loop has.
func (p *pauser) Close() {
	close(p.done)
	<-p.exited
}

func (p *pauser) loop() {
	defer close(p.exited)
	wake := newAlarm()
	defer wake.close()
	for {
		var req pauseRequest
		select {
		case req = <-p.add:
		case <-p.halt:
			p.forgive()
			continue
		case <-p.done:
			return
		}
		p.owe(req.d)
		halted, closed := false, false
		due := req.at
		if wait := time.Until(due); wait > maxLead {
			due = time.Time{} // a clock gone wrong: stop now, and do not count it late
		} else if wait > 0 {
			halted, closed = p.waitToStop(wake, due)
		}
		if !halted && !closed {
			halted, closed = p.stopOnce(wake, due)
		}
		if halted {
			p.forgive()
		}
		if closed {
			return
		}
	}
}

func (p *pauser) owe(d time.Duration) {
	p.mu.Lock()
	p.st.requested += d
	p.owes += d
	p.mu.Unlock()
}

// waitToStop waits until due before a stop, the service still running;
// pause asked for meanwhile is added to the stop that follows.
func (p *pauser) waitToStop(wake *alarm, due time.Time) (halted, closed bool) {
	defer wake.stop()
	for {
		left := time.Until(due)
		if left <= 0 {
			return p.interrupted()
		}
		wake.set(left)
		select {
		case req := <-p.add:
			p.owe(req.d)
		case <-wake.C:
		case <-p.halt:
			return true, false
		case <-p.done:
			return false, true
		}
	}
}

// interrupted reports, without waiting, a halt or a close already asked
// for.
func (p *pauser) interrupted() (halted, closed bool) {
	select {
	case <-p.halt:
		return true, false
	case <-p.done:
		return false, true
	default:
		return false, false
	}
}

// stopOnce stops, waits until the owed pause has passed (new requests
// extend it), and continues. due is when the stop was asked to start
// (zero: now); how late it started is counted, because services sharing
// cores overlap only as far as their stops do.
func (p *pauser) stopOnce(wake *alarm, due time.Time) (halted, closed bool) {
	start := time.Now()
	var tell func(time.Duration) // the stop's length, as it grows, to a timed stopper
	var err error
	if ts, ok := p.s.(timedStopper); ok {
		told := p.owed()
		err = ts.stopFor(told)
		tell = func(d time.Duration) {
			if d > told {
				told = d
				ts.lengthen(d)
			}
		}
	} else {
		err = p.s.stop()
	}
	if err != nil {
		// A stop may have reached part of what it pauses (a freeze of
		// several cgroups of which one failed): undo it at once, since no
		// hard cap is armed for a stop that failed.
		p.s.cont()
		return false, false
	}
	if !due.IsZero() {
		p.countLate(start, due)
	}
	// The stop's own handling counts from here to the continue included:
	// what is paused takes nothing from it.
	selfStart := selfCPU()
	// Independent hard cap: whatever happens to this loop, what is paused
	// is continued once max has passed.
	guard := time.AfterFunc(p.max, p.s.cont)
	co := p.markStopped(start)
	halted, closed = p.waitStopped(wake, start, &co, tell)
	wake.stop()
	// The stop lasts until the continue is issued: the stopped threads
	// the continue wakes may run before this one does again (a freeze's
	// woken threads took 0.1-1 ms of the core on the development machine,
	// nice -20 and the short slice notwithstanding), and counting that
	// time as stopped would shorten the stops that follow by as much.
	took := time.Since(start)
	p.s.cont()
	guard.Stop()
	p.countStop(took, selfCPU()-selfStart)
	return halted, closed
}

// countLate counts a stop due at due that started at start.
func (p *pauser) countLate(start, due time.Time) {
	p.mu.Lock()
	p.st.late += max(0, start.Sub(due))
	p.st.due++
	p.mu.Unlock()
}

// markStopped records that a stop has begun and returns what the
// co-located processes and the paused peers have used so far, to extend
// the stop by what they use during it.
func (p *pauser) markStopped(start time.Time) coLocated {
	p.mu.Lock()
	p.stopped, p.since = true, start
	co := coLocated{others: p.others, peers: p.corePeers}
	p.mu.Unlock()
	if co.others != nil {
		co.mark = co.others()
	}
	if co.peers != nil {
		co.peersMark = co.peers()
	}
	return co
}

// waitStopped waits, the stop having begun at start, until the owed pause
// has passed (new requests and the co-located CPU use extend it), or a
// halt or a close. tell, if not nil, is told the owed pause whenever it
// is reckoned.
func (p *pauser) waitStopped(wake *alarm, start time.Time, co *coLocated, tell func(time.Duration)) (halted, closed bool) {
	for {
		owed := p.owed()
		if tell != nil {
			tell(owed)
		}
		left := owed - time.Since(start)
		if left <= 0 {
			if ext := co.extension(); ext > 0 {
				p.extend(ext)
				continue
			}
			return false, false
		}
		wake.set(left)
		select {
		case req := <-p.add:
			p.owe(req.d)
		case <-wake.C:
		case <-p.halt:
			return true, false
		case <-p.done:
			return false, true
		}
	}
}

// countStop counts a stop that lasted took, during which this process
// used self of CPU, and records that it has ended.
func (p *pauser) countStop(took, self time.Duration) {
	p.mu.Lock()
	p.stopped = false
	p.st.actual += took
	p.st.selfIn += self
	p.st.pauses++
	if took > p.st.longest {
		p.st.longest = took
	}
	p.mu.Unlock()
}

// coLocated follows, over one stop, the CPU clocks of the never-paused
// co-located processes (others) and of the paused peers (see pauser), from
// their marks at the stop's start; nil clocks are none.
type coLocated struct {
	others, peers   func() time.Duration
	mark, peersMark time.Duration
	extensions      int // by others so far
}

// extension is how much longer the stop must last, once its owed pause has
// passed, for what the peers and the others used meanwhile; zero if it
// may end. The peers extend it once; the others up to maxExtensions
// times, each by what they used since the last.
func (co *coLocated) extension() time.Duration {
	if co.peers != nil {
		ext := co.peers() - co.peersMark
		co.peers = nil
		if ext > minExtension {
			return ext
		}
	}
	if co.others != nil && co.extensions < maxExtensions {
		now := co.others()
		if ext := now - co.mark; ext > minExtension {
			co.mark = now
			co.extensions++
			return ext
		}
	}
	return 0
}

// owed is the pause the running stop owes in all, within the hard cap:
// what is owed beyond it is dropped and counted as clipped.
func (p *pauser) owed() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	owed := p.owes - p.st.actual
	if owed > p.max {
		p.st.clipped += owed - p.max
		p.owes -= owed - p.max
		owed = p.max
	}
	return owed
}

// extend lengthens the running stop by d.
func (p *pauser) extend(d time.Duration) {
	p.mu.Lock()
	p.owes += d
	p.st.extended += d
	p.mu.Unlock()
}

// forgive drops pause still owed (or credit from overruns) at the end of a
// slowdown run.
func (p *pauser) forgive() {
	p.mu.Lock()
	p.owes = p.st.actual
	p.mu.Unlock()
	for {
		select {
		case <-p.add:
		default:
			return
		}
	}
}

// Bounds on extending a stop for co-located CPU use: smaller extensions
// are not worth a timer, and a few rounds of extension converge.
const (
	minExtension  = 20 * time.Microsecond
	maxExtensions = 4
)

// pauseStats are the pauser's counters since the last reset.
type pauseStats struct {
	requested time.Duration // all pause asked for
	actual    time.Duration // time stopped
	clipped   time.Duration // dropped to honour the cap or a full queue
	extended  time.Duration // added for co-located and peer CPU use
	selfIn    time.Duration // this process's CPU time while stopped
	heldCPU   time.Duration // CPU the holding threads got while holding cores (cores only)
	late      time.Duration // stop signals sent after the time they were due, summed
	longest   time.Duration
	pauses    uint64
	due       uint64 // stops that had a due time (PauseAt)
	// With the cores method: rounds rung on the holder's bell by the
	// target's instrumentation, and the target's CPU over the holds.
	rounds   uint64
	busyIn   time.Duration
	busyOver time.Duration
}

// stats are the counters, the stop in progress counted as stopped so far:
// a snapshot taken at a measurement window's edge, during a stop of tens
// of milliseconds, then reads the pause the window received, not the
// pause up to the last stop that ended.
func (p *pauser) stats() pauseStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	if p.stopped {
		st.actual += min(time.Since(p.since), p.max)
	}
	return st
}

func (p *pauser) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st, p.owes = pauseStats{}, 0
}

// setOthers sets the CPU clocks, per core, of the never-paused co-located
// processes and of the paused peers, used to extend stops (nil: none).
func (p *pauser) setOthers(others, corePeers func() time.Duration) {
	p.mu.Lock()
	p.others, p.corePeers = others, corePeers
	p.mu.Unlock()
}
