package nodeagent

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/podcgroup"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Rounds across nodes. Where a run's pods span nodes, every node's agent
// listens for the other nodes' agents (Config.PeerListen). The agent on
// the target's node, whose controller freezes the other services' pods
// (wire.CgroupPause.Pods), freezes those on its node itself and asks the
// agent of every other node that holds some to freeze them, at every
// round: one frame each way per freeze, per thaw and per lengthening
// (Timed thaws, below), on a connection
// opened when the slowdown starts, authenticated with the run's secret
// (internal/wire's frames: HMAC, a nonce, sequence numbers).
//
// The messages, JSON payloads of wire frames:
//
//	initiator → peer  TConfigure peerPrepare   the pods it asks for, the cap
//	peer → initiator  TOK        peerPrepared  those on the peer's node
//	initiator → peer  TRound     peerSet       freeze (or thaw, or lengthen) round Seq
//	peer → initiator  TOK        peerAck       when it froze (thawed) it
//	initiator → peer  TRenew                   nothing else to say
//
// Timed thaws. A thaw frame reaches a peer late: its trip, and the peer
// agent getting a CPU just as every process the initiator thawed becomes
// runnable; on the test cluster a remote thaw came later than a remote
// freeze by a large share of a pause (docs/notes/multinode.md has the
// measured lags). So a peer that says so (peerPrepared.Timed)
// is told with each freeze how long it is to last (peerSet.ForNS), and
// thaws by its own timer once that has passed since its own freeze
// completed: its pause lasts what was asked, offset by the freeze's lag
// only. A pause may grow while it is held (pause asked for meanwhile, the
// co-located extension at its end): the initiator then sends the freeze
// frame of the same round again with the new length in all, and the peer
// re-arms its timer; one that arrives after the timer thawed freezes
// again until the new end, if at least minRefreeze is left (the remote
// pause then loses only the frame's lateness, instead of the whole
// lengthening). The thaw frame still thaws at once where it comes first,
// and ends the round (no freezing again after it). An initiator that
// sends no length (ForNS 0: an older one) gets the older behaviour: the
// thaw frame or the cap ends each freeze.
//
// Safety on the peer: it freezes only pods of the run's services that run
// on its own node (under its kubelet's cgroup root), never its own pod,
// records them in its ledger before the first freeze (the watchdog thaws
// them should it be killed), caps every round by its own timer at the
// smaller of the initiator's cap and its own --max-pause from the round's
// first freeze (a length asked is only ever shorter), refuses a length
// below zero or over the initiator's cap (ending the connection, thawed),
// thaws at once when the connection ends, and ends the connection,
// thawed, once the initiator has been silent for the lease.

// Peer is another node's agent.
type Peer struct {
	Node string
	Addr string
}

// ParsePeer parses NODE=HOST:PORT (the agent's --peer).
func ParsePeer(s string) (Peer, error) {
	node, addr, ok := strings.Cut(s, "=")
	if _, _, err := net.SplitHostPort(addr); !ok || node == "" || len(node) > 253 || err != nil {
		return Peer{}, fmt.Errorf("peer %q: want NODE=HOST:PORT", s)
	}
	return Peer{Node: node, Addr: addr}, nil
}

// String is the form ParsePeer reads.
func (p Peer) String() string { return p.Node + "=" + p.Addr }

type peerPrepare struct {
	Node       string   `json:"node"` // the initiator's
	Pods       []string `json:"pods"`
	MaxPauseNS int64    `json:"max_pause_ns"`
}

type peerPrepared struct {
	Node string   `json:"node"`
	Pods []string `json:"pods"` // those of peerPrepare.Pods on this node
	// Timed says that this agent thaws by itself once the length a freeze
	// asks for has passed (peerSet.ForNS): an initiator sends lengths to
	// those agents only.
	Timed bool `json:"timed,omitempty"`
}

type peerSet struct {
	Seq    uint64 `json:"seq"`
	Frozen bool   `json:"frozen"`
	// ForNS, on a freeze, is how long it is to last from when the peer's
	// freeze completed (0: until the thaw frame, or the cap). A freeze of
	// the round already under way lengthens it: ForNS is then the new
	// length in all.
	ForNS int64 `json:"for_ns,omitempty"`
	// SentUnixNS is when the initiator sent the frame, for the frame's
	// delivery time (peerAck.ReadUnixNS less this).
	SentUnixNS int64 `json:"sent_unix_ns,omitempty"`
}

type peerAck struct {
	Seq      uint64 `json:"seq"`
	Frozen   bool   `json:"frozen"`
	AtUnixNS int64  `json:"at_unix_ns"`
	Capped   bool   `json:"capped,omitempty"` // thawed by the cap's timer, not by a thaw
	Timed    bool   `json:"timed,omitempty"`  // thawed by its own timer, the length asked having passed
	// Again answers a lengthening that came after the timer had thawed
	// the round: frozen again at AtUnixNS (the round's first freeze
	// stands as its start).
	Again bool   `json:"again,omitempty"`
	Err   string `json:"err,omitempty"`
	// ReadUnixNS is when the peer read the frame that froze or thawed
	// (0: its own timer or cap thawed), and SentUnixNS that frame's
	// (peerSet.SentUnixNS), echoed: together, the frame's delivery.
	ReadUnixNS int64 `json:"read_unix_ns,omitempty"`
	SentUnixNS int64 `json:"sent_unix_ns,omitempty"`
}

