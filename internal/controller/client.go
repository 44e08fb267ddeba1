package controller

import (
	"errors"
	"sync"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Client talks to one controller's control port. It keeps one connection,
// redials once on failure, and is safe for concurrent use.
type Client struct {
	addr    string
	secret  []byte
	timeout time.Duration

	mu   sync.Mutex
	conn *wire.Conn
}

// NewClient returns a client for the controller at addr.
func NewClient(addr string, secret []byte) *Client {
	return &Client{addr: addr, secret: secret, timeout: 5 * time.Second}
}

func (c *Client) call(t wire.Type, req, resp any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if c.conn == nil {
			if c.conn, err = wire.Dial(c.addr, c.secret, c.timeout); err != nil {
				c.conn = nil
				continue
			}
			c.conn.Timeout = c.timeout
		}
		if err = c.conn.Call(t, req, resp); err == nil {
			return nil
		}
		if isRemote(err) {
			return err
		}
		c.conn.Close()
		c.conn = nil
	}
	return err
}

// Addr is the controller's control address (host:port): where its
// neighbours send it rounds.
func (c *Client) Addr() string { return c.addr }

func isRemote(err error) bool { return errors.Is(err, wire.ErrRemote) }

// Stats fetches a fresh snapshot.
func (c *Client) Stats() (*wire.Stats, error) {
	var st wire.Stats
	if err := c.call(wire.TStats, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Configure sets the parameters of the next slowdown run.
func (c *Client) Configure(cf wire.Configure) error { return c.call(wire.TConfigure, cf, nil) }

// SetPool sets the service's admission limit and good-call threshold.
func (c *Client) SetPool(p wire.Pool) error { return c.call(wire.TPool, p, nil) }

// SetLatency starts (or, with an empty store, ends) a latency what-if in
// the service's instrumentation.
func (c *Client) SetLatency(l wire.Latency) error { return c.call(wire.TLatency, l, nil) }

// Renew renews the orchestrator's lease (Config.Lease).
func (c *Client) Renew() error { return c.call(wire.TRenew, nil, nil) }

// Start starts the slowdown run.
func (c *Client) Start() error { return c.call(wire.TStart, nil, nil) }

// Stop stops the slowdown run and resumes the service.
func (c *Client) Stop() error { return c.call(wire.TStop, nil, nil) }

// Reset stops any run and zeroes round and pause counters.
func (c *Client) Reset() error { return c.call(wire.TReset, nil, nil) }

// Close closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		err := c.conn.Close()
		c.conn = nil
		return err
	}
	return nil
}
