package inservice

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// MaxLimit is the largest admission limit a controller may set.
const MaxLimit = 1 << 20

// limiter admits at most limit calls at a time (0: no limit), queueing the
// rest first in, first out. The limit can change while calls are in flight:
// lowering it lets those in flight finish and admits no one until the count
// is below the new limit; raising it (or removing it) admits queued calls at
// once, in order.
//
// It is written here rather than taken from golang.org/x/sync/semaphore
// because that semaphore's size is fixed: resizing it by swapping in a new
// one would forget the calls admitted by the old one and briefly admit more
// than the limit.
type limiter struct {
	limit    atomic.Int64 // 0: unlimited; written under mu
	admitted atomic.Int64 // calls admitted and not yet released
	queued   atomic.Int64 // len(waiters), readable without mu
	waitNS   atomic.Int64 // sum over admitted calls of their time in line

	mu      sync.Mutex
	waiters list.List // of chan struct{}, closed when admitted
}

// acquire admits one call, waiting in line while the limit is reached (the
// time in line is added to waitNS). It returns ctx's error if ctx ends
// first, and then the call was not admitted. Without a limit it costs two
// atomic loads and one add.
func (l *limiter) acquire(ctx context.Context) error {
	if l.limit.Load() == 0 {
		l.admitted.Add(1)
		if l.limit.Load() == 0 {
			// No limit was set before this call was counted: a limit
			// set now counts it among those it lets finish.
			return nil
		}
		// A limit was set meanwhile: give the place back and wait in
		// line like every call after it.
		l.mu.Lock()
		l.admitted.Add(-1)
		l.grantLocked()
	} else {
		l.mu.Lock()
	}
	if lim := l.limit.Load(); l.waiters.Len() == 0 && (lim == 0 || l.admitted.Load() < lim) {
		l.admitted.Add(1)
		l.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	e := l.waiters.PushBack(ch)
	l.queued.Add(1)
	l.mu.Unlock()
	queuedAt := time.Now()
	select {
	case <-ch:
		l.waitNS.Add(int64(time.Since(queuedAt)))
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		select {
		case <-ch: // admitted while ctx ended: the call holds a slot, let it run
			l.waitNS.Add(int64(time.Since(queuedAt)))
			return nil
		default:
		}
		l.waiters.Remove(e)
		l.queued.Add(-1)
		// Leaving the line may let the next ones in (a raised limit had
		// stopped at this one).
		l.grantLocked()
		return ctx.Err()
	}
}

// release ends an admitted call and admits the next in line if the limit
// allows.
func (l *limiter) release() {
	l.admitted.Add(-1)
	if l.limit.Load() == 0 && l.queued.Load() == 0 {
		return
	}
	l.mu.Lock()
	l.grantLocked()
	l.mu.Unlock()
}

func (l *limiter) grantLocked() {
	for l.waiters.Len() > 0 {
		if lim := l.limit.Load(); lim != 0 && l.admitted.Load() >= lim {
			return
		}
		e := l.waiters.Front()
		l.waiters.Remove(e)
		l.queued.Add(-1)
		l.admitted.Add(1)
		close(e.Value.(chan struct{}))
	}
}

// setLimit changes the limit (0 removes it) and admits whoever it now
// allows.
func (l *limiter) setLimit(n int64) {
	l.mu.Lock()
	l.limit.Store(n)
	l.grantLocked()
	l.mu.Unlock()
}

// poolCounters are the cumulative figures a pool-size advisor samples.
//
// The number of calls in flight integrated over time, at time T, is the
// time ended calls spent in flight plus, for each call still in flight, T
// minus its admission: endedNS + inflight*T - startSum, with times counted
// from base. Kept that way, it is exact at any instant, not only when calls
// end. Its three terms change together under mu: read one by one, a call
// starting or ending between the reads would count in one term and not in
// the other, an error of the whole time since base.
type poolCounters struct {
	base      time.Time
	done      atomic.Uint64 // calls ended
	good      atomic.Uint64 // calls ended within the threshold of their admission
	threshold atomic.Int64  // ns; 0 counts no call as good

	mu       sync.Mutex
	endedNS  int64 // sum over ended calls of end minus admission
	startSum int64 // sum over calls in flight of admission - base
	inflight int64 // admitted calls not ended
}

// start counts a call in flight from now, and returns now. The clock is
// read under mu, as in end and busy, so that readings of the integral
// never go back.
func (p *poolCounters) start() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.startSum += int64(now.Sub(p.base))
	p.inflight++
	return now
}

// end ends a call admitted at admitted, and returns how long it was in
// flight.
func (p *poolCounters) end(admitted time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	took := time.Since(admitted)
	p.endedNS += int64(took)
	p.startSum -= int64(admitted.Sub(p.base))
	p.inflight--
	return took
}

// read returns the calls in flight and their integral up to now, in ns.
func (p *poolCounters) read() (inflight, busyNS int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := int64(time.Since(p.base))
	return p.inflight, p.endedNS + p.inflight*now - p.startSum
}

// Call is an incoming call in progress, from ServerStart to ServerEnd.
type Call struct {
	admitted time.Time
	ok       bool
}

// ServerStart records the start of an incoming call to endpoint. Under an
// admission limit set by the controller (see [Message] "pool") it first
// waits its turn, first in first out, and returns ctx's error if ctx ends
// before then: the call was not admitted and must not be served. Every
// admitted call must be ended with ServerEnd. On a nil *Link it returns at
// once.
func (a *Link) ServerStart(ctx context.Context, endpoint string) (Call, error) {
	if a == nil {
		return Call{}, nil
	}
	if err := a.pool.acquire(ctx); err != nil {
		return Call{}, err
	}
	now := a.counters.start()
	a.endpoints.add(endpoint)
	n := a.total.Add(1)
	if b := a.batch.Load(); b > 0 && n%b == 0 {
		if bl := a.bell.Load(); bl == nil || !bl.ring() {
			select {
			case a.tick <- struct{}{}:
			default: // a tick is pending; it will carry the newer total
			}
		}
	}
	return Call{admitted: now, ok: true}, nil
}

// ServerEnd records the end of a call admitted by ServerStart.
func (a *Link) ServerEnd(c Call) {
	if a == nil || !c.ok {
		return
	}
	took := a.counters.end(c.admitted)
	a.pool.release()
	if thr := a.counters.threshold.Load(); thr > 0 && int64(took) <= thr {
		a.counters.good.Add(1)
	}
	a.counters.done.Add(1)
}

// SetPool sets the admission limit (0: none) and the response-time
// threshold for counting a call as good (0: none). The controller sets them
// with a "pool" message; tests call it directly.
func (a *Link) SetPool(limit int64, threshold time.Duration) {
	if a == nil {
		return
	}
	if limit < 0 || limit > MaxLimit {
		return
	}
	if threshold < 0 {
		threshold = 0
	}
	a.counters.threshold.Store(int64(threshold))
	a.pool.setLimit(limit)
}