// frameTimes are when a round frame was sent (by the initiator's clock)
// and read (by the peer's), Unix ns; zero where no frame.
type frameTimes struct{ sent, read int64 }

// Bounds of the peer protocol.
const (
	// maxPeerFrame bounds a frame from a peer: a prepare of wire.MaxPods
	// UIDs fits.
	maxPeerFrame = 64 << 10
	// maxPeerConns bounds the connections a peer server serves at once.
	maxPeerConns = 16
	// peerDialTimeout bounds connecting to a peer and its handshake.
	peerDialTimeout = 3 * time.Second
	// peerSendTimeout bounds writing one frame to a peer.
	peerSendTimeout = 20 * time.Millisecond
	// keepRounds is how many rounds' records a freezer keeps, keepAll
	// how many an agent keeps over its runs (NodeSkews).
	keepRounds = 4096
	keepAll    = 1 << 16
	// minRefreeze is the least of a lengthened round left for which a
	// peer whose timer already thawed it freezes again: less is not worth
	// two more cgroup writes.
	minRefreeze = 200 * time.Microsecond
)

// How a peer's freeze ended.
type thawBy int

const (
	byFrame thawBy = iota // the initiator's thaw frame
	byCap                 // the cap's timer
	byTimer               // its own timer, the length asked having passed
)

// servePeers accepts other nodes' agents on ln until it is closed.
func (a *Agent) servePeers(ln net.Listener) {
	sem := make(chan struct{}, maxPeerConns)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		select {
		case sem <- struct{}{}:
		default:
			c.Close()
			continue
		}
		a.peerWG.Add(1)
		go func() {
			defer a.peerWG.Done()
			defer func() { <-sem }()
			a.servePeer(c)
		}()
	}
}

// servePeer serves one initiator: a prepare, then freezes and thaws, until
// the connection ends or the initiator is silent for the lease. Everything
// it froze is thawed when it returns.
func (a *Agent) servePeer(c net.Conn) {
	defer c.Close()
	a.trackConn(c, true)
	defer a.trackConn(c, false)
	log := a.log.With("peer", c.RemoteAddr().String())
	w, err := wire.Server(c, a.cfg.Secret)
	if err != nil {
		return
	}
	t, p, err := w.RecvLimit(wire.DefaultTimeout, maxPeerFrame)
	if err == nil && t == wire.TStats {
		a.serveCPU(w, p)
		return
	}
	if err != nil || t != wire.TConfigure {
		log.Warn("a peer connection sent no valid prepare", "err", err, "type", t)
		return
	}
	var prep peerPrepare
	if err := json.Unmarshal(p, &prep); err != nil {
		w.Send(wire.TError, wire.ErrorMsg{Error: "malformed prepare"})
		return
	}
	fr, found, capd, err := a.preparePeer(prep)
	if err != nil {
		w.Send(wire.TError, wire.ErrorMsg{Error: err.Error()})
		log.Warn("refused a peer's pods", "from", prep.Node, "err", err)
		return
	}
	if err := w.Send(wire.TOK, peerPrepared{Node: a.cfg.Node, Pods: found, Timed: true}); err != nil {
		fr.Close()
		return
	}
	log.Info("freezing pods of this node for another node's rounds", "from", prep.Node, "pods", len(found), "cap", capd)
	// The longest length a freeze may ask for: the initiator's cap (its
	// own pauses never exceed it), else this agent's.
	limit := time.Duration(prep.MaxPauseNS)
	if limit <= 0 {
		limit = capd
	}
	var mu sync.Mutex
	var seq uint64   // the round under way, or the last
	var frozen bool  // its pods frozen now
	var ended bool   // it was ended by the thaw frame or the cap: never frozen again
	var at time.Time // when its first freeze completed
	var gen uint64   // the timer armed last (a stopped timer's callback may still run)
	var timer *time.Timer
	var thaw func(s, g uint64, by thawBy, ft frameTimes)
	// arm sets the round's timer: at the length asked, from its first
	// freeze, or at the cap, whichever is sooner. Called locked.
	arm := func(s uint64, asked time.Duration) {
		if timer != nil {
			timer.Stop()
		}
		gen++
		g, end, by := gen, capd, byCap
		if asked > 0 && asked < capd {
			end, by = asked, byTimer
		}
		timer = time.AfterFunc(time.Until(at.Add(end)), func() { thaw(s, g, by, frameTimes{}) })
	}
	// thaw thaws round s: its thaw frame (g 0, read as ft says) or its
	// timer armed as g.
	thaw = func(s, g uint64, by thawBy, ft frameTimes) {
		mu.Lock()
		defer mu.Unlock()
		if s != seq || (g != 0 && g != gen) {
			return
		}
		if by != byTimer {
			ended = true
		}
		if !frozen {
			return
		}
		if timer != nil {
			timer.Stop()
		}
		err := fr.Set(false)
		frozen = false
		ack := peerAck{Seq: s, AtUnixNS: time.Now().UnixNano(), Capped: by == byCap, Timed: by == byTimer,
			ReadUnixNS: ft.read, SentUnixNS: ft.sent}
		if err != nil {
			ack.Err = err.Error()
		}
		w.Send(wire.TOK, ack)
	}
	// freeze freezes for round m: a new round, or a lengthening of the
	// one under way.
	freeze := func(m peerSet, read int64) {
		mu.Lock()
		defer mu.Unlock()
		asked := time.Duration(m.ForNS)
		if m.Seq == seq && seq != 0 {
			ack := peerAck{} // nothing to record
			last := capd
			if asked > 0 {
				last = min(asked, capd)
			}
			switch {
			case frozen:
				arm(m.Seq, asked)
			case !ended && time.Until(at.Add(last)) >= minRefreeze:
				// The timer thawed before the lengthening came.
				err := fr.Set(true)
				frozen = true
				arm(m.Seq, asked)
				ack = peerAck{Seq: m.Seq, Frozen: true, Again: true, AtUnixNS: time.Now().UnixNano()}
				if err != nil {
					ack.Err = err.Error()
				}
			}
			w.Send(wire.TOK, ack)
			return
		}
		if timer != nil {
			timer.Stop()
		}
		err := fr.Set(true)
		seq, frozen, ended, at = m.Seq, true, false, time.Now()
		arm(m.Seq, asked)
		ack := peerAck{Seq: m.Seq, Frozen: true, AtUnixNS: at.UnixNano(), ReadUnixNS: read, SentUnixNS: m.SentUnixNS}
		if err != nil {
			ack.Err = err.Error()
		}
		w.Send(wire.TOK, ack)
	}
	defer func() {
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		gen++
		fr.Set(false)
		frozen = false
		mu.Unlock()
		fr.Close()
		log.Info("thawed this node's pods: the initiator ended or fell silent", "from", prep.Node)
	}()
	for {
		t, p, err := w.RecvLimit(a.cfg.Lease, maxPeerFrame)
		read := time.Now().UnixNano()
		if err != nil {
			return // ended, cut, or silent for the lease: thawed by the defer
		}
		switch t {
		case wire.TRenew:
			// Answered, so that the initiator knows this agent is there
			// between rounds too.
			w.Send(wire.TOK, peerAck{})
		case wire.TRound:
			var m peerSet
			if json.Unmarshal(p, &m) != nil {
				return
			}
			if !m.Frozen {
				thaw(m.Seq, 0, byFrame, frameTimes{sent: m.SentUnixNS, read: read})
				continue
			}
			if m.ForNS < 0 || time.Duration(m.ForNS) > limit {
				log.Warn("a peer asked for a freeze of a length out of bounds; thawed, and ended its connection", "from", prep.Node, "for", time.Duration(m.ForNS), "cap", limit)
				return
			}
			freeze(m, read)
		default:
			return
		}
	}
}

