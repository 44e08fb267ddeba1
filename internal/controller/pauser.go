package controller

import (
	"sync"
	"time"
)

// pauser stops and continues the service's process group. It keeps the
// total stopped time equal to the total requested time: a stop that overran
// (late timer, busy machine) shortens the next one, so oversleeping does not
// bias the measurement. A single stop never exceeds max; what a stop cannot
// take within max is dropped and counted as clipped.
type pauser struct {
	max    time.Duration
	signal func(stop bool) error // stop or continue the group
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

	add  chan pauseRequest
	halt chan struct{}
	done chan struct{}

	mu      sync.Mutex
	st      pauseStats    // counters since the last reset
	owes    time.Duration // what the stops owe: asked, less clipped and forgiven, plus extensions
	stopped bool
}

func newPauser(max time.Duration, signal func(stop bool) error) *pauser {
	p := &pauser{
		max:    max,
		signal: signal,
		add:    make(chan pauseRequest, 1024),
		halt:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	go p.loop()
	return p
}

// pauseRequest is d more of pause, to start no earlier than at (zero: now).
type pauseRequest struct {
	d  time.Duration
	at time.Time
}

// MaxLead bounds how long a stop may be deferred (Configure.LeadNS): a
// round stamped further in the future (a clock gone wrong) stops at once.
const MaxLead = 50 * time.Millisecond

// maxLead is MaxLead, a variable so that tests can observe long leads.
var maxLead = MaxLead

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

// Close ends the loop, leaving the group continued.
func (p *pauser) Close() { close(p.done) }

func (p *pauser) loop() {
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

// stopOnce stops the group, waits until the owed pause has passed (new
// requests extend it), and continues the group. due is when the stop was
// asked to start (zero: now); how late it started is counted, because
// services sharing cores overlap only as far as their stops do.
func (p *pauser) stopOnce(wake *alarm, due time.Time) (halted, closed bool) {
	start := time.Now()
	if err := p.signal(true); err != nil {
		return false, false
	}
	if !due.IsZero() {
		p.mu.Lock()
		p.st.late += max(0, start.Sub(due))
		p.st.due++
		p.mu.Unlock()
	}
	// The stop's own handling counts from here to the continue signal
	// included: the group is stopped, so it takes nothing from it.
	selfStart := selfCPU()
	// Independent hard cap: whatever happens to this loop, the group is
	// continued once max has passed.
	guard := time.AfterFunc(p.max, func() { p.signal(false) })
	p.mu.Lock()
	p.stopped = true
	others, peers := p.others, p.corePeers
	p.mu.Unlock()
	var mark, peersMark time.Duration
	if others != nil {
		mark = others()
	}
	if peers != nil {
		peersMark = peers()
	}
	extensions := 0
wait:
	for {
		p.mu.Lock()
		owed := p.owes - p.st.actual
		if owed > p.max {
			p.st.clipped += owed - p.max
			p.owes -= owed - p.max
			owed = p.max
		}
		p.mu.Unlock()
		left := owed - time.Since(start)
		if left <= 0 && peers != nil {
			ext := peers() - peersMark
			peers = nil
			if ext > minExtension {
				p.extend(ext)
				continue
			}
		}
		if left <= 0 && others != nil && extensions < maxExtensions {
			now := others()
			if ext := now - mark; ext > minExtension {
				mark = now
				extensions++
				p.extend(ext)
				continue
			}
		}
		if left <= 0 {
			break
		}
		wake.set(left)
		select {
		case req := <-p.add:
			p.owe(req.d)
		case <-wake.C:
		case <-p.halt:
			halted = true
			break wait
		case <-p.done:
			closed = true
			break wait
		}
	}
	wake.stop()
	p.signal(false)
	guard.Stop()
	took := time.Since(start)
	self := selfCPU() - selfStart
	p.mu.Lock()
	p.stopped = false
	p.st.actual += took
	p.st.selfIn += self
	p.st.pauses++
	if took > p.st.longest {
		p.st.longest = took
	}
	p.mu.Unlock()
	return halted, closed
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
	actual    time.Duration // time the group was stopped
	clipped   time.Duration // dropped to honour the cap or a full queue
	extended  time.Duration // added for co-located and peer CPU use
	selfIn    time.Duration // this process's CPU time while the group was stopped
	late      time.Duration // stop signals sent after the time they were due, summed
	longest   time.Duration
	pauses    uint64
	due       uint64 // stops that had a due time (PauseAt)
}

func (p *pauser) stats() pauseStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st
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
