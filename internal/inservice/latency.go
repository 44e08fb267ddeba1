package inservice

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/hrtimer"
)

// Names under which a latency what-if's request id and delay counter travel:
// HTTP header fields, and (lower case) gRPC metadata keys. The load
// generator reads HeaderDelay off the entry service's response.
const (
	HeaderRequest = "Slowpoke-Request"
	HeaderDelay   = "Slowpoke-Delay"
	MDRequest     = "slowpoke-request"
	MDDelay       = "slowpoke-delay"
)

// Bounds on what a latency what-if may do to a request.
const (
	// MaxDelay is the largest delay counter accepted from a peer or the
	// controller; larger values are ignored.
	MaxDelay = time.Minute
	// MaxCatchUp is the most one reply waits, in all, to catch up with
	// its request's global counter.
	MaxCatchUp = time.Second
	// maxNumber is the longest decimal number parsed from a header.
	maxNumber = 20
)

// latencyMode is a latency what-if in progress: the store of global
// counters, and whether this service is the target and by how much it is
// virtually sped up per call.
type latencyMode struct {
	store  *Store
	target bool
	delay  int64 // ns added per call of the target
}

// Request is one served call's part in a latency what-if: its request's id
// and this service's local delay counter for it. A nil *Request (no what-if
// under way) does nothing.
type Request struct {
	mode  *latencyMode
	id    uint64
	local atomic.Int64 // ns of global delay this call has served or inherited
}

// nextID gives out request ids for requests that arrive without one, from a
// random start so that processes do not collide.
var nextID atomic.Uint64

func init() { nextID.Store(rand.Uint64() >> 1) }

// SetLatency starts a latency what-if in this service (store names the
// delay store file; target says whether this is the service virtually sped
// up, by delay per call), or ends it when store is empty. The controller
// sets it with a "latency" message; tests call it directly.
func (a *Link) SetLatency(store string, target bool, delay time.Duration) error {
	if a == nil {
		return nil
	}
	if store == "" {
		a.latency.Store(nil)
		return nil
	}
	if delay < 0 || delay > MaxDelay {
		delay = 0
	}
	a.latMu.Lock()
	defer a.latMu.Unlock()
	s := a.stores[store]
	if s == nil {
		var err error
		if s, err = OpenStore(store); err != nil {
			a.latency.Store(nil)
			return err
		}
		// Kept mapped for the life of the process: a request in flight
		// may still read it after the what-if ends.
		if a.stores == nil {
			a.stores = map[string]*Store{}
		}
		a.stores[store] = s
	}
	a.latency.Store(&latencyMode{store: s, target: target, delay: int64(delay)})
	return nil
}

// LatencyActive reports whether a latency what-if is under way.
func (a *Link) LatencyActive() bool { return a != nil && a.latency.Load() != nil }

// BeginRequest joins a served call to a latency what-if (NewRequest) and
// starts its work (Start).
func (a *Link) BeginRequest(id, delay string) *Request {
	r := a.NewRequest(id, delay)
	r.Start()
	return r
}

// NewRequest joins a served call to a latency what-if: id and delay are
// the request id and the caller's delay counter as received (empty when
// absent); malformed values count as absent, and a request without an id
// gets a new one. It returns nil, at the cost of one atomic load, when no
// what-if is under way.
func (a *Link) NewRequest(id, delay string) *Request {
	if a == nil {
		return nil
	}
	m := a.latency.Load()
	if m == nil {
		return nil
	}
	n, ok := ParseID(id)
	if !ok {
		n = nextID.Add(1)
	}
	r := &Request{mode: m, id: n}
	if v, ok := ParseDelay(delay); ok {
		r.local.Store(v)
	}
	return r
}

// Start marks the beginning of the call's work: the target's call adds its
// virtual speedup to its own and its request's global counter here.
func (r *Request) Start() {
	if r == nil {
		return
	}
	if m := r.mode; m.target && m.delay > 0 {
		r.local.Add(m.delay)
		m.store.Add(r.id, m.delay)
	}
}

