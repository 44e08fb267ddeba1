package controller

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/inservice"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// ---- control channel ----

// Bounds on control connections that have not authenticated yet (sent a
// first frame with a valid MAC): how many at once (each holds a goroutine
// and a buffer; the orchestrator and the other controllers need a handful),
// how long one may take to send that frame (a peer that knows the secret
// sends it at once), and how large it may be (a configure with the most
// cgroups is about 30 KiB).
const (
	maxUnauthenticated = 16
	handshakeTimeout   = 2 * time.Second
	maxFirstFrame      = 64 << 10
)

func (c *Controller) acceptControl() {
	slots := make(chan struct{}, maxUnauthenticated)
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		select {
		case slots <- struct{}{}:
			go c.serveControl(conn, slots)
		default:
			conn.Close()
			c.mu.Lock()
			c.c.refused++
			first := c.c.refused == 1
			c.mu.Unlock()
			if first {
				c.log.Warn("too many unauthenticated control connections; refusing more (counted)", "limit", maxUnauthenticated, "peer", conn.RemoteAddr())
			}
		}
	}
}

// serveControl serves one control connection. It holds one of the
// unauthenticated slots until the peer's first frame has authenticated.
func (c *Controller) serveControl(conn net.Conn, slots chan struct{}) {
	defer conn.Close()
	authenticated := false
	defer func() {
		if !authenticated {
			<-slots
		}
	}()
	w, err := wire.Server(conn, c.cfg.Secret)
	if err != nil {
		return
	}
	for {
		var t wire.Type
		var payload []byte
		var err error
		if authenticated {
			t, payload, err = w.Recv(idleTimeout)
		} else if t, payload, err = w.RecvLimit(handshakeTimeout, maxFirstFrame); err == nil {
			authenticated = true
			<-slots
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			c.mu.Lock()
			c.c.handshakeTimeouts++
			c.mu.Unlock()
			return
		}
		if err != nil {
			if errors.Is(err, wire.ErrAuth) || errors.Is(err, wire.ErrBadMagic) || errors.Is(err, wire.ErrVersion) ||
				errors.Is(err, wire.ErrType) || errors.Is(err, wire.ErrTooLarge) {
				c.mu.Lock()
				c.c.authFailures++
				n := c.c.authFailures
				c.mu.Unlock()
				if n&(n-1) == 0 { // the 1st, 2nd, 4th, 8th...: a flood does not flood the log
					c.log.Warn("rejected control message", "peer", conn.RemoteAddr(), "err", err, "rejected so far", n)
				}
			}
			return
		}
		if t == wire.TRound {
			var r wire.Round
			if decode(payload, &r) == nil && r.Count >= 1 && r.Count <= wire.MaxBatch {
				c.onRound(r, time.Now())
			}
			continue
		}
		if t != wire.TStats { // reading the stats holds nothing
			c.renew()
		}
		reply, rerr := c.handle(t, payload)
		if rerr != nil {
			err = w.Send(wire.TError, wire.ErrorMsg{Error: rerr.Error()})
		} else if st, ok := reply.(*wire.Stats); ok {
			err = w.Send(wire.TStatsReply, st)
		} else {
			err = w.Send(wire.TOK, nil)
		}
		if err != nil {
			return
		}
	}
}

func decode(p []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(p))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func (c *Controller) handle(t wire.Type, p []byte) (any, error) {
	switch t {
	case wire.TStats:
		return c.Stats(), nil
	case wire.TConfigure:
		var cf wire.Configure
		if err := decode(p, &cf); err != nil {
			return nil, fmt.Errorf("malformed configure: %v", err)
		}
		return nil, c.Configure(cf)
	case wire.TStart:
		return nil, c.StartSlowdown()
	case wire.TPool:
		var pl wire.Pool
		if err := decode(p, &pl); err != nil {
			return nil, fmt.Errorf("malformed pool: %v", err)
		}
		return nil, c.SetPool(pl)
	case wire.TLatency:
		var l wire.Latency
		if err := decode(p, &l); err != nil {
			return nil, fmt.Errorf("malformed latency: %v", err)
		}
		return nil, c.SetLatency(l)
	case wire.TStop:
		c.stopSlowdown()
		return nil, nil
	case wire.TReset:
		c.Reset()
		return nil, nil
	case wire.TRenew:
		return nil, nil // renewed on receipt, as every message from the orchestrator
	}
	return nil, fmt.Errorf("unexpected message %v", t)
}

