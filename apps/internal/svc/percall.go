package svc

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/cpuwork"
)

// PerCall is what a service does per incoming call before its handler: wait
// Wait without CPU, then burn Work plus Contention for every other call in
// flight as thread CPU time. The zero value does nothing.
type PerCall struct {
	Work, Wait, Contention time.Duration
	inflight               atomic.Int64
}

// do runs the per-call work and returns the function that ends the call;
// it returns ctx's error if ctx ends during the wait.
func (p *PerCall) do(ctx context.Context) (done func(), err error) {
	if p == nil {
		return func() {}, nil
	}
	p.inflight.Add(1)
	done = func() { p.inflight.Add(-1) }
	if p.Wait > 0 {
		t := time.NewTimer(p.Wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			done()
			return nil, ctx.Err()
		}
	}
	work := p.Work
	if p.Contention > 0 {
		work += time.Duration(p.inflight.Load()-1) * p.Contention
	}
	cpuwork.Spin(work)
	return done, nil
}
