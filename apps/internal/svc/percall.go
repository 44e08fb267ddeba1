package svc

import (
	"context"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/cpuwork"
)

// PerCall is what a service does per incoming call before its handler: wait
// Wait without CPU, then burn Work plus Contention for every other call in
// flight as thread CPU time (cpuwork.Contended). The zero value does
// nothing.
type PerCall struct {
	Work, Wait, Contention time.Duration
	calls                  cpuwork.Contended
}

// do runs the per-call work; it returns ctx's error if ctx ends during the
// wait. A call do admitted is ended with done.
func (p *PerCall) do(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.calls.Do(ctx, p.Wait, p.Work, p.Contention)
}

// done ends a call do admitted.
func (p *PerCall) done() {
	if p != nil {
		p.calls.Done()
	}
}
