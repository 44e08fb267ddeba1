package controller

import (
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// renew notes that the orchestrator spoke (see Config.Lease).
func (c *Controller) renew() {
	if c.cfg.Lease <= 0 {
		return
	}
	c.mu.Lock()
	c.renewed = time.Now()
	c.mu.Unlock()
}

// watchLease ends what the orchestrator set up once it has been silent for
// the lease, until the child exits. It wakes when the lease would lapse
// if nothing renewed it (a lease after the last message, not up to a
// quarter lease later, as a ticker would), and a quarter lease after
// each check that found nothing held.
func (c *Controller) watchLease() {
	t := time.NewTimer(c.cfg.Lease)
	defer t.Stop()
	for {
		select {
		case <-c.exited:
			return
		case <-t.C:
		}
		c.mu.Lock()
		silent := time.Since(c.renewed)
		held := c.active || c.latency.Store != "" || c.pool != (wire.Pool{})
		c.mu.Unlock()
		if silent < c.cfg.Lease {
			t.Reset(c.cfg.Lease - silent)
			continue
		}
		t.Reset(c.cfg.Lease / 4)
		if !held {
			continue
		}
		c.log.Warn("the orchestrator's lease lapsed: ending the slowdown, the latency what-if and the pool, and resuming the service", "silent", silent.Round(time.Millisecond), "lease", c.cfg.Lease)
		c.stopSlowdown()
		c.SetLatency(wire.Latency{})
		c.SetPool(wire.Pool{})
	}
}
