package load

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Defaults used when the corresponding option is not given.
const (
	DefaultConnections = 64
	DefaultWarmup      = time.Second
	DefaultDuration    = 5 * time.Second
	DefaultTimeout     = 10 * time.Second
	DefaultSeed        = 1
	DefaultMaxInFlight = 10000
)

// Option configures [RunClosed] and [RunOpen]. Invalid option values are not
// silently corrected: the run functions return an error naming the option.
type Option func(*config)

type config struct {
	conns       int
	warmup      time.Duration
	duration    time.Duration
	timeout     time.Duration
	seed        int64
	onStart     func()
	onEnd       func()
	progEvery   time.Duration
	progFn      func(Progress)
	maxInFlight int
	sampleValue func(http.Header) int64 // non-nil: keep Result.Samples
	paused      func() time.Duration    // non-nil: WithPausedTime
	sizeWindow  func(rate float64) time.Duration
	errs        []error
}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		conns:       DefaultConnections,
		warmup:      DefaultWarmup,
		duration:    DefaultDuration,
		timeout:     DefaultTimeout,
		seed:        DefaultSeed,
		maxInFlight: DefaultMaxInFlight,
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c, c.err()
}

func (c *config) err() error { return errors.Join(c.errs...) }

func (c *config) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("load: "+format, args...))
}

// WithConnections sets the closed-loop concurrency: exactly n workers, each
// with its own single keep-alive connection per target host (default 64).
// n must be > 0. Ignored by [RunOpen].
func WithConnections(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.fail("WithConnections(%d): number of connections must be > 0", n)
			return
		}
		c.conns = n
	}
}

// WithWarmup sets the warm-up length (default 1s). Responses completing
// during warm-up are not counted. d must be >= 0; 0 disables warm-up.
func WithWarmup(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.fail("WithWarmup(%v): warm-up must be >= 0", d)
			return
		}
		c.warmup = d
	}
}

// WithDuration sets the planned length of the measurement window (default
// 5s). The actual window, reported in [Result.Window], is longer by the
// wake-up delay of the run's control goroutine. d must be > 0.
func WithDuration(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("WithDuration(%v): measurement window must be > 0", d)
			return
		}
		c.duration = d
	}
}

// WithTimeout sets the per-request timeout (default 10s), covering connection
// set-up, sending the request and reading the whole response. A request that
// times out counts as an error. d must be > 0.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("WithTimeout(%v): request timeout must be > 0", d)
			return
		}
		c.timeout = d
	}
}

// WithSeed seeds the request-mix choice (default 1). For a given seed, the
// sequence of request types each closed-loop worker sends (and, in open loop,
// the sequence of request types dispatched) is deterministic.
func WithSeed(seed int64) Option {
	return func(c *config) { c.seed = seed }
}

// WithWindowHooks registers functions called synchronously on the run's
// control goroutine: onStart right before the measurement window opens (the
// window opens when onStart returns) and onEnd right after the window closes
// (the window closes immediately before onEnd is called, and outstanding
// requests are cancelled after it returns). onEnd is called if and only if
// onStart was called, i.e. not when the run is cancelled during warm-up.
// Either may be nil. Hooks should be quick: load keeps flowing while they run.
func WithWindowHooks(onStart, onEnd func()) Option {
	return func(c *config) {
		c.onStart, c.onEnd = onStart, onEnd
	}
}

// WithWindowFromWarmup sizes the measurement window when the warm-up
// ends, from the throughput in its second half: size is called once,
// on the run's control goroutine, with the 2xx responses per second
// completed then (0 where none did or the warm-up is zero), and its
// result replaces [WithDuration]'s if it is above zero. It suits a window that must hold some number of request
// cycles (connections / throughput) of a system whose throughput is not
// known in advance. size must not be nil.
func WithWindowFromWarmup(size func(rate float64) time.Duration) Option {
	return func(c *config) {
		if size == nil {
			c.fail("WithWindowFromWarmup: size must not be nil")
			return
		}
		c.sizeWindow = size
	}
}

// WithProgress calls fn every interval during warm-up and the measurement
// window, from a dedicated goroutine; no call happens after the run function
// returns. fn must not block for long. A nil fn disables progress reporting;
// otherwise every must be > 0.
func WithProgress(every time.Duration, fn func(Progress)) Option {
	return func(c *config) {
		if fn == nil {
			c.progFn, c.progEvery = nil, 0
			return
		}
		if every <= 0 {
			c.fail("WithProgress(%v): interval must be > 0", every)
			return
		}
		c.progEvery, c.progFn = every, fn
	}
}

// WithMaxInFlight caps the number of outstanding requests in open loop mode
// (default 10000). A scheduled send that would exceed the cap is skipped and
// counted as Dropped. n must be > 0. Ignored by [RunClosed].
func WithMaxInFlight(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.fail("WithMaxInFlight(%d): cap must be > 0", n)
			return
		}
		c.maxInFlight = n
	}
}

// WithSamples keeps every successful (2xx) response of the measurement
// window in [Result.Samples]: its request type, its latency, and value
// applied to its header (for instance a figure the server reports about
// the request). value must not be nil; it runs on the sending goroutine
// and must be quick. Memory grows with the number of responses (24 bytes
// each).
func WithSamples(value func(http.Header) int64) Option {
	return func(c *config) {
		if value == nil {
			c.fail("WithSamples: value must not be nil")
			return
		}
		c.sampleValue = value
	}
}

// WithPausedTime runs the load on a clock that leaves out the time the
// load generator was kept from running: paused returns that time so far
// (it only grows), and the run's clock is real time less what it added
// since the run began. The send schedule, every latency, the warm-up and
// the measurement window are on that clock; throughput is per second of
// it. A latency what-if whose load generator is stopped together with the
// services (virtual speedup by holding their cores) sees only the time they
// ran. paused runs on the sending goroutines, often: it must be quick (an
// atomic load).
func WithPausedTime(paused func() time.Duration) Option {
	return func(c *config) {
		if paused == nil {
			c.fail("WithPausedTime: paused must not be nil")
			return
		}
		c.paused = paused
	}
}

// Progress is a snapshot passed to the [WithProgress] callback.
type Progress struct {
	Elapsed   time.Duration // since the run started (warm-up included)
	Phase     string        // "warmup" or "measure"
	Completed uint64        // 2xx responses since the run started
	Errors    uint64        // non-2xx responses and transport errors since the run started
}

// Phase names used in [Progress].
const (
	PhaseWarmup  = "warmup"
	PhaseMeasure = "measure"
)
