package inservice

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Environment variables set by the controller for the service it starts.
// EnvSocket keeps its name from when this package was called agent:
// services in other languages that speak the protocol read it.
const (
	EnvSocket  = "SLOWPOKE_AGENT_SOCKET"
	EnvService = "SLOWPOKE_SERVICE"
)

// SocketDirKind starts the name of the directory that holds a controller's
// instrumentation socket (EnvSocket) and bell: the directory is named after
// the controller's process id (see package stale), so that the service's
// environment says which controller started it. Its value is from when
// this package was called agent: package stale finds such directories
// that older controllers left.
const SocketDirKind = "slowpoke-agent"

// Limits that keep reports bounded whatever the service does.
const (
	MaxKeys       = 256     // distinct endpoints / downstream peers tracked; the rest fold into OtherKey
	MaxLine       = 1 << 20 // longest accepted line on the socket
	OtherKey      = "(other)"
	ReportEvery   = 200 * time.Millisecond
	maxKeyLength  = 200
	dialTimeout   = 2 * time.Second
	writeDeadline = 2 * time.Second
)

// Message is one line on the instrumentation socket, in either direction.
//
// Link to controller: "hello" (once), "tick" (the target crossed a batch
// boundary; Total is cumulative), "report" (cumulative counters; ID echoes a
// "flush" request, 0 for periodic reports).
// Controller to service: "config" (Batch: start a round every Batch calls, 0
// for none: by writing a byte to the FIFO at Bell where it names one, by a
// tick otherwise), "flush" (send a report now, echoing ID), "pool" (Limit: admit at
// most this many calls at a time, queueing the rest first in first out, 0
// for no limit; ThresholdNS: count a call as good when it ends within this
// long of its admission, 0 for none), "latency" (Store: the delay store
// file of a latency what-if, empty to end it; Target: this service is the
// one virtually sped up, by DelayNS per call).
//
// Reports carry, besides the call counts, the figures a pool-size advisor
// samples, all cumulative: Done (calls ended), Good (ended within the
// threshold), BusyNS (the number of calls in flight integrated over time
// up to the report, so that its rate is the mean number in flight), WaitNS
// (the sum of admitted calls' time in the queue), and the current Limit
// and Queued; AtUnixNS is when they were read, to time samples by.
type Message struct {
	Type       string            `json:"t"`
	ID         uint64            `json:"id,omitempty"`
	PID        int               `json:"pid,omitempty"`
	Service    string            `json:"service,omitempty"`
	Total      uint64            `json:"total,omitempty"`
	InFlight   int64             `json:"inflight,omitempty"`
	Batch      uint64            `json:"batch,omitempty"`
	Endpoints  map[string]uint64 `json:"endpoints,omitempty"`
	Downstream map[string]uint64 `json:"downstream,omitempty"`

	Limit       int64  `json:"limit,omitempty"`
	ThresholdNS int64  `json:"thr_ns,omitempty"`
	Done        uint64 `json:"done,omitempty"`
	Good        uint64 `json:"good,omitempty"`
	BusyNS      int64  `json:"busy_ns,omitempty"`
	WaitNS      int64  `json:"wait_ns,omitempty"`
	Queued      int64  `json:"queued,omitempty"`
	AtUnixNS    int64  `json:"at_ns,omitempty"` // when a report's counters were read

	Bell    string `json:"bell,omitempty"`
	Store   string `json:"store,omitempty"`
	Target  bool   `json:"target,omitempty"`
	DelayNS int64  `json:"delay_ns,omitempty"`
}

// Link counts calls and talks to the controller. Its methods are safe for
// concurrent use and are no-ops on a nil *Link.
type Link struct {
	service    string
	total      atomic.Uint64
	batch      atomic.Uint64
	bell       atomic.Pointer[bell] // nil: rounds go as ticks
	endpoints  counterSet
	downstream counterSet
	pool       limiter
	counters   poolCounters
	latency    atomic.Pointer[latencyMode] // nil: no latency what-if
	latMu      sync.Mutex
	stores     map[string]*Store // delay stores mapped, by path

	tick  chan struct{}
	flush chan uint64
	conn  net.Conn
	done  chan struct{}
	once  sync.Once
}

var (
	defaultOnce sync.Once
	defaultLink *Link
)

// Default returns the process-wide link, connecting on first use, or nil
// when the process was not started by a slowpoke controller or the
// controller cannot be reached (the service then runs uninstrumented).
func Default() *Link {
	defaultOnce.Do(func() {
		path := os.Getenv(EnvSocket)
		if path == "" {
			return
		}
		a, err := Dial(path, os.Getenv(EnvService))
		if err != nil {
			fmt.Fprintf(os.Stderr, "slowpoke: instrumentation disabled: %v\n", err)
			return
		}
		defaultLink = a
	})
	return defaultLink
}

