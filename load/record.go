package load

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: latencies in microseconds, 1µs..60s, 3 significant
// figures. Larger values are clamped to histHighest (the exact maximum is
// tracked separately).
const (
	histLowest  = 1
	histHighest = 60_000_000
	histSigFigs = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histSigFigs)
}

// window holds the measurement window bounds as offsets (ns) from the run's
// base time. Both bounds are published, once each, by the run's control
// goroutine: start right after onStart returns, end right before onEnd is
// called. Until a bound is published, the planned times bound it from below:
// the window cannot open before the warm-up has elapsed and cannot close
// before start+dur (except when the run is cancelled).
type window struct {
	warm  int64        // planned warm-up length
	dur   int64        // planned window length
	start atomic.Int64 // window start, or -1 while unknown
	end   atomic.Int64 // window end, or -1 while unknown
	gen   atomic.Uint32
}

func newWindow(warm, dur int64) *window {
	w := &window{warm: warm, dur: dur}
	w.start.Store(-1)
	w.end.Store(-1)
	return w
}

func (w *window) open(ws int64) {
	w.start.Store(ws)
	w.gen.Add(1)
}

func (w *window) close(we int64) {
	w.end.Store(we)
	w.gen.Add(1)
}

// classify reports whether an event at offset el is inside the window
// [start, end). If the answer cannot be known yet, known is false.
func (w *window) classify(el int64) (known, in bool) {
	ws := w.start.Load()
	if ws < 0 {
		return el < w.warm, false
	}
	if el < ws {
		return true, false
	}
	if we := w.end.Load(); we >= 0 {
		return true, el < we
	}
	return el < ws+w.dur, true
}

type outcome uint8

const (
	outOK      outcome = iota // 2xx response read to the end
	outNon2xx                 // non-2xx response read to the end
	outError                  // transport error or timeout
	outDropped                // open loop: send skipped (max in flight)
)

type event struct {
	el  int64 // completion (or intended send, for drops) offset from base, ns
	lat int64 // latency, ns
	lag int64 // open loop: actual send time - intended send time, ns
	val int64 // the response's sample value (WithSamples)
	typ int32 // index into the mix
	out outcome
}

// latAcc accumulates latencies (or other non-negative durations).
type latAcc struct {
	h   *hdrhistogram.Histogram // µs; allocated on first use
	n   uint64
	sum int64 // ns
	max int64 // ns, exact
}

func (a *latAcc) add(ns int64) {
	if ns < 0 {
		ns = 0
	}
	if a.h == nil {
		a.h = newHistogram()
	}
	us := (ns + 500) / 1000
	if us > histHighest {
		us = histHighest
	}
	_ = a.h.RecordValue(us) // in range by construction
	a.n++
	a.sum += ns
	if ns > a.max {
		a.max = ns
	}
}

func (a *latAcc) merge(b *latAcc) {
	if b.n == 0 {
		return
	}
	if a.h == nil {
		a.h = newHistogram()
	}
	a.h.Merge(b.h)
	a.n += b.n
	a.sum += b.sum
	a.max = max(a.max, b.max)
}

func (a *latAcc) latency() Latency {
	if a.n == 0 {
		return Latency{}
	}
	mx := a.max
	q := func(p float64) int64 {
		return min(a.h.ValueAtQuantile(p)*1000, mx)
	}
	mean := float64(a.sum) / float64(a.n)
	if mean > math.MaxInt64 {
		mean = math.MaxInt64
	}
	return Latency{
		Mean: durationOf(int64(mean)),
		P50:  durationOf(q(50)),
		P90:  durationOf(q(90)),
		P99:  durationOf(q(99)),
		P999: durationOf(q(99.9)),
		Max:  durationOf(mx),
	}
}

type typeStats struct {
	completed, errors, non2xx uint64
	lat                       latAcc
}

// recorder accumulates outcomes. A recorder owned by a single goroutine is
// used without locking; shared recorders (many connections, open loop) lock
// mu around each observation.
type recorder struct {
	mu      sync.Mutex
	shared  bool
	win     *window
	perType bool // keep per-type latency (false when the mix has one type)
	sendLag bool // keep send-lag statistics (open loop)
	all     latAcc
	lag     latAcc
	types   []typeStats
	dropped uint64
	keep    bool     // keep samples (WithSamples)
	samples []Sample // successful responses in the window, when keep
	pending []event  // events whose window membership is not known yet
	gen     uint32   // window generation pending was last resolved against
}

func newRecorder(win *window, ntypes int, shared, sendLag, keep bool) *recorder {
	return &recorder{
		keep:    keep,
		shared:  shared,
		win:     win,
		perType: ntypes > 1,
		sendLag: sendLag,
		types:   make([]typeStats, ntypes),
	}
}

// observe attributes ev to the window, or discards it, or (when that cannot
// be decided yet) keeps it until it can be.
func (r *recorder) observe(ev event) {
	if r.shared {
		r.mu.Lock()
		defer r.mu.Unlock()
	}
	if len(r.pending) > 0 {
		if g := r.win.gen.Load(); g != r.gen {
			r.gen = g
			r.resolvePending()
		}
	}
	known, in := r.win.classify(ev.el)
	switch {
	case !known:
		r.pending = append(r.pending, ev)
	case in:
		r.apply(ev)
	}
}

// resolvePending applies or discards the pending events that can now be
// decided and keeps the others.
func (r *recorder) resolvePending() {
	keep := r.pending[:0]
	for _, ev := range r.pending {
		switch known, in := r.win.classify(ev.el); {
		case !known:
			keep = append(keep, ev)
		case in:
			r.apply(ev)
		}
	}
	r.pending = keep
}

// finish resolves pending events once no more observations happen; those
// still undecided (the window never opened or never closed because the run
// was cancelled) are discarded.
func (r *recorder) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolvePending()
	r.pending = nil
}

func (r *recorder) apply(ev event) {
	ts := &r.types[ev.typ]
	if r.sendLag && ev.out != outDropped {
		r.lag.add(ev.lag)
	}
	switch ev.out {
	case outOK:
		ts.completed++
		r.all.add(ev.lat)
		if r.keep {
			r.samples = append(r.samples, Sample{Request: int(ev.typ), Latency: time.Duration(max(ev.lat, 0)), Value: ev.val})
		}
		if r.perType {
			ts.lat.add(ev.lat)
		}
	case outNon2xx:
		ts.non2xx++
	case outError:
		ts.errors++
	case outDropped:
		r.dropped++
	}
}