// SetPool validates a pool setting and passes it to the instrumentation,
// now and whenever it connects again.
func (c *Controller) SetPool(pl wire.Pool) error {
	switch {
	case pl.Limit < 0 || pl.Limit > inservice.MaxLimit:
		return fmt.Errorf("pool limit must be in [0, %d], got %d", inservice.MaxLimit, pl.Limit)
	case pl.ThresholdNS < 0 || pl.ThresholdNS > wire.MaxPoolThreshold:
		return fmt.Errorf("pool threshold must be in [0, %v], got %v", time.Duration(wire.MaxPoolThreshold), time.Duration(pl.ThresholdNS))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pool = pl
	c.sendLinksLocked(poolMessage(pl))
	return nil
}

// maxStorePath bounds wire.Latency.Store.
const maxStorePath = 4096

// SetLatency validates a latency what-if setting and passes it to the
// instrumentation, now and whenever it connects again.
func (c *Controller) SetLatency(l wire.Latency) error {
	switch {
	case l.Store != "" && (!filepath.IsAbs(l.Store) || len(l.Store) > maxStorePath || strings.ContainsAny(l.Store, "\x00\n")):
		return fmt.Errorf("latency store must be an absolute path of at most %d bytes, got %q", maxStorePath, l.Store)
	case l.DelayNS < 0 || l.DelayNS > int64(inservice.MaxDelay):
		return fmt.Errorf("latency delay must be in [0, %v], got %v", inservice.MaxDelay, time.Duration(l.DelayNS))
	case l.Store == "" && (l.Target || l.DelayNS != 0):
		return errors.New("latency target or delay set without a store")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latency = l
	c.sendLinksLocked(latencyMessage(l))
	return nil
}

func latencyMessage(l wire.Latency) inservice.Message {
	return inservice.Message{Type: "latency", Store: l.Store, Target: l.Target, DelayNS: l.DelayNS}
}

func poolMessage(pl wire.Pool) inservice.Message {
	return inservice.Message{Type: "pool", Limit: pl.Limit, ThresholdNS: pl.ThresholdNS}
}

// Configure validates and stores slowdown parameters for the next start:
// the message's form (wire.Configure.Check), this controller's hard cap on
// a pause, and what its method can tell only here.
func (c *Controller) Configure(cf wire.Configure) error {
	if err := cf.Check(); err != nil {
		return err
	}
	if time.Duration(cf.PausePerRoundNS) > c.cfg.MaxPause {
		return fmt.Errorf("pause per round %v exceeds this controller's hard cap %v", time.Duration(cf.PausePerRoundNS), c.cfg.MaxPause)
	}
	m, err := methodOf(cf.Pause)
	if err != nil {
		return err
	}
	if err := m.check(c); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active {
		return errors.New("slowdown is running: stop it before configuring")
	}
	c.conf = cf
	// Fresh connections for every run: a neighbour restarted at the same
	// address (a pod on the host network, a reused pod IP) would leave a
	// kept connection dead, and the first rounds sent on it lost. (The
	// new peers connect on their first round: a connection opened sooner
	// and left silent would fail the neighbour's handshake deadline.)
	for addr, p := range c.peers {
		p.close()
		delete(c.peers, addr)
	}
	m.arm(c)
	return nil
}

// colocatedCPU sums the CPU clocks of pids, per core of the service.
func colocatedCPU(pids []int, cores int) func() time.Duration {
	if len(pids) == 0 {
		return nil
	}
	pids = append([]int(nil), pids...)
	return func() time.Duration {
		var sum time.Duration
		for _, pid := range pids {
			sum += processCPU(pid)
		}
		return sum / time.Duration(max(1, cores))
	}
}

// numCPUs is how many cores the service runs on now (serviceCPUs: a
// retarget may have moved it since it started).
func (c *Controller) numCPUs() int {
	if n := len(c.serviceCPUs()); n > 0 {
		return n
	}
	var set unix.CPUSet
	if unix.SchedGetaffinity(c.pgid, &set) == nil {
		return set.Count()
	}
	return 1
}

// StartSlowdown begins a slowdown run with the current configuration.
//
// Preparing the run (learning where the call counter stands, making the
// pausing group) happens outside the lock and takes up to about a second:
// another start meanwhile is refused, and a stop meanwhile (the
// orchestrator's, a lapsed lease, a forwarded signal, the child's exit)
// wins: the prepared group is closed and the start fails.
func (c *Controller) StartSlowdown() error {
	c.mu.Lock()
	if c.childGone {
		c.mu.Unlock()
		return errors.New("the service has exited")
	}
	if c.active || c.starting {
		c.mu.Unlock()
		return errors.New("slowdown already running")
	}
	c.starting = true
	conf, stops := c.conf, c.stops
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.starting = false
		c.mu.Unlock()
	}()
	var total uint64
	counting, byCPU := countsCalls(conf), conf.Target && conf.CPUPerCallNS > 0
	if counting {
		// The first round comes Batch calls from now: learn where the
		// call counter stands.
		rep, ok := c.flushLinks(time.Second)
		if !ok {
			return errors.New("the service's instrumentation is not connected: is it wrapped with slowhttp/slowgrpc?")
		}
		total = rep.Calls
	}
	if !c.cfg.NormalPriority {
		// Threads the runtime created since the last run inherited the
		// weight but not necessarily the short slice.
		raisePriority()
	}
	grp, err := c.startGroup(conf)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stops != stops || c.childGone {
		// Stopped while this start prepared: the group must not
		// outlive the call.
		if grp != nil {
			c.mu.Unlock()
			grp.close()
			c.mu.Lock()
		}
		return errors.New("slowdown stopped while it was starting")
	}
	c.active = true
	c.grp = grp
	c.seen = window{}
	if counting {
		c.roundMark = total / uint64(conf.Batch)
		c.sendLinksLocked(c.configMessageLocked())
	}
	if byCPU {
		c.roundMark = 0
		c.cpuStop = make(chan struct{})
		go c.cpuTrigger(time.Duration(conf.CPUPerCallNS), conf.Batch, c.numCPUs(), c.cpuStop)
	}
	return nil
}

// configMessageLocked tells the instrumentation how often to start a
// round while a slowdown runs: every Batch calls, by ringing the bell
// where the target's controller holds cores, by a tick otherwise.
func (c *Controller) configMessageLocked() inservice.Message {
	m := inservice.Message{Type: "config", Batch: uint64(c.conf.Batch)}
	if c.grp != nil {
		m.Bell = c.grp.bellPath()
	}
	return m
}

func (c *Controller) stopSlowdown() {
	c.mu.Lock()
	c.active = false
	c.stops++
	c.sendLinksLocked(inservice.Message{Type: "config", Batch: 0})
	if c.cpuStop != nil {
		close(c.cpuStop)
		c.cpuStop = nil
	}
	grp := c.grp
	c.grp = nil
	c.mu.Unlock()
	c.pauser.Halt()
	if grp != nil {
		st := grp.close()
		c.mu.Lock()
		c.grpLast = &st
		c.mu.Unlock()
	}
}

// Reset stops any slowdown and zeroes round and pause counters.
func (c *Controller) Reset() {
	c.stopSlowdown()
	c.mu.Lock()
	c.c = counters{}
	c.recent = nil
	c.roundSeq = 0
	c.grpLast = nil
	c.mu.Unlock()
	c.pauser.reset()
}

// ---- rounds ----

// countsCalls says whether a slowdown configured by cf acts on the
// instrumentation's call counts: the target's rounds (unless they follow
// its CPU time) and a service's local pauses.
func countsCalls(cf wire.Configure) bool {
	return (cf.Target || cf.Local()) && cf.CPUPerCallNS == 0
}

// onTick runs when the instrumentation says the service crossed a batch
// boundary: on the target it starts a round; on a service in local mode it
// pauses the service. Where the target's rounds follow its CPU time, the
// instrumentation's ticks are not used.
func (c *Controller) onTick(total uint64) { c.onCount(total, false) }

// onCount runs when the service's call count (byCPU: its CPU time in calls,
// see cpuTrigger) reached total, and acts on every batch boundary crossed.
func (c *Controller) onCount(total uint64, byCPU bool) {
	c.mu.Lock()
	if !c.active || !(c.conf.Target || c.conf.Local()) || c.conf.Batch <= 0 || (c.conf.CPUPerCallNS > 0) != byCPU {
		c.mu.Unlock()
		return
	}
	due := total / uint64(c.conf.Batch)
	if due <= c.roundMark {
		c.mu.Unlock()
		return
	}
	count := due - c.roundMark
	c.roundMark = due
	if c.conf.Local() {
		c.c.started += count
		pause := time.Duration(c.conf.PausePerRoundNS) * time.Duration(count)
		c.mu.Unlock()
		c.pauser.Pause(pause)
		return
	}
	c.roundSeq++
	c.c.started += count
	now := time.Now()
	r := wire.Round{Epoch: c.conf.Epoch, Round: c.roundSeq, Count: int(count), Origin: c.cfg.Name, Via: c.cfg.Name, SentUnixNS: now.UnixNano()}
	c.seen.add(r.Round)
	pause := time.Duration(c.conf.PausePerRoundNS) * time.Duration(count)
	// A holder reads the target's CPU over every hold itself.
	measure := (c.grp == nil || !c.grp.timesBusy()) && !c.busyMeasured && now.Sub(c.busySampled) >= busySampleEvery
	if measure {
		c.busyMeasured, c.busySampled = true, now
	}
	lead := c.conf.Lead()
	c.forwardLocked(r, "")
	grp := c.grp
	c.mu.Unlock()
	if grp != nil {
		grp.Pause(pause)
	}
	if measure {
		go c.measureBusy(lead, pause)
	}
}

// busySampleEvery spaces the target's busy measurements (measureBusy):
// each costs its controller two timer wake-ups on the shared cores, and a
// sample of pauses tells whether the target starves as well as all of
// them do (about 60 in a 3 s window).
const busySampleEvery = 50 * time.Millisecond

// measureBusy records how much CPU the target used during a pause it
// triggered, which starts lead after the trigger: a target that idles
// while its callers are stopped is starved.
func (c *Controller) measureBusy(lead, pause time.Duration) {
	defer func() {
		c.mu.Lock()
		c.busyMeasured = false
		c.mu.Unlock()
	}()
	if pause <= 0 {
		return
	}
	time.Sleep(lead)
	before := c.serviceCPUTime()
	time.Sleep(pause)
	used := int64(c.serviceCPUTime() - before)
	c.mu.Lock()
	c.c.pauseBusy += used
	c.c.pauseWindow += int64(pause)
	c.mu.Unlock()
}

func (c *Controller) onRound(r wire.Round, now time.Time) {
	c.mu.Lock()
	if !c.active || r.Epoch != c.conf.Epoch {
		c.c.stale++
		c.mu.Unlock()
		return
	}
	if !c.seen.add(r.Round) {
		c.c.duplicate++
		c.mu.Unlock()
		return
	}
	c.c.received += uint64(r.Count)
	delay := now.UnixNano() - r.SentUnixNS
	c.c.delaySum += delay
	lead := int64(c.conf.Lead())
	if lead > 0 && delay > lead {
		c.c.late += uint64(r.Count)
	}
	c.c.delayMax = max(c.c.delayMax, delay)
	c.c.hopsMax = max(c.c.hopsMax, r.Hops+1)
	pause := time.Duration(c.conf.PausePerRoundNS) * time.Duration(r.Count)
	if c.conf.Target {
		pause = 0
	}
	c.recent = append(c.recent, wire.RoundRecord{Round: r.Round, Hops: r.Hops + 1, DelayNS: delay, RequestedNS: int64(pause)})
	if len(c.recent) > recentRounds {
		c.recent = c.recent[len(c.recent)-recentRounds:]
	}
	from := r.Via
	r.Via = c.cfg.Name
	r.Hops++
	c.forwardLocked(r, from)
	target := c.conf.Target
	var at time.Time
	if lead > 0 {
		at = time.Unix(0, r.SentUnixNS+lead)
	}
	c.mu.Unlock()
	if !target {
		c.pauser.PauseAt(pause, at)
	}
}

func (c *Controller) forwardLocked(r wire.Round, from string) {
	for _, p := range c.peers {
		if p.n.Name == from {
			continue
		}
		if p.send(r) {
			c.c.forwarded++
		} else {
			c.c.forwardErrors++
		}
	}
}

func (c *Controller) noteForwardError(n wire.Neighbour, err error) {
	c.mu.Lock()
	c.c.forwardErrors++
	first := c.c.forwardErrors == 1
	c.mu.Unlock()
	if first {
		c.log.Warn("neighbour unreachable; rounds to it are dropped and counted", "neighbour", n.Name, "addr", n.Addr, "err", err)
	}
}

// window de-duplicates round numbers: everything at or below low has been
// seen or is too old; above it a set of recent rounds.
type window struct {
	low  uint64
	seen map[uint64]bool
}

func (w *window) add(r uint64) bool {
	if r <= w.low || w.seen[r] {
		return false
	}
	if w.seen == nil {
		w.seen = map[uint64]bool{}
	}
	w.seen[r] = true
	if len(w.seen) > 4096 {
		// Forget the oldest half; anything that old is a straggler.
		var hi uint64
		for k := range w.seen {
			hi = max(hi, k)
		}
		w.low = hi - 2048
		for k := range w.seen {
			if k <= w.low {
				delete(w.seen, k)
			}
		}
	}
	return true
}

// ---- neighbours ----

// peer is a persistent connection to a neighbouring controller. Sends are
// queued so that a slow or dead neighbour never delays a pause.
type peer struct {
	n      wire.Neighbour
	secret []byte
	q      chan wire.Round
	done   chan struct{}
	once   sync.Once
	onErr  func(wire.Neighbour, error)
}

func newPeer(n wire.Neighbour, secret []byte, onErr func(wire.Neighbour, error)) *peer {
	p := &peer{n: n, secret: secret, q: make(chan wire.Round, 256), done: make(chan struct{}), onErr: onErr}
	go p.loop()
	return p
}

func (p *peer) send(r wire.Round) bool {
	select {
	case p.q <- r:
		return true
	default:
		return false
	}
}

func (p *peer) close() { p.once.Do(func() { close(p.done) }) }

func (p *peer) loop() {
	var conn *wire.Conn
	var retryAt time.Time
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-p.done:
			return
		case r := <-p.q:
			if conn == nil {
				if time.Now().Before(retryAt) {
					p.onErr(p.n, errors.New("still unreachable"))
					continue
				}
				var err error
				if conn, err = wire.Dial(p.n.Addr, p.secret, time.Second); err != nil {
					conn = nil
					retryAt = time.Now().Add(time.Second)
					p.onErr(p.n, err)
					continue
				}
				conn.Timeout = time.Second
			}
			if err := conn.Send(wire.TRound, r); err != nil {
				conn.Close()
				conn = nil
				p.onErr(p.n, err)
			}
		}
	}
}