// ID is the request's id, to pass on with calls made for it.
func (r *Request) ID() string {
	if r == nil {
		return ""
	}
	return strconv.FormatUint(r.id, 10)
}

// Local is the call's delay counter, to pass on with calls made for it.
func (r *Request) Local() string {
	if r == nil {
		return ""
	}
	return formatDelay(r.local.Load())
}

// Adopt takes a reply's delay counter (as received) when it is more than
// the call's own: the branch that replied has served that much delay.
func (r *Request) Adopt(delay string) {
	if r == nil {
		return
	}
	if v, ok := ParseDelay(delay); ok {
		r.raise(v)
	}
}

// AdoptGlobal takes the request's global counter as the call's own: for a
// reply whose protocol cannot carry the counter back (gRPC from a stats
// handler), whose sender caught up with the global counter just before.
func (r *Request) AdoptGlobal() {
	if r == nil {
		return
	}
	r.raise(r.mode.store.Get(r.id))
}

func (r *Request) raise(v int64) {
	for {
		l := r.local.Load()
		if v <= l || r.local.CompareAndSwap(l, v) {
			return
		}
	}
}

// CatchUp waits, before the call replies, until it has served its request's
// global delay counter, and returns its counter for the reply. Time slept
// beyond what was due (timers fire late) is published to the global counter
// too, so that it is served by every other branch and taken off the end to
// end latency like the rest. It waits at most MaxCatchUp in all.
func (r *Request) CatchUp() string {
	if r == nil {
		return ""
	}
	var deadline time.Time
	for {
		g := r.mode.store.Get(r.id)
		l := r.local.Load()
		if g <= l {
			return formatDelay(l)
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(MaxCatchUp)
		}
		wait := time.Duration(g - l)
		if left := deadline.Sub(now); wait >= left {
			// Out of time: give up waiting, reply at once.
			if left > 0 {
				sleep(left)
			}
			r.raise(g)
			return formatDelay(r.local.Load())
		}
		sleep(wait)
		served := l + int64(time.Since(now))
		r.raise(served)
		r.mode.store.Raise(r.id, served)
	}
}

// sleep waits for d. The runtime's timers can fire a millisecond late when
// the process is idle, which would make a branch wait far beyond what it
// owes (and every other branch then wait for that too): the last part of
// the wait is on a high-resolution timer, read through the runtime's
// poller so that the goroutine's thread is free meanwhile.
func sleep(d time.Duration) {
	end := time.Now().Add(d)
	if d > hrtimer.Max {
		time.Sleep(d - hrtimer.Max)
	}
	left := time.Until(end)
	if left <= 0 {
		return
	}
	t, _ := timers.Get().(*hrtimer.Timer)
	if t == nil || !t.Sleep(left) {
		time.Sleep(left)
	}
	if t != nil {
		timers.Put(t)
	}
}

// timers are the high-resolution timers of waits, reused (a dropped one
// is closed by its file's finalizer).
var timers = sync.Pool{New: func() any { return hrtimer.New() }}

// formatDelay writes a counter for a peer, within what ParseDelay accepts.
func formatDelay(v int64) string { return strconv.FormatInt(min(max(v, 0), int64(MaxDelay)), 10) }

// ParseID parses a request id as sent in HeaderRequest: a decimal number
// that fits 64 bits.
func ParseID(s string) (uint64, bool) {
	if s == "" || len(s) > maxNumber {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// ParseDelay parses a delay counter as sent in HeaderDelay: a decimal
// number of nanoseconds in [0, MaxDelay].
func ParseDelay(s string) (int64, bool) {
	if s == "" || len(s) > maxNumber {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > int64(MaxDelay) {
		return 0, false
	}
	return v, true
}

type requestKey struct{}

// ContextWithRequest returns ctx carrying r, for the calls made on its
// behalf.
func ContextWithRequest(ctx context.Context, r *Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestFromContext returns the *Request ctx carries, or nil.
func RequestFromContext(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}