// peerCPU asks a peer for the CPU time its node's pods of a service have
// used (TStats); peerCPUReply answers (TStatsReply).
type peerCPU struct {
	Pods []string `json:"pods"`
}

type peerCPUReply struct {
	CPUNS int64 `json:"cpu_ns"`
	Pods  int   `json:"pods"` // how many of them are on its node
}

// cpuIdle is how long a CPU connection may stay silent.
const cpuIdle = 10 * time.Minute

// serveCPU answers another agent's CPU questions, the first in p, until
// the connection ends or is idle for cpuIdle.
func (a *Agent) serveCPU(w *wire.Conn, p []byte) {
	for {
		var q peerCPU
		if json.Unmarshal(p, &q) != nil || len(q.Pods) > wire.MaxPods {
			w.Send(wire.TError, wire.ErrorMsg{Error: "malformed CPU question"})
			return
		}
		var r peerCPUReply
		for _, uid := range q.Pods {
			if !podcgroup.ValidUID(uid) || !a.known(uid) {
				w.Send(wire.TError, wire.ErrorMsg{Error: fmt.Sprintf("pod %.60q is none of this run's services'", uid)})
				return
			}
			if pod, err := a.find(uid); err == nil {
				r.Pods++
				if d, err := pod.CPU(); err == nil {
					r.CPUNS += int64(d)
				}
			}
		}
		if w.Send(wire.TStatsReply, r) != nil {
			return
		}
		t, next, err := w.RecvLimit(cpuIdle, maxPeerFrame)
		if err != nil || t != wire.TStats {
			return
		}
		p = next
	}
}

// remoteCPU is the CPU time the pods given by UID have used on the other
// nodes, asked of their agents on a connection kept for it. A node whose
// agent does not answer counts with what it last said, and is asked
// again on a new connection next time.
func (a *Agent) remoteCPU(uids []string) time.Duration {
	key := strings.Join(uids, ",")
	var sum time.Duration
	for _, peer := range a.cfg.Peers {
		sum += a.peerCPU(peer, uids, key)
	}
	return sum
}

// cpuLink is a connection to a peer for CPU questions, and its last
// answers by question.
type cpuLink struct {
	mu   sync.Mutex
	w    *wire.Conn
	last map[string]time.Duration
}

