package load

import (
	"context"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/hrtimer"
)

// openRecorders is the number of (shared) recorders used by open loop
// workers, whose number varies with the load.
const openRecorders = 16

// RunOpen runs an open-loop load: request k (k = 0, 1, ...) is due at
// start + k/rate, where start is the beginning of the warm-up, regardless of
// how many earlier requests are still outstanding. A dispatcher goroutine
// hands each request, at its due time, to an idle worker of a pool that grows
// as needed; workers share one transport whose connection pool grows with the
// number of outstanding requests. Latency is measured from the intended send
// time to the end of the response, so delays in the server, the network and
// the load generator itself are all accounted for (no coordinated omission).
//
// At most [WithMaxInFlight] requests are outstanding; a due request that would
// exceed the cap is not sent and counts as Dropped (attributed to the window
// by its due time). Window, cancellation and error semantics are those of
// [RunClosed]; [WithConnections] is ignored.
func RunOpen(ctx context.Context, mix []Request, rate float64, opts ...Option) (*Result, error) {
	cfg, err := newConfig(opts)
	if !(rate > 0) || math.IsInf(rate, 1) {
		cfg.fail("RunOpen: rate must be finite and > 0 requests/s, got %v", rate)
		err = cfg.err()
	}
	if err != nil {
		return nil, err
	}
	if err := Validate(mix); err != nil {
		return nil, err
	}
	e := newEngine(cfg, normalize(mix))
	res := &Result{Mode: ModeOpen, Rate: rate}
	o := &openLoop{
		engine:   e,
		interval: 1e9 / rate,
		tr:       newTransport(0, cfg.maxInFlight, cfg.timeout),
		jobs:     make(chan job),
	}
	return e.run(ctx, res, o.launch)
}

type job struct {
	typ int
	due int64 // intended send time, ns from base
}

type openLoop struct {
	*engine
	interval float64 // ns between sends
	tr       *http.Transport
	jobs     chan job     // to idle workers
	inflight atomic.Int64 // outstanding requests
	workers  sync.WaitGroup
	recs     []*recorder
}

func (o *openLoop) launch(runCtx context.Context) func() []*recorder {
	o.recs = make([]*recorder, openRecorders)
	for i := range o.recs {
		o.recs[i] = newRecorder(o.win, len(o.mix), true, true, o.cfg.sampleValue != nil)
	}
	drops := newRecorder(o.win, len(o.mix), false, false, false)
	var dispatcher sync.WaitGroup
	dispatcher.Go(func() { o.dispatch(runCtx, drops) })
	return func() []*recorder {
		dispatcher.Wait() // no more workers are started after this
		o.workers.Wait()
		o.tr.CloseIdleConnections()
		return append(o.recs, drops)
	}
}

func (o *openLoop) dispatch(runCtx context.Context, drops *recorder) {
	done := runCtx.Done()
	rng := newRNG(o.cfg.seed, 0)
	maxIn := int64(o.cfg.maxInFlight)
	nworkers := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	pt := hrtimer.New()
	if pt != nil {
		defer pt.Close()
	}
	for k := 0; ; k++ {
		due := int64(float64(k) * o.interval)
		if !o.waitUntil(due, timer, pt, done) {
			return
		}
		j := job{typ: o.picker.pick(rng), due: due}
		if o.inflight.Add(1) > maxIn {
			o.inflight.Add(-1)
			drops.observe(event{el: due, typ: int32(j.typ), out: outDropped})
			continue
		}
		select {
		case o.jobs <- j: // an idle worker took it
			continue
		default:
		}
		if nworkers < o.cfg.maxInFlight {
			rec := o.recs[nworkers%len(o.recs)]
			nworkers++
			o.workers.Go(func() { o.worker(runCtx, rec, j) })
			continue
		}
		// As many workers as the cap allows and fewer requests in flight:
		// a worker is about to become idle.
		select {
		case o.jobs <- j:
		case <-done:
			return
		}
	}
}

// waitUntil waits until offset due and reports true, or false as soon as done
// is closed. Short waits use pt (if not nil), so that sends are not delayed
// by the runtime's timer granularity.
func (o *openLoop) waitUntil(due int64, timer *time.Timer, pt *hrtimer.Timer, done <-chan struct{}) bool {
	for {
		select {
		case <-done:
			return false
		default:
		}
		wait := time.Duration(due - o.since())
		if wait <= 0 {
			return true
		}
		if pt != nil && wait < hrtimer.Max && pt.Sleep(wait) {
			continue
		}
		if pt != nil && wait >= hrtimer.Max {
			wait -= hrtimer.Max / 2
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-done:
			return false
		}
	}
}

func (o *openLoop) worker(runCtx context.Context, rec *recorder, j job) {
	s := newSender(runCtx, o.tr, o.mix, o.cfg.timeout, o.cfg.sampleValue)
	defer s.close()
	done := runCtx.Done()
	for {
		start := o.since()
		code, val, err := s.do(j.typ)
		end := o.since()
		o.inflight.Add(-1)
		if !o.record(runCtx, rec, j.typ, code, val, err, end, end-j.due, start-j.due) {
			return
		}
		select {
		case j = <-o.jobs:
		case <-done:
			return
		}
	}
}
