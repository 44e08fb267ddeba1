package load

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// engine holds what closed and open loop runs have in common: the
// configuration, the normalised mix, the time base and window, and the
// progress counters.
type engine struct {
	cfg    *config
	mix    []Request
	picker picker
	base   time.Time
	paused time.Duration // WithPausedTime's reading at base
	win    *window

	track           bool // responses counted (progress or WithWindowFromWarmup)
	progOK, progErr atomic.Uint64
}

func newEngine(cfg *config, mix []Request) *engine {
	return &engine{
		cfg:    cfg,
		mix:    mix,
		picker: newPicker(mix),
		win:    newWindow(int64(cfg.warmup), int64(cfg.duration)),
		track:  cfg.progFn != nil || cfg.sizeWindow != nil,
	}
}

// since returns the offset of now from the run's base time, in ns, on the
// run's clock (WithPausedTime).
func (e *engine) since() int64 {
	t := time.Since(e.base)
	if e.cfg.paused != nil {
		t -= e.cfg.paused() - e.paused
	}
	return int64(t)
}

// sleepTo waits until the run's clock reads at least until (ns from base);
// false if ctx ends first.
func (e *engine) sleepTo(ctx context.Context, until int64) bool {
	for {
		left := time.Duration(until - e.since())
		if left <= 0 {
			return ctx.Err() == nil
		}
		if !sleepUntil(ctx, time.Now().Add(left)) {
			return false
		}
	}
}

// record classifies the result of one request and hands it to rec. It returns
// false if the request failed because the run is being stopped; such
// requests are not counted at all.
func (e *engine) record(runCtx context.Context, rec *recorder, typ int, code int, val int64, err error, done, lat, lag int64) bool {
	ev := event{el: done, lat: lat, lag: lag, typ: int32(typ), val: val}
	switch {
	case err != nil:
		if runCtx.Err() != nil {
			return false
		}
		ev.out = outError
	case code >= 200 && code <= 299:
		ev.out = outOK
	default:
		ev.out = outNon2xx
	}
	if e.track {
		if ev.out == outOK {
			e.progOK.Add(1)
		} else {
			e.progErr.Add(1)
		}
	}
	rec.observe(ev)
	return true
}

// launchFunc starts the load generators; they must stop when runCtx is
// cancelled. The returned function waits for them to exit, releases their
// resources and returns all recorders.
type launchFunc func(runCtx context.Context) (stop func() []*recorder)

// run drives the timeline: warm-up, onStart hook, measurement window, onEnd
// hook, shutdown. It fills res and returns it, also when ctx is cancelled.
func (e *engine) run(ctx context.Context, res *Result, launch launchFunc) (*Result, error) {
	if err := ctx.Err(); err != nil {
		buildResult(res, e.mix, nil, 0)
		return res, fmt.Errorf("load: run not started: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	e.base = time.Now()
	if e.cfg.paused != nil {
		e.paused = e.cfg.paused()
	}
	stop := launch(runCtx)

	progDone := make(chan struct{})
	var progWG sync.WaitGroup
	if e.cfg.progFn != nil {
		progWG.Go(func() { e.reportProgress(progDone) })
	}

	var winLen time.Duration
	duration := e.cfg.duration
	interrupted := false
	if e.cfg.sizeWindow != nil {
		interrupted = !e.sleepTo(ctx, int64(e.cfg.warmup/2))
		from, n0 := e.since(), e.responses()
		interrupted = interrupted || !e.sleepTo(ctx, int64(e.cfg.warmup))
		if !interrupted {
			rate := 0.0
			if el := e.since() - from; el > 0 {
				rate = float64(e.responses()-n0) / time.Duration(el).Seconds()
			}
			if d := e.cfg.sizeWindow(rate); d > 0 {
				duration = d
			}
		}
	} else {
		interrupted = !e.sleepTo(ctx, int64(e.cfg.warmup))
	}
	if !interrupted {
		if e.cfg.onStart != nil {
			e.cfg.onStart()
		}
		ws := time.Duration(e.since())
		e.win.open(int64(ws))
		interrupted = !e.sleepTo(ctx, int64(ws+duration))
		we := time.Duration(e.since())
		if interrupted {
			we = min(we, ws+duration)
		}
		e.win.close(int64(we))
		if e.cfg.onEnd != nil {
			e.cfg.onEnd()
		}
		winLen = we - ws
	}
	close(progDone)
	progWG.Wait()

	cancel()
	recs := stop()
	for _, r := range recs {
		r.finish()
	}
	buildResult(res, e.mix, recs, winLen)
	if interrupted {
		return res, fmt.Errorf("load: run interrupted: %w", ctx.Err())
	}
	return res, nil
}

// responses is how many 2xx responses have completed so far, where they
// are counted (track).
func (e *engine) responses() uint64 { return e.progOK.Load() }

func (e *engine) reportProgress(done <-chan struct{}) {
	t := time.NewTicker(e.cfg.progEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		phase := PhaseWarmup
		if e.win.start.Load() >= 0 {
			phase = PhaseMeasure
		}
		e.cfg.progFn(Progress{
			Elapsed:   time.Duration(e.since()),
			Phase:     phase,
			Completed: e.progOK.Load(),
			Errors:    e.progErr.Load(),
		})
	}
}

// sleepUntil waits until t and reports true, or reports false as soon as ctx
// is done.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