func (a *Agent) peerCPU(peer Peer, uids []string, key string) time.Duration {
	a.mu.Lock()
	l := a.cpuLinks[peer.Node]
	if l == nil {
		l = &cpuLink{last: map[string]time.Duration{}}
		a.cpuLinks[peer.Node] = l
	}
	a.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		w, err := wire.Dial(peer.Addr, a.cfg.Secret, peerDialTimeout)
		if err != nil {
			return l.last[key]
		}
		w.Timeout = time.Second
		l.w = w
	}
	var r peerCPUReply
	if err := l.w.Call(wire.TStats, peerCPU{Pods: uids}, &r); err != nil {
		a.log.Warn("could not ask another node's agent for its pods' CPU time; counting what it last said", "node", peer.Node, "err", err)
		l.w.Close()
		l.w = nil
		return l.last[key]
	}
	d := time.Duration(r.CPUNS)
	l.last[key] = d
	return d
}

// closeCPULinks ends the CPU connections.
func (a *Agent) closeCPULinks() {
	a.mu.Lock()
	links := a.cpuLinks
	a.cpuLinks = map[string]*cpuLink{}
	a.mu.Unlock()
	for _, l := range links {
		l.mu.Lock()
		if l.w != nil {
			l.w.Close()
			l.w = nil
		}
		l.mu.Unlock()
	}
}

// preparePeer checks an initiator's pods: each of the run's, not this
// agent's own; those on this node are recorded in the ledger and opened.
// It returns their freezer, their UIDs and the cap on one freeze.
func (a *Agent) preparePeer(prep peerPrepare) (*pause.Freezer, []string, time.Duration, error) {
	if len(prep.Pods) > wire.MaxPods {
		return nil, nil, 0, fmt.Errorf("at most %d pods, got %d", wire.MaxPods, len(prep.Pods))
	}
	capd := a.cfg.MaxPause
	if d := time.Duration(prep.MaxPauseNS); d > 0 && d < capd {
		capd = d
	}
	var pods []podcgroup.Pod
	var found []string
	for _, uid := range prep.Pods {
		if !podcgroup.ValidUID(uid) {
			return nil, nil, 0, fmt.Errorf("%.60q is not a pod UID", uid)
		}
		if !a.known(uid) {
			return nil, nil, 0, fmt.Errorf("pod %s is none of this run's services'", uid)
		}
		if uid == a.self {
			return nil, nil, 0, fmt.Errorf("pod %s is the node agent's own", uid)
		}
		p, err := a.find(uid)
		if err != nil {
			continue // on another node
		}
		pods = append(pods, p)
		found = append(found, uid)
	}
	if err := a.ledger.Add(pods...); err != nil {
		return nil, nil, 0, err
	}
	cgs := make([]pause.Cgroup, len(pods))
	for i, p := range pods {
		cgs[i] = p.Freezer()
	}
	fr, err := pause.OpenFreezer(cgs)
	return fr, found, capd, err
}

// known says whether uid is a pod of one of the run's services.
func (a *Agent) known(uid string) bool {
	for _, sv := range a.cfg.Services {
		if slices.Contains(sv.Pods, uid) {
			return true
		}
	}
	return false
}

// trackConn keeps the open peer connections, which Close ends.
func (a *Agent) trackConn(c net.Conn, open bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if open {
		a.peerConns[c] = struct{}{}
	} else {
		delete(a.peerConns, c)
	}
}

// spanningService is a service of a run that spans nodes
// (controller.SpanningPods): its controller, as the target's, freezes the
// other services' pods on this node and, through their agents, on others.
type spanningService struct{ podService }

// CPU is the CPU time the service's pods have used, on this node and on
// the others (their agents say): a service with replicas on several
// nodes, as the target, follows all of them.
func (s spanningService) CPU() time.Duration {
	var sum time.Duration
	var away []string
	for _, uid := range s.uids {
		p, err := s.a.find(uid)
		if err != nil {
			away = append(away, uid)
			continue
		}
		if d, err := p.CPU(); err == nil {
			sum += d
		}
	}
	if len(away) > 0 {
		sum += s.a.remoteCPU(away)
	}
	return sum
}

// PodFreezer freezes the pods given by UID: those on this node itself,
// the others through the agents of the nodes they are on.
func (s spanningService) PodFreezer(uids []string, max time.Duration) (controller.PodFreezer, error) {
	a := s.a
	var local, rest []string
	for _, uid := range uids {
		if _, err := a.find(uid); err == nil {
			local = append(local, uid)
		} else {
			rest = append(rest, uid)
		}
	}
	cgs, err := s.Freezers(local)
	if err != nil {
		return nil, err
	}
	lf, err := pause.OpenFreezer(cgs)
	if err != nil {
		return nil, err
	}
	f := &spanFreezer{a: a, local: lf, max: max, recs: map[uint64]*RoundRecord{}, done: make(chan struct{})}
	for _, peer := range a.cfg.Peers {
		if len(rest) == 0 {
			break
		}
		l, found, err := dialPeer(peer, a.cfg.Secret, peerPrepare{Node: a.cfg.Node, Pods: rest, MaxPauseNS: int64(max)})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("node %s: its agent at %s: %w", peer.Node, peer.Addr, err)
		}
		if len(found) == 0 {
			l.w.Close()
			continue
		}
		rest = slices.DeleteFunc(rest, func(uid string) bool { return slices.Contains(found, uid) })
		f.links = append(f.links, l)
		a.setLost(peer.Node, "")
	}
	if len(rest) > 0 {
		f.Close()
		return nil, fmt.Errorf("no cgroup of pod %s on this node, nor on any other whose agent this one knows (%d peers)", rest[0], len(a.cfg.Peers))
	}
	for _, l := range f.links {
		f.wg.Add(2)
		go f.readAcks(l)
		go f.renew(l)
	}
	if len(f.links) > 0 {
		a.log.Info("freezing pods across nodes", "here", len(local), "nodes", len(f.links)+1)
	}
	return f, nil
}