// ---- instrumentation channel (internal/inservice) ----

type linkConn struct {
	conn   net.Conn
	wmu    sync.Mutex
	last   inservice.Message
	gotRep chan uint64
}

func (c *Controller) acceptLinks() {
	for {
		conn, err := c.linkLn.Accept()
		if err != nil {
			return
		}
		a := &linkConn{conn: conn, gotRep: make(chan uint64, 16)}
		c.mu.Lock()
		c.links[a] = struct{}{}
		if c.active && countsCalls(c.conf) {
			a.send(c.configMessageLocked())
		}
		if c.pool != (wire.Pool{}) {
			a.send(poolMessage(c.pool))
		}
		if c.latency.Store != "" {
			a.send(latencyMessage(c.latency))
		}
		c.mu.Unlock()
		go c.serveLink(a)
	}
}

func (a *linkConn) send(m inservice.Message) {
	b, _ := json.Marshal(m)
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.conn.SetWriteDeadline(time.Now().Add(time.Second))
	a.conn.Write(append(b, '\n'))
}

func (c *Controller) sendLinksLocked(m inservice.Message) {
	// Synchronous, so a stop's config can never overtake the next start's.
	for a := range c.links {
		a.send(m)
	}
}

// serveLink reads the link's newline-delimited messages; one read may
// return many coalesced messages or part of one, the scanner reassembles.
func (c *Controller) serveLink(a *linkConn) {
	defer func() {
		c.mu.Lock()
		delete(c.links, a)
		c.mu.Unlock()
		a.conn.Close()
	}()
	sc := bufio.NewScanner(a.conn)
	sc.Buffer(make([]byte, 0, 64<<10), inservice.MaxLine)
	for sc.Scan() {
		var m inservice.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			c.log.Warn("malformed message from instrumentation", "err", err)
			continue
		}
		switch m.Type {
		case "tick":
			c.onTick(m.Total)
		case "report":
			c.mu.Lock()
			a.last = m
			c.mu.Unlock()
			if m.ID != 0 {
				select {
				case a.gotRep <- m.ID:
				default:
				}
			}
		case "hello":
			c.log.Info("instrumentation connected", "pid", m.PID)
		}
	}
}