// Dial connects a link to the controller socket at path.
func Dial(path, service string) (*Link, error) {
	c, err := net.DialTimeout("unix", path, dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("connect to controller socket %s: %w", path, err)
	}
	a := &Link{
		counters:   poolCounters{base: time.Now()},
		service:    service,
		tick:       make(chan struct{}, 1),
		flush:      make(chan uint64, 16),
		conn:       c,
		done:       make(chan struct{}),
		endpoints:  newCounterSet(),
		downstream: newCounterSet(),
		stores:     map[string]*Store{},
	}
	if err := a.write(Message{Type: "hello", PID: os.Getpid(), Service: service}); err != nil {
		c.Close()
		return nil, err
	}
	go a.readLoop()
	go a.writeLoop()
	return a, nil
}

// Close disconnects from the controller. Counting continues locally.
func (a *Link) Close() error {
	if a == nil {
		return nil
	}
	var err error
	a.once.Do(func() {
		close(a.done)
		err = a.conn.Close()
	})
	return err
}

// ClientCall records an outgoing call to peer (host:port as dialled).
func (a *Link) ClientCall(peer string) {
	if a == nil {
		return
	}
	a.downstream.add(peer)
}

// Snapshot returns the current cumulative counters as a report message.
func (a *Link) Snapshot() Message {
	inflight, busy := a.counters.read()
	return Message{
		Type:       "report",
		Service:    a.service,
		Total:      a.total.Load(),
		InFlight:   inflight,
		Endpoints:  a.endpoints.snapshot(),
		Downstream: a.downstream.snapshot(),

		Limit:       a.pool.limit.Load(),
		ThresholdNS: a.counters.threshold.Load(),
		Done:        a.counters.done.Load(),
		Good:        a.counters.good.Load(),
		BusyNS:      busy,
		AtUnixNS:    time.Now().UnixNano(),
		WaitNS:      a.pool.waitNS.Load(),
		Queued:      a.pool.queued.Load(),
	}
}

func (a *Link) write(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	a.conn.SetWriteDeadline(time.Now().Add(writeDeadline))
	_, err = a.conn.Write(b)
	return err
}

// writeLoop owns all writes after the hello: ticks first (they gate rounds),
// then requested and periodic reports.
func (a *Link) writeLoop() {
	t := time.NewTicker(ReportEvery)
	defer t.Stop()
	for {
		var err error
		select {
		case <-a.done:
			return
		case <-a.tick:
			err = a.write(Message{Type: "tick", Total: a.total.Load()})
		case id := <-a.flush:
			m := a.Snapshot()
			m.ID = id
			err = a.write(m)
		case <-t.C:
			err = a.write(a.Snapshot())
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "slowpoke: lost controller connection: %v\n", err)
			a.batch.Store(0)
			a.Close()
			return
		}
	}
}

func (a *Link) readLoop() {
	sc := bufio.NewScanner(a.conn)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // malformed line: ignore, the controller is trusted but must not crash us
		}
		switch m.Type {
		case "config":
			// The bell is in place before the first round, and silent
			// before it closes.
			if m.Batch > 0 {
				a.setBell(m.Bell)
				a.batch.Store(m.Batch)
			} else {
				a.batch.Store(0)
				a.setBell("")
			}
		case "pool":
			a.SetPool(m.Limit, time.Duration(m.ThresholdNS))
		case "latency":
			if err := a.SetLatency(m.Store, m.Target, time.Duration(m.DelayNS)); err != nil {
				fmt.Fprintf(os.Stderr, "slowpoke: latency what-if disabled: %v\n", err)
			}
		case "flush":
			select {
			case a.flush <- m.ID:
			case <-a.done:
				return
			}
		}
	}
	// Controller gone: stop ticking, keep serving, and admit everyone: a
	// limit nobody can change any more must not outlive the run.
	a.batch.Store(0)
	a.setBell("")
	a.pool.setLimit(0)
	a.latency.Store(nil)
	a.Close()
}

// counterSet is a bounded map of named counters, lock-free for known names.
type counterSet struct {
	m     *sync.Map // string -> *atomic.Uint64
	n     *atomic.Int32
	other *atomic.Uint64
}

func newCounterSet() counterSet {
	return counterSet{m: new(sync.Map), n: new(atomic.Int32), other: new(atomic.Uint64)}
}

func (s counterSet) add(key string) {
	if v, ok := s.m.Load(key); ok {
		v.(*atomic.Uint64).Add(1)
		return
	}
	if len(key) > maxKeyLength || s.n.Load() >= MaxKeys {
		s.other.Add(1)
		return
	}
	v, loaded := s.m.LoadOrStore(key, new(atomic.Uint64))
	if !loaded {
		s.n.Add(1)
	}
	v.(*atomic.Uint64).Add(1)
}

func (s counterSet) snapshot() map[string]uint64 {
	out := make(map[string]uint64)
	s.m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	if o := s.other.Load(); o > 0 {
		out[OtherKey] = o
	}
	return out
}