// NodeSkews is the skew across nodes over the rounds of every run this
// agent's controllers froze pods of other nodes in (the last 65536
// rounds), for the target controller's Stats.
func (s spanningService) NodeSkews() []wire.NodeSkew {
	s.a.mu.Lock()
	recs := slices.Clone(s.a.all)
	lost := maps.Clone(s.a.lost)
	longer := maps.Clone(s.a.longer)
	s.a.mu.Unlock()
	var out []wire.NodeSkew
	for _, k := range Skews(recs) {
		out = append(out, wire.NodeSkew{Node: k.Node, Rounds: k.Rounds, Missing: k.Missing, Capped: k.Capped,
			StartP50NS: int64(k.StartP50), StartP99NS: int64(k.StartP99), StartMaxNS: int64(k.StartMax),
			EndP50NS: int64(k.EndP50), EndP99NS: int64(k.EndP99), EndMaxNS: int64(k.EndMax), Lost: lost[k.Node],
			Timed: k.Timed, Refrozen: k.Refrozen, LateStartP50NS: int64(k.LateStartP50), LateEndP50NS: int64(k.LateEndP50),
			LongerP1NS: int64(k.LongerP1), LongerP50NS: int64(k.LongerP50), LongerP99NS: int64(k.LongerP99),
			LongerSumNS:       int64(longer[k.Node]),
			DeliverStartP50NS: int64(k.DeliverStartP50), DeliverStartP99NS: int64(k.DeliverStartP99),
			DeliverEndP50NS: int64(k.DeliverEndP50), DeliverEndP99NS: int64(k.DeliverEndP99)})
		delete(lost, k.Node)
		delete(longer, k.Node)
	}
	// Nodes of the run under way, whose rounds are summarised when it
	// ends, and lost ones.
	rest := maps.Clone(lost)
	for n := range longer {
		rest[n] = lost[n]
	}
	for _, node := range slices.Sorted(maps.Keys(rest)) {
		out = append(out, wire.NodeSkew{Node: node, Lost: lost[node], LongerSumNS: int64(longer[node])})
	}
	return out
}

// setLost notes (why != "") or clears that this agent lost node's agent
// during a slowdown.
func (a *Agent) setLost(node, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if why == "" {
		delete(a.lost, node)
	} else {
		a.lost[node] = why
	}
}

// peerLink is a connection to another node's agent.
type peerLink struct {
	node  string
	w     *wire.Conn
	pods  int
	timed bool         // it thaws at the length asked by itself (peerPrepared.Timed)
	lost  atomic.Bool  // no answer for a lease: no more frames are sent
	heard atomic.Int64 // when its last frame came (monotonic: since monoStart)
}

func dialPeer(p Peer, secret []byte, prep peerPrepare) (*peerLink, []string, error) {
	w, err := wire.Dial(p.Addr, secret, peerDialTimeout)
	if err != nil {
		return nil, nil, err
	}
	var ok peerPrepared
	if err := w.Call(wire.TConfigure, prep, &ok); err != nil {
		w.Close()
		return nil, nil, err
	}
	// A frame that cannot be written at once (the peer's window full:
	// it reads nothing) fails fast and the peer is lost, instead of
	// holding the round for the default timeout.
	w.Timeout = peerSendTimeout
	l := &peerLink{node: p.Node, w: w, pods: len(ok.Pods), timed: ok.Timed}
	l.heard.Store(int64(time.Since(monoStart)))
	return l, ok.Pods, nil
}

// RoundRecord is when each node froze and thawed its pods for one freeze
// (all on this agent's clock where the nodes share it, as the namespace
// cluster's do; otherwise each on its own).
type RoundRecord struct {
	Seq   uint64
	Nodes map[string]NodePause // by node; "" is this one
}

// NodePause is one node's freeze for one round.
type NodePause struct {
	Frozen, Thawed time.Time
	Capped         bool // thawed by its cap, not by the thaw
	Timed          bool // thawed by its own timer at the length asked
	Refrozen       bool // frozen again for a lengthening that came after its timer thawed
	Err            string
	// FreezeSent and FreezeRead are when the round's freeze frame was
	// sent and when the peer read it; ThawSent and ThawRead the same of
	// the thaw frame, where that frame thawed the node (zero: not
	// known, or its timer or cap thawed it first). The read times are by
	// the peer's clock.
	FreezeSent, FreezeRead, ThawSent, ThawRead time.Time
	// summed is how much longer than this node's this freeze was
	// counted as lasting in Agent.longer (its thaw may be reported
	// again, after a refreeze).
	summed time.Duration
}

// spanFreezer freezes pods on this node and on others (controller.PodFreezer).
type spanFreezer struct {
	a     *Agent
	local *pause.Freezer
	max   time.Duration
	links []*peerLink
	wg    sync.WaitGroup
	done  chan struct{}
	once  sync.Once

	mu      sync.Mutex
	seq     uint64
	thawn   bool          // the current round's thaw was sent
	planned time.Duration // the current round's length, as told the peers (0: none)
	recs    map[uint64]*RoundRecord
	order   []uint64
	fails   map[string]string // node: the last error sending to it
}