// flushLinks asks every link for a fresh report and waits up to timeout.
func (c *Controller) flushLinks(timeout time.Duration) (wire.Stats, bool) {
	c.mu.Lock()
	c.flushSeq++
	id := c.flushSeq
	links := make([]*linkConn, 0, len(c.links))
	for a := range c.links {
		links = append(links, a)
	}
	c.mu.Unlock()
	deadline := time.After(timeout)
	for _, a := range links {
		a.send(inservice.Message{Type: "flush", ID: id})
	}
wait:
	for _, a := range links {
		for {
			select {
			case got := <-a.gotRep:
				if got >= id {
					continue wait
				}
			case <-deadline:
				break wait
			}
		}
	}
	var st wire.Stats
	st.Endpoints, st.Downstream = map[string]uint64{}, map[string]uint64{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for a := range c.links {
		st.Calls += a.last.Total
		st.InFlight += a.last.InFlight
		st.Done += a.last.Done
		st.Good += a.last.Good
		st.BusyNS += a.last.BusyNS
		st.WaitNS += a.last.WaitNS
		st.Queued += a.last.Queued
		st.PoolAtUnixNS = max(st.PoolAtUnixNS, a.last.AtUnixNS)
		st.Limit = max(st.Limit, a.last.Limit)
		st.ThresholdNS = max(st.ThresholdNS, a.last.ThresholdNS)
		for k, v := range a.last.Endpoints {
			st.Endpoints[k] += v
		}
		for k, v := range a.last.Downstream {
			st.Downstream[k] += v
		}
	}
	return st, len(c.links) > 0
}

// Stats returns a fresh snapshot of the controller's counters.
func (c *Controller) Stats() *wire.Stats {
	st, connected := c.flushLinks(500 * time.Millisecond)
	st.Service = c.cfg.Name
	st.PID = c.pgid
	st.AgentConnected = connected
	st.CPUNS = c.serviceCPU()
	st.ControllerCPUNS = int64(selfCPU())
	ps := c.pauser.stats()
	// When the pause counters were read (see wire.Stats.TakenUnixNS).
	st.TakenUnixNS = time.Now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	// The target never pauses itself: with a group method, its pause
	// counters are those of the loop that pauses the others.
	if c.grp != nil {
		ps = c.grp.stats()
		st.TakenUnixNS = time.Now().UnixNano()
	} else if c.grpLast != nil {
		ps = *c.grpLast
	}
	st.Active, st.Target, st.Epoch, st.Batch = c.active, c.conf.Target, c.conf.Epoch, c.conf.Batch
	st.PausePerRoundNS, st.MaxPauseNS = c.conf.PausePerRoundNS, int64(c.cfg.MaxPause)
	// Rounds the instrumentation rang on a holder's bell are started
	// without passing through this controller's code.
	st.RoundsStarted, st.RoundsReceived, st.RoundsDuplicate = c.c.started+ps.rounds, c.c.received, c.c.duplicate
	st.RoundsLate = c.c.late
	st.RoundsStale, st.RoundsForwarded, st.ForwardErrors = c.c.stale, c.c.forwarded, c.c.forwardErrors
	st.AuthFailures = c.c.authFailures
	st.ControlRefused, st.HandshakeTimeouts = c.c.refused, c.c.handshakeTimeouts
	st.Pauses, st.PauseRequestedNS, st.PauseActualNS = ps.pauses, int64(ps.requested), int64(ps.actual)
	st.PauseClippedNS, st.PauseMaxNS, st.PauseExtendedNS = int64(ps.clipped), int64(ps.longest), int64(ps.extended)
	st.PauseHeldCPUNS = int64(ps.heldCPU)
	st.ControllerCPUStoppedNS = int64(ps.selfIn)
	if st.StopsDue = ps.due; ps.due > 0 {
		st.StopLateMeanNS = int64(ps.late) / int64(ps.due)
	}
	if c.c.received > 0 {
		st.DelayMeanNS = c.c.delaySum / int64(c.c.received)
	}
	st.DelayMaxNS, st.HopsMax = c.c.delayMax, c.c.hopsMax
	st.PauseBusyNS, st.PauseWindowNS = c.c.pauseBusy+int64(ps.busyIn), c.c.pauseWindow+int64(ps.busyOver)
	st.Recent = append([]wire.RoundRecord(nil), c.recent...)
	if sk, ok := c.cfg.Pods.(NodeSkewer); ok {
		st.NodeSkews = sk.NodeSkews()
	}
	return &st
}
