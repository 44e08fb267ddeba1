package load

import (
	"context"
	"net/http"
	"sync"
)

// maxClosedRecorders bounds the number of recorders (and thus histograms) in
// closed loop mode. Up to this many connections every worker owns its
// recorder and records without locking; beyond it, workers share recorders.
const maxClosedRecorders = 64

// RunClosed runs a closed-loop load: exactly N connections (see
// [WithConnections]); each of the N workers owns one connection and sends its
// next request when the previous response has been read to the end. The
// request type of each send is drawn by weight from mix using the worker's
// own seeded generator.
//
// RunClosed returns when the measurement window has closed and all workers
// have stopped; requests outstanding at that moment are cancelled and not
// counted. If ctx is cancelled first, it returns the partial result together
// with an error wrapping ctx.Err(). Invalid options or an invalid mix yield a
// nil result and an error.
func RunClosed(ctx context.Context, mix []Request, opts ...Option) (*Result, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := Validate(mix); err != nil {
		return nil, err
	}
	e := newEngine(cfg, normalize(mix))
	res := &Result{Mode: ModeClosed, Connections: cfg.conns}
	return e.run(ctx, res, e.launchClosed)
}

func (e *engine) launchClosed(runCtx context.Context) func() []*recorder {
	n := e.cfg.conns
	nrec := min(n, maxClosedRecorders)
	recs := make([]*recorder, nrec)
	for i := range recs {
		recs[i] = newRecorder(e.win, len(e.mix), n > nrec, false, e.cfg.sampleValue != nil)
	}
	transports := make([]*http.Transport, n)
	var wg sync.WaitGroup
	for i := range n {
		tr := newTransport(1, 1, e.cfg.timeout)
		transports[i] = tr
		rec := recs[i%nrec]
		wg.Go(func() { e.closedWorker(runCtx, uint64(i), tr, rec) })
	}
	return func() []*recorder {
		wg.Wait()
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
		return recs
	}
}

func (e *engine) closedWorker(runCtx context.Context, id uint64, tr http.RoundTripper, rec *recorder) {
	s := newSender(runCtx, tr, e.mix, e.cfg.timeout, e.cfg.sampleValue)
	defer s.close()
	rng := newRNG(e.cfg.seed, id)
	for runCtx.Err() == nil {
		typ := e.picker.pick(rng)
		t0 := e.since()
		code, val, err := s.do(typ)
		done := e.since()
		if !e.record(runCtx, rec, typ, code, val, err, done, done-t0, 0) {
			return
		}
	}
}