// Set freezes (the other nodes first: their frames are on the way while
// this node's pods freeze) or thaws (this node's and the others' at
// once) every pod.
func (f *spanFreezer) Set(frozen bool) error {
	if frozen {
		return f.freeze(0)
	}
	return f.thaw()
}

// Freeze freezes every pod for d (controller.TimedPodFreezer): the other
// nodes' agents that time their thaws are told d, and thaw once it has
// passed since their own freeze, if the thaw has not reached them first.
func (f *spanFreezer) Freeze(d time.Duration) error {
	return f.freeze(max(1, f.bound(d))) // 0 would be no length: thaw at the thaw frame
}

// Lengthen tells the agents that time their thaws that the freeze under
// way lasts d in all (controller.TimedPodFreezer); never shorter than
// already told.
func (f *spanFreezer) Lengthen(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d = f.bound(d)
	if f.thawn || f.planned == 0 || d <= f.planned {
		return
	}
	f.planned = d
	f.send(peerSet{Seq: f.seq, Frozen: true, ForNS: int64(d)}, true)
}

// bound keeps a length within the cap the peers were given.
func (f *spanFreezer) bound(d time.Duration) time.Duration {
	if f.max > 0 {
		d = min(d, f.max)
	}
	return d
}

// freeze freezes every pod, for d (0: until the thaw).
func (f *spanFreezer) freeze(d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	f.thawn = false
	f.planned = d
	rec := &RoundRecord{Seq: f.seq, Nodes: map[string]NodePause{}}
	f.recs[f.seq] = rec
	f.order = append(f.order, f.seq)
	if len(f.order) > keepRounds {
		delete(f.recs, f.order[0])
		f.order = f.order[1:]
	}
	f.send(peerSet{Seq: f.seq, Frozen: true, ForNS: int64(d)}, false)
	err := f.local.Set(true)
	rec.Nodes[""] = NodePause{Frozen: time.Now()}
	return err
}

// thaw thaws every pod: this node's while the thaw frames go out to the
// others, so that neither waits for the other (a peer's frame is not
// held up by this node's cgroup writes, nor this node's pods by a peer
// slow to take its frame, up to peerSendTimeout each).
func (f *spanFreezer) thaw() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.thawn {
		return f.local.Set(false) // a second thaw (the cap's and the pause's): nothing to tell the peers
	}
	f.thawn = true
	type thawed struct {
		err error
		at  time.Time
	}
	here := make(chan thawed, 1)
	go func() {
		err := f.local.Set(false)
		here <- thawed{err, time.Now()}
	}()
	f.send(peerSet{Seq: f.seq}, false)
	t := <-here
	if rec := f.recs[f.seq]; rec != nil {
		np := rec.Nodes[""]
		np.Thawed = t.at
		rec.Nodes[""] = np
		for _, l := range f.links {
			f.sumLonger(rec, l.node) // a peer whose own timer thawed it first
		}
	}
	return t.err
}

// send sends m to every peer not lost; the length only to those that
// time their thaws, a lengthening (timedOnly) to those alone.
func (f *spanFreezer) send(m peerSet, timedOnly bool) {
	for _, l := range f.links {
		if l.lost.Load() {
			continue // reported (NodeSkew.Lost); this node's pods still freeze
		}
		lm := m
		if !l.timed {
			if timedOnly {
				continue
			}
			lm.ForNS = 0
		}
		lm.SentUnixNS = time.Now().UnixNano()
		if err := l.w.Send(wire.TRound, lm); err != nil {
			// A frame half written leaves the connection unusable: the
			// peer is lost (it thaws when the connection ends, or at its
			// cap), and this node's pods go on freezing.
			f.a.log.Warn("lost the agent of another node: a frame could not be sent", "node", l.node, "err", err)
			f.a.setLost(l.node, fmt.Sprintf("a frame to its agent could not be sent (%v); its pods thaw within their cap there", err))
			l.lost.Store(true)
			l.w.Close()
		}
	}
}

// readAcks records a peer's freezes and thaws as it reports them.
func (f *spanFreezer) readAcks(l *peerLink) {
	defer f.wg.Done()
	// The peer answers every frame, and is sent one at least every
	// quarter lease: silent for a lease, it is lost (a cut network sends
	// no error).
	silence := f.a.peerLease()
	for {
		t, p, err := l.w.RecvLimit(silence, maxPeerFrame)
		if err != nil {
			select {
			case <-f.done:
			default:
				if l.lost.Load() {
					return // lost by send, which closed the connection: its reason stands
				}
				f.a.log.Warn("lost the agent of another node: its pods thaw within the cap", "node", l.node, "err", err)
				f.a.setLost(l.node, fmt.Sprintf("no answer from its agent (%v); its pods thaw within their cap there", err))
				l.lost.Store(true)
				l.w.Close()
			}
			return
		}
		l.heard.Store(int64(time.Since(monoStart)))
		var ack peerAck
		if t != wire.TOK || json.Unmarshal(p, &ack) != nil || ack.Seq == 0 {
			continue
		}
		at := time.Unix(0, ack.AtUnixNS)
		f.mu.Lock()
		if rec := f.recs[ack.Seq]; rec != nil {
			np := rec.Nodes[l.node]
			switch {
			case ack.Again:
				np.Refrozen = true
			case ack.Frozen:
				np.Frozen = at
				np.FreezeSent, np.FreezeRead = unixOrZero(ack.SentUnixNS), unixOrZero(ack.ReadUnixNS)
			default:
				np.Thawed, np.Capped, np.Timed = at, ack.Capped, ack.Timed
				np.ThawSent, np.ThawRead = unixOrZero(ack.SentUnixNS), unixOrZero(ack.ReadUnixNS)
			}
			if ack.Err != "" {
				np.Err = ack.Err
			}
			rec.Nodes[l.node] = np
			f.sumLonger(rec, l.node)
		}
		f.mu.Unlock()
	}
}

