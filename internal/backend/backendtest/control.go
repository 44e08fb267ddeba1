package backendtest

import (
	"fmt"
	"sync"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Control is a fake controller: every call is recorded, answered from
// Stats (a zero snapshot naming Service when nil) or failed by Fail.
// It is safe for concurrent use; set its fields before sharing it.
type Control struct {
	// Service names the controlled service in the default snapshot and in
	// errors.
	Service string
	// Address is what Addr returns.
	Address string
	// StatsFunc, when set, answers Stats.
	StatsFunc func() (*wire.Stats, error)
	// Fail, when set, is asked before every call other than Addr (by its
	// message type) and fails it with what it returns.
	Fail func(wire.Type) error

	mu         sync.Mutex
	calls      []wire.Type
	configures []wire.Configure
	pools      []wire.Pool
	latencies  []wire.Latency
	closed     int
}

var _ backend.Control = (*Control)(nil)

// Remote returns the error a controller's refusal gives the client: one
// that wraps wire.ErrRemote.
func Remote(msg string) error { return fmt.Errorf("%w: %s", wire.ErrRemote, msg) }

func (c *Control) record(t wire.Type) error {
	c.mu.Lock()
	c.calls = append(c.calls, t)
	c.mu.Unlock()
	if c.Fail != nil {
		return c.Fail(t)
	}
	return nil
}

// Addr returns Address.
func (c *Control) Addr() string { return c.Address }

// Stats answers from StatsFunc, or with a snapshot that names Service.
func (c *Control) Stats() (*wire.Stats, error) {
	if err := c.record(wire.TStats); err != nil {
		return nil, err
	}
	if c.StatsFunc != nil {
		return c.StatsFunc()
	}
	return &wire.Stats{Service: c.Service}, nil
}

// Configure records cf.
func (c *Control) Configure(cf wire.Configure) error {
	return told(c, wire.TConfigure, &c.configures, cf)
}

// SetPool records p.
func (c *Control) SetPool(p wire.Pool) error { return told(c, wire.TPool, &c.pools, p) }

// SetLatency records l.
func (c *Control) SetLatency(l wire.Latency) error { return told(c, wire.TLatency, &c.latencies, l) }

// told records a call of type t and, unless Fail fails it, what it was
// told.
func told[T any](c *Control, t wire.Type, list *[]T, v T) error {
	if err := c.record(t); err != nil {
		return err
	}
	c.mu.Lock()
	*list = append(*list, v)
	c.mu.Unlock()
	return nil
}

// Renew records the call.
func (c *Control) Renew() error { return c.record(wire.TRenew) }

// Start records the call.
func (c *Control) Start() error { return c.record(wire.TStart) }

// Stop records the call.
func (c *Control) Stop() error { return c.record(wire.TStop) }

// Reset records the call.
func (c *Control) Reset() error { return c.record(wire.TReset) }

// Close counts the call; it never fails.
func (c *Control) Close() error {
	c.mu.Lock()
	c.closed++
	c.mu.Unlock()
	return nil
}

// Calls lists the calls made so far, by message type, Close and Addr left
// out.
func (c *Control) Calls() []wire.Type { return snapshot(c, &c.calls) }

// Configures lists what Configure was given, in order.
func (c *Control) Configures() []wire.Configure { return snapshot(c, &c.configures) }

// Pools lists what SetPool was given, in order.
func (c *Control) Pools() []wire.Pool { return snapshot(c, &c.pools) }

// Latencies lists what SetLatency was given, in order.
func (c *Control) Latencies() []wire.Latency { return snapshot(c, &c.latencies) }

// snapshot copies *list under the lock.
func snapshot[T any](c *Control, list *[]T) []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), *list...)
}

// Closed is how many times Close was called.
func (c *Control) Closed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