// unixOrZero is the time ns after the Unix epoch, or the zero time for 0.
func unixOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// sumLonger adds to the agent's running sum (Agent.longer) how much
// longer node's freeze in rec lasted than this node's, once both have
// thawed; a thaw reported again (after a refreeze) adds only the
// difference. f.mu is held.
func (f *spanFreezer) sumLonger(rec *RoundRecord, node string) {
	here, np := rec.Nodes[""], rec.Nodes[node]
	if here.Frozen.IsZero() || here.Thawed.IsZero() || np.Frozen.IsZero() || np.Thawed.IsZero() {
		return
	}
	v := np.Thawed.Sub(np.Frozen) - here.Thawed.Sub(here.Frozen)
	if v == np.summed {
		return
	}
	f.a.mu.Lock()
	f.a.longer[node] += v - np.summed
	f.a.mu.Unlock()
	np.summed = v
	rec.Nodes[node] = np
}

// allThawed says whether every peer reported the last round's thaw (or
// there was none).
func (f *spanFreezer) allThawed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.recs[f.seq]
	if rec == nil {
		return true
	}
	for _, l := range f.links {
		if np := rec.Nodes[l.node]; np.Thawed.IsZero() && np.Err == "" {
			return false
		}
	}
	return true
}

// peerLease is how long a peer may stay silent before it is lost: the
// agent's lease, or the wire's default timeout without one.
func (a *Agent) peerLease() time.Duration {
	if a.cfg.Lease > 0 {
		return a.cfg.Lease
	}
	return wire.DefaultTimeout
}

// monoStart is what peer links time their last frame from, on the
// monotonic clock: a wall clock stepped by half a lease must not lose a
// peer, nor hide one lost.
var monoStart = time.Now()

// loseSilent marks lost, as Close ends the freezer, every peer not lost
// yet that has sent nothing for half a lease (a second at least): readAcks loses a peer only
// after a lease of silence, and a slowdown can end sooner for the same
// cut (the target controller's own lease lapses where the orchestrator's
// renewals were held up by it, about a lease after the cut too); the loss
// would then go unreported, and the run would go on measuring without
// the slowdown. A peer that answers renews (every quarter lease) and
// rounds is never silent that long.
func (f *spanFreezer) loseSilent() {
	// Half a lease, at least the second Close has just waited for the
	// peers' thaws: a peer that answers at all answered that.
	silence := max(f.a.peerLease()/2, time.Second)
	for _, l := range f.links {
		quiet := time.Since(monoStart) - time.Duration(l.heard.Load())
		if l.lost.Load() || quiet < silence {
			continue
		}
		f.a.log.Warn("lost the agent of another node: silent as the slowdown ended", "node", l.node, "silent", quiet.Round(time.Millisecond))
		f.a.setLost(l.node, fmt.Sprintf("no answer from its agent for %v as the slowdown ended; its pods thaw within their cap there", quiet.Round(time.Millisecond)))
		l.lost.Store(true)
	}
}

// renew tells a peer, between rounds, that this agent is still there.
func (f *spanFreezer) renew(l *peerLink) {
	defer f.wg.Done()
	every := f.a.cfg.Lease / 4
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-t.C:
			l.w.Send(wire.TRenew, nil)
		}
	}
}

// Close thaws everything (the peers thaw as their connections end), and
// records the rounds' skew across nodes in the agent.
func (f *spanFreezer) Close() error {
	var err error
	f.once.Do(func() {
		// Thaw, and wait (a little) until every peer said it thawed: when
		// the slowdown has stopped, nothing is frozen anywhere. A peer
		// that does not answer thaws when its connection ends, below.
		err = f.Set(false)
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline) && !f.allThawed(); {
			time.Sleep(time.Millisecond)
		}
		f.loseSilent()
		close(f.done)
		for _, l := range f.links {
			l.w.Close()
		}
		f.wg.Wait()
		f.local.Close()
		if len(f.links) == 0 {
			return
		}
		f.mu.Lock()
		recs := make([]RoundRecord, 0, len(f.order))
		for _, s := range f.order {
			recs = append(recs, *f.recs[s])
		}
		f.mu.Unlock()
		sk := Skews(recs)
		f.a.mu.Lock()
		f.a.rounds = recs
		f.a.skews = sk
		f.a.all = append(f.a.all, recs...)
		if len(f.a.all) > keepAll {
			f.a.all = f.a.all[len(f.a.all)-keepAll:]
		}
		f.a.mu.Unlock()
		for _, s := range sk {
			f.a.log.Info("round skew across nodes", "node", s.Node, "rounds", s.Rounds, "missing", s.Missing, "capped", s.Capped,
				"timed", s.Timed, "refrozen", s.Refrozen,
				"start_p50", s.StartP50, "start_p99", s.StartP99, "start_max", s.StartMax,
				"end_p50", s.EndP50, "end_p99", s.EndP99, "end_max", s.EndMax,
				"late_start_p50", s.LateStartP50, "late_end_p50", s.LateEndP50,
				"longer_p1", s.LongerP1, "longer_p50", s.LongerP50, "longer_p99", s.LongerP99,
				"deliver_start_p50", s.DeliverStartP50, "deliver_start_p99", s.DeliverStartP99,
				"deliver_end_p50", s.DeliverEndP50, "deliver_end_p99", s.DeliverEndP99)
		}
	})
	return err
}

// Skew is how far one other node's freezes started and ended from this
// node's, over a run's rounds: the absolute differences' percentiles,
// and, signed, how late it froze and thawed and how much longer its
// freezes lasted than this node's (negative: sooner, shorter).
type Skew struct {
	Node                         string
	Rounds, Missing, Capped      int
	Timed, Refrozen              int // thawed by its own timer; frozen again for a late lengthening
	StartP50, StartP99, StartMax time.Duration
	EndP50, EndP99, EndMax       time.Duration
	// LateStartP50 and LateEndP50 are the medians of when it froze
	// (thawed) less when this node did.
	LateStartP50, LateEndP50 time.Duration
	// Longer: its freeze's length (thawed less frozen, a gap before a
	// freeze again included) less this node's, per round: the 1st, 50th
	// and 99th percentiles.
	LongerP1, LongerP50, LongerP99 time.Duration
	// DeliverStart and DeliverEnd are the freeze and the thaw frames'
	// delivery, from the initiator's send to the peer's read (the
	// rounds that reported both; the thaw frame's only where it, not
	// the peer's timer, thawed): 50th and 99th percentiles. The rest of
	// a skew is the two nodes' own work around the frame. On nodes
	// whose clocks differ, they include the offset.
	DeliverStartP50, DeliverStartP99 time.Duration
	DeliverEndP50, DeliverEndP99     time.Duration
}

// Skews summarises rounds' records, for each other node.
func Skews(recs []RoundRecord) []Skew {
	// Per node and round, when it froze and thawed less when this node
	// did (signed): everything below is derived from these.
	type lags struct{ start, end, deliverStart, deliverEnd []time.Duration }
	late := map[string]*lags{}
	out := map[string]*Skew{}
	for _, r := range recs {
		here, ok := r.Nodes[""]
		if !ok {
			continue
		}
		for node, np := range r.Nodes {
			if node == "" {
				continue
			}
			s := out[node]
			if s == nil {
				s = &Skew{Node: node}
				out[node] = s
			}
			if np.Frozen.IsZero() || np.Thawed.IsZero() || here.Thawed.IsZero() {
				s.Missing++
				continue
			}
			s.Rounds++
			if np.Capped {
				s.Capped++
			}
			if np.Timed {
				s.Timed++
			}
			if np.Refrozen {
				s.Refrozen++
			}
			l := late[node]
			if l == nil {
				l = &lags{}
				late[node] = l
			}
			l.start = append(l.start, np.Frozen.Sub(here.Frozen))
			l.end = append(l.end, np.Thawed.Sub(here.Thawed))
			if !np.FreezeSent.IsZero() && !np.FreezeRead.IsZero() {
				l.deliverStart = append(l.deliverStart, np.FreezeRead.Sub(np.FreezeSent))
			}
			if !np.ThawSent.IsZero() && !np.ThawRead.IsZero() {
				l.deliverEnd = append(l.deliverEnd, np.ThawRead.Sub(np.ThawSent))
			}
		}
	}
	var res []Skew
	for node, s := range out {
		if l := late[node]; l != nil {
			longer := make([]time.Duration, len(l.start))
			for i := range l.start {
				longer[i] = l.end[i] - l.start[i]
			}
			s.StartP50, s.StartP99, s.StartMax = pct(absAll(l.start))
			s.EndP50, s.EndP99, s.EndMax = pct(absAll(l.end))
			s.LateStartP50, _, _ = pct(l.start)
			s.LateEndP50, _, _ = pct(l.end)
			s.LongerP50, s.LongerP99, _ = pct(longer) // sorts longer
			s.LongerP1 = quantile(longer, 0.01)
			s.DeliverStartP50, s.DeliverStartP99, _ = pct(l.deliverStart)
			s.DeliverEndP50, s.DeliverEndP99, _ = pct(l.deliverEnd)
		}
		res = append(res, *s)
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Node < res[j].Node })
	return res
}

// absAll is ds with every value made non-negative, in a new slice.
func absAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = max(d, -d)
	}
	return out
}

// pct returns the median, the 99th percentile and the maximum (sorting
// ds).
func pct(ds []time.Duration) (p50, p99, mx time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	return quantile(ds, 0.5), quantile(ds, 0.99), ds[len(ds)-1]
}

// quantile is the q-quantile of ds, sorted (0 if none).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}
