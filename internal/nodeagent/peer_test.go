package nodeagent

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/podcgroup"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Two "nodes" on this host: each a directory of the hierarchies that its
// agent's pods are under (Config.PodsUnder), as two kubelets with their
// own cgroup roots lay them out, each agent touching only its own; the
// rounds travel between them over TCP, as between nodes.

// nodeDir makes a node's kubelet root in each hierarchy, removed when the
// test ends (after its pods', which makePodUnder removes).
func nodeDir(t *testing.T, n podcgroup.Node, name string) string {
	t.Helper()
	dir := fmt.Sprintf("slowpoke-agenttest-%d-%s", os.Getpid(), name)
	t.Cleanup(func() {
		for _, tree := range []string{n.Freezer, n.CPU} {
			os.Remove(filepath.Join(tree, dir))
		}
	})
	return dir
}

// TestAgentFreezesAcrossNodes: the target's controller on node A freezes
// the other service's pods on A itself and, through B's agent, on B, at
// every round; each node's freezes are recorded, and the skew between them
// is small. B's agent thaws at its own cap when no thaw comes, and as soon
// as the connection ends; it refuses pods of no service of the run, and
// frames without the secret.
func TestAgentFreezesAcrossNodes(t *testing.T) {
	n := node(t)
	dirA, dirB := nodeDir(t, n, "node-a"), nodeDir(t, n, "node-b")
	tgt, oA, oB := makePodUnder(t, n, dirA), makePodUnder(t, n, dirA), makePodUnder(t, n, dirB)
	sec := secret()
	services := func(pt, po int) []Service {
		return []Service{{Name: "t", Port: pt, Pods: []string{tgt.uid}}, {Name: "o", Port: po, Pods: []string{oA.uid, oB.uid}}}
	}
	const maxPause = 100 * time.Millisecond
	b, err := Start(Config{Services: services(freePort(t), freePort(t)), Host: "127.0.0.1", StateDir: t.TempDir(), Secret: sec,
		Lease: time.Second, MaxPause: maxPause, Logger: quiet(), Node: "b", PeerListen: "127.0.0.1:0", PodsUnder: dirB})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := Start(Config{Services: services(freePort(t), freePort(t)), Host: "127.0.0.1", StateDir: t.TempDir(), Secret: sec,
		Lease: time.Second, MaxPause: maxPause, Logger: quiet(), Node: "a", PodsUnder: dirA, Peers: []Peer{{Node: "b", Addr: b.PeerAddr()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// Each agent sees only its node's pods.
	if _, err := a.find(oB.uid); err == nil || !strings.Contains(err.Error(), "not on this node") {
		t.Errorf("agent a finds b's pod: %v", err)
	}
	c := controller.NewClient(a.Addr("t"), sec)
	defer c.Close()

	// A pod on no node: refused.
	err = c.Configure(wire.Configure{Epoch: 1, Target: true, Batch: 1, CPUPerCallNS: 1000, PausePerRoundNS: int64(time.Millisecond),
		Pause: wire.Pause{Cgroup: &wire.CgroupPause{Pods: []string{oA.uid, newUID()}}}})
	if err == nil {
		err = c.Start()
		c.Stop()
	}
	if err == nil || !strings.Contains(err.Error(), "none of this run's") {
		t.Errorf("a pod of no service of the run: %v", err)
	}

	// Rounds every 10 ms of the target's CPU, 5 ms each, for 600 ms.
	freezeOthers(t, c, 10, 5*time.Millisecond, oA.uid, oB.uid)
	sawB := false
	for end := time.Now().Add(600 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		sawB = sawB || frozen(t, n, oB)
	}
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	c.Stop()
	if !sawB || st.Pauses == 0 {
		t.Fatalf("b's pod frozen: %v; %d pauses", sawB, st.Pauses)
	}
	waitFor(t, "the run's records", 2*time.Second, func() bool { return len(a.Skews()) == 1 })
	if frozen(t, n, oA) || frozen(t, n, oB) {
		t.Error("a pod is frozen after Stop")
	}
	sk := a.Skews()[0]
	recs := a.Rounds()
	t.Logf("%d rounds, %d pauses; node b: %+v", len(recs), st.Pauses, sk)
	if sk.Node != "b" || sk.Rounds < len(recs)*9/10 || sk.Rounds == 0 {
		t.Errorf("node b's records: %+v of %d rounds", sk, len(recs))
	}
	if sk.StartP50 > 5*time.Millisecond || sk.EndP50 > 5*time.Millisecond {
		t.Errorf("skew across nodes (loopback): start p50 %v, end p50 %v", sk.StartP50, sk.EndP50)
	}
	// Every freeze frame was read, so its way there is measured: after
	// it was sent, and (loopback) within the same bound as the skew.
	if sk.DeliverStartP50 <= 0 || sk.DeliverStartP50 > 5*time.Millisecond {
		t.Errorf("freeze frames' delivery (loopback): p50 %v", sk.DeliverStartP50)
	}
	for _, r := range recs {
		if np := r.Nodes["b"]; !np.Frozen.IsZero() && !np.Thawed.IsZero() && np.Thawed.Sub(np.Frozen) > maxPause+50*time.Millisecond {
			t.Errorf("round %d: b frozen for %v, over its cap", r.Seq, np.Thawed.Sub(np.Frozen))
		}
	}

	// An initiator that freezes and falls silent: b thaws at its cap, then
	// ends the connection after the lease.
	w, err := wire.Dial(b.PeerAddr(), sec, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var prep peerPrepared
	if err := w.Call(wire.TConfigure, peerPrepare{Node: "test", Pods: []string{oA.uid, oB.uid}, MaxPauseNS: int64(time.Hour)}, &prep); err != nil {
		t.Fatal(err)
	}
	if len(prep.Pods) != 1 || prep.Pods[0] != oB.uid || prep.Node != "b" {
		t.Fatalf("b prepared %+v, want its own pod only", prep)
	}
	start := time.Now()
	if err := w.Send(wire.TRound, peerSet{Seq: 1, Frozen: true}); err != nil {
		t.Fatal(err)
	}
	acks := make(chan peerAck, 4)
	go func() {
		for {
			_, p, err := w.Recv(-1)
			if err != nil {
				close(acks)
				return
			}
			var ack peerAck
			json.Unmarshal(p, &ack)
			acks <- ack
		}
	}()
	if ack := <-acks; !ack.Frozen || ack.Err != "" {
		t.Fatalf("freeze ack %+v", ack)
	}
	ack := <-acks
	if ack.Frozen || !ack.Capped || frozen(t, n, oB) {
		t.Fatalf("after the cap: ack %+v, frozen %v", ack, frozen(t, n, oB))
	}
	if d := time.Since(start); d < maxPause || d > maxPause+100*time.Millisecond {
		t.Errorf("thawed at its cap after %v, want about %v (the smaller of the initiator's hour and its own)", d, maxPause)
	}
	select {
	case _, ok := <-acks:
		if ok {
			t.Error("an ack after the cap's")
		}
	case <-time.After(3 * time.Second):
		t.Error("b kept the connection of an initiator silent past the lease")
	}

	// An initiator that ends mid-freeze: thawed at once.
	w2, err := wire.Dial(b.PeerAddr(), sec, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Call(wire.TConfigure, peerPrepare{Node: "test", Pods: []string{oB.uid}}, &prep); err != nil {
		t.Fatal(err)
	}
	w2.Send(wire.TRound, peerSet{Seq: 1, Frozen: true})
	waitFor(t, "b's freeze", time.Second, func() bool { return frozen(t, n, oB) })
	w2.Close()
	waitFor(t, "b's thaw once the initiator is gone", 50*time.Millisecond, func() bool { return !frozen(t, n, oB) })

	// Pods of no service of the run, and a wrong secret: refused.
	w3, err := wire.Dial(b.PeerAddr(), sec, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Close()
	if err := w3.Call(wire.TConfigure, peerPrepare{Pods: []string{newUID()}}, nil); err == nil || !strings.Contains(err.Error(), "none of this run's") {
		t.Errorf("a pod of no service of the run: %v", err)
	}
	if w4, err := wire.Dial(b.PeerAddr(), secret(), time.Second); err == nil {
		w4.Close()
		t.Error("a peer without the secret was greeted")
	}
}

// TestAgentTargetAcrossNodes: a target with a pod on each node; its
// controller, in node A's agent, counts the CPU time of both (B's agent
// says B's), and still freezes only the other service's pods.
func TestAgentTargetAcrossNodes(t *testing.T) {
	n := node(t)
	dirA, dirB := nodeDir(t, n, "node-a"), nodeDir(t, n, "node-b")
	tA, tB, oB := makePodUnder(t, n, dirA), makePodUnder(t, n, dirB), makePodUnder(t, n, dirB)
	sec := secret()
	services := []Service{{Name: "t", Port: 0, Pods: []string{tA.uid, tB.uid}}, {Name: "o", Port: 0, Pods: []string{oB.uid}}}
	withPorts := func() []Service {
		s := append([]Service(nil), services...)
		for i := range s {
			s[i].Port = freePort(t)
		}
		return s
	}
	a, _ := startNodes(t, sec, withPorts, dirA, dirB)
	c := controller.NewClient(a.Addr("t"), sec)
	defer c.Close()
	podCPU := func(p fakePod) time.Duration {
		pod, err := n.Find(p.uid)
		if err != nil {
			t.Fatal(err)
		}
		d, err := pod.CPU()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	st0, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	a0, b0 := podCPU(tA), podCPU(tB)
	time.Sleep(300 * time.Millisecond)
	st1, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	a1, b1 := podCPU(tA), podCPU(tB)
	got, want := time.Duration(st1.CPUNS-st0.CPUNS), (a1-a0)+(b1-b0)
	t.Logf("the target's CPU over 300 ms: %v by its controller on a, %v on a and %v on b by their cgroups", got, a1-a0, b1-b0)
	if b1-b0 < 10*time.Millisecond || got < (a1-a0)+(b1-b0)/2 || got > want+want/4+20*time.Millisecond {
		t.Errorf("the target's controller counted %v, want about %v (%v on a, %v on b)", got, want, a1-a0, b1-b0)
	}
	// Rounds follow both pods' CPU and freeze the other service's pod on b,
	// never the target's there.
	freezeOthers(t, c, 10, 5*time.Millisecond, oB.uid)
	sawO, sawT := false, false
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		sawO = sawO || frozen(t, n, oB)
		sawT = sawT || frozen(t, n, tB)
	}
	c.Stop()
	if !sawO || sawT {
		t.Errorf("the other service's pod on b frozen: %v; the target's: %v", sawO, sawT)
	}
}

// TestAgentLosesPeer: node B's agent ends mid-slowdown (its pods thaw as
// it ends); A's target controller reports B lost in its stats (the
// orchestrator ends the run on it, naming the node) and keeps freezing
// the pods of its own node.
func TestAgentLosesPeer(t *testing.T) {
	n := node(t)
	dirA, dirB := nodeDir(t, n, "node-a"), nodeDir(t, n, "node-b")
	tgt, oA, oB := makePodUnder(t, n, dirA), makePodUnder(t, n, dirA), makePodUnder(t, n, dirB)
	sec := secret()
	services := func() []Service {
		return []Service{{Name: "t", Port: freePort(t), Pods: []string{tgt.uid}}, {Name: "o", Port: freePort(t), Pods: []string{oA.uid, oB.uid}}}
	}
	a, b := startNodes(t, sec, services, dirA, dirB)
	c := controller.NewClient(a.Addr("t"), sec)
	defer c.Close()
	freezeOthers(t, c, 1, 20*time.Millisecond, oA.uid, oB.uid)
	waitFor(t, "b's pod frozen", 2*time.Second, func() bool { return frozen(t, n, oB) })
	b.Close()
	if frozen(t, n, oB) {
		t.Error("b's pod frozen after its agent ended")
	}
	var lost string
	waitFor(t, "b reported lost", 2*time.Second, func() bool {
		st, err := c.Stats()
		if err != nil {
			return false
		}
		lost = lostNode(st, "b")
		return lost != ""
	})
	t.Logf("b lost: %s", lost)
	st0, _ := c.Stats()
	waitFor(t, "a's own pods still frozen at rounds", 2*time.Second, func() bool {
		st, err := c.Stats()
		return err == nil && st.Pauses > st0.Pauses+2
	})
	c.Stop()
}

// TestAgentPeerSilent: a peer that takes the prepare and then answers
// nothing (a cut network sends no error) is reported lost after a lease.
func TestAgentPeerSilent(t *testing.T) {
	c := freezeWithFarPeer(t, "silent", time.Second, nil)
	start := time.Now()
	waitFor(t, "the silent peer reported lost", 3*time.Second, func() bool {
		st, err := c.Stats()
		if err != nil {
			return false
		}
		// The orchestrator's lease (1 s, renewed by nothing here) may
		// have ended the slowdown by then: the loss is still reported.
		if lost := lostNode(st, "silent"); lost != "" {
			t.Logf("lost after %v: %s", time.Since(start).Round(time.Millisecond), lost)
			return true
		}
		return false
	})
	c.Stop()
}

// freezeWithFarPeer starts an agent of node "a" with the lease given,
// whose target t freezes a pod of its own node and one on node far,
// through fakePeer (onFrame as there), every 5 ms; it returns the target
// controller's client. Everything is closed when the test ends.
func freezeWithFarPeer(t *testing.T, far string, lease time.Duration, onFrame func(w *wire.Conn, typ wire.Type, payload []byte)) *controller.Client {
	t.Helper()
	n := node(t)
	dirA := nodeDir(t, n, "node-a")
	tgt, oA := makePodUnder(t, n, dirA), makePodUnder(t, n, dirA)
	farPod := newUID()
	sec := secret()
	addr := fakePeer(t, sec, peerPrepared{Node: far, Pods: []string{farPod}}, onFrame)
	a, err := Start(Config{Services: []Service{{Name: "t", Port: freePort(t), Pods: []string{tgt.uid}}, {Name: "o", Port: freePort(t), Pods: []string{oA.uid, farPod}}},
		Host: "127.0.0.1", StateDir: t.TempDir(), Secret: sec, Lease: lease, MaxPause: 100 * time.Millisecond, Logger: quiet(),
		Node: "a", PodsUnder: dirA, Peers: []Peer{{Node: far, Addr: addr}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	c := controller.NewClient(a.Addr("t"), sec)
	t.Cleanup(func() { c.Close() })
	freezeOthers(t, c, 1, 5*time.Millisecond, oA.uid, farPod)
	return c
}

// lostNode is why st says its agent lost node's agent ("" for not lost).
func lostNode(st *wire.Stats, node string) string {
	for _, k := range st.NodeSkews {
		if k.Node == node {
			return k.Lost
		}
	}
	return ""
}

// TestAgentPeerSilentAtStop: a peer silent since the prepare, with the
// slowdown stopped after half a lease of silence but before a whole one
// (the target controller's own lease can lapse as soon, for the same
// cut), is reported lost all the same; a peer that answers is not.
func TestAgentPeerSilentAtStop(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer bool
	}{{"silent", false}, {"answering", true}} {
		t.Run(tt.name, func(t *testing.T) {
			var onFrame func(w *wire.Conn, typ wire.Type, payload []byte)
			if tt.answer {
				onFrame = func(w *wire.Conn, typ wire.Type, payload []byte) { w.Send(wire.TOK, peerAck{}) }
			}
			// Stopping waits up to a second for the peers' thaws: stopped
			// at half a lease and 300 ms, it ends before a whole lease.
			const lease = 4 * time.Second
			c := freezeWithFarPeer(t, "far", lease, onFrame)
			start := time.Now()
			time.Sleep(lease/2 + 300*time.Millisecond)
			if err := c.Stop(); err != nil {
				t.Fatal(err)
			}
			if since := time.Since(start); since >= lease {
				t.Skipf("stopped %v after the start, not within the lease %v (a loaded host): the lease's own loss would hide what is tested", since, lease)
			}
			st, err := c.Stats()
			if err != nil {
				t.Fatal(err)
			}
			lost := lostNode(st, "far")
			if (lost != "") == tt.answer {
				t.Fatalf("lost %q; want lost: %v", lost, !tt.answer)
			}
			t.Logf("lost: %q", lost)
		})
	}
}

// startNodes starts the agents of two nodes, a (which starts rounds, with
// b as its peer) and b (which listens for a), each with its own services
// (services is called once per node, for free ports) and pods under its
// own directory; both are closed when the test ends.
func startNodes(t *testing.T, sec []byte, services func() []Service, dirA, dirB string) (a, b *Agent) {
	t.Helper()
	b, err := Start(Config{Services: services(), Host: "127.0.0.1", StateDir: t.TempDir(), Secret: sec,
		Lease: time.Second, MaxPause: 100 * time.Millisecond, Logger: quiet(), Node: "b", PeerListen: "127.0.0.1:0", PodsUnder: dirB})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	a, err = Start(Config{Services: services(), Host: "127.0.0.1", StateDir: t.TempDir(), Secret: sec,
		Lease: time.Second, MaxPause: 100 * time.Millisecond, Logger: quiet(), Node: "a", PodsUnder: dirA, Peers: []Peer{{Node: "b", Addr: b.PeerAddr()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, b
}

// fakePeer is another node's agent, of an older version or cut off, on
// loopback: it takes one initiator's prepare, answers prep, and hands
// every frame after it to onFrame (nil: reads them and answers nothing)
// until the connection ends. It returns its address.
func fakePeer(t *testing.T, sec []byte, prep peerPrepared, onFrame func(w *wire.Conn, typ wire.Type, payload []byte)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		w, err := wire.Server(c, sec)
		if err != nil {
			return
		}
		w.Recv(0)
		w.Send(wire.TOK, prep)
		for {
			typ, p, err := w.Recv(-1)
			if err != nil {
				return
			}
			if onFrame != nil {
				onFrame(w, typ, p)
			}
		}
	}()
	return ln.Addr().String()
}

// TestAgentLongerSum: the agent keeps a running sum of how much longer
// each other node's freezes lasted than its own, updated as each round's
// thaws are known (so the target controller's Stats give it per window);
// a thaw reported again (after a refreeze) adds only the difference.
//
// The sum is checked against the rounds' own records, not against the
// far node's lateness alone: this node's freeze and thaw run beside the
// frames, so how long its own pauses lasted depends on the scheduler.
func TestAgentLongerSum(t *testing.T) {
	n := node(t)
	dirA := nodeDir(t, n, "node-a")
	tgt, oA := makePodUnder(t, n, dirA), makePodUnder(t, n, dirA)
	farPod := newUID()
	sec := secret()
	const late = 20 * time.Millisecond // the far node says it thawed this much after the thaw came
	var (
		mu       sync.Mutex
		reported = map[uint64]int64{} // the far node's last reported thaw, by round
	)
	addr := fakePeer(t, sec, peerPrepared{Node: "far", Pods: []string{farPod}}, func(w *wire.Conn, typ wire.Type, p []byte) {
		var m peerSet
		if typ != wire.TRound || json.Unmarshal(p, &m) != nil {
			return
		}
		if m.Frozen {
			w.Send(wire.TOK, peerAck{Seq: m.Seq, Frozen: true, AtUnixNS: time.Now().UnixNano()})
			return
		}
		ats := []int64{time.Now().Add(late).UnixNano()}
		if m.Seq == 3 { // round 3's thaw reported again, 10 ms later still
			ats = append(ats, time.Now().Add(late+10*time.Millisecond).UnixNano())
		}
		mu.Lock()
		reported[m.Seq] = ats[len(ats)-1] // the one the agent must end with
		mu.Unlock()
		for _, at := range ats {
			w.Send(wire.TOK, peerAck{Seq: m.Seq, AtUnixNS: at})
		}
	})
	a, err := Start(Config{Services: []Service{{Name: "t", Port: freePort(t), Pods: []string{tgt.uid}}, {Name: "o", Port: freePort(t), Pods: []string{oA.uid, farPod}}},
		Host: "127.0.0.1", StateDir: t.TempDir(), Secret: sec, Lease: time.Second, MaxPause: 100 * time.Millisecond, Logger: quiet(),
		Node: "a", PodsUnder: dirA, Peers: []Peer{{Node: "far", Addr: addr}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	svc := spanningService{podService{a, []string{tgt.uid}}}
	pf, err := svc.PodFreezer([]string{oA.uid, farPod}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	sf := pf.(*spanFreezer)
	sum := func() (time.Duration, int) {
		for _, k := range svc.NodeSkews() {
			if k.Node == "far" {
				return time.Duration(k.LongerSumNS), k.Rounds
			}
		}
		return 0, 0
	}
	const rounds = 5
	for range rounds {
		if err := pf.Set(true); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		if err := pf.Set(false); err != nil {
			t.Fatal(err)
		}
	}
	// want is the sum the rounds' records give, once the agent has read
	// every thaw the far node reported (round 3's second one included).
	want := func() (time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		sf.mu.Lock()
		defer sf.mu.Unlock()
		var w time.Duration
		for seq := uint64(1); seq <= rounds; seq++ {
			rec := sf.recs[seq]
			if rec == nil || reported[seq] == 0 {
				return 0, false
			}
			here, far := rec.Nodes[""], rec.Nodes["far"]
			if far.Thawed.UnixNano() != reported[seq] || here.Thawed.IsZero() {
				return 0, false
			}
			w += far.Thawed.Sub(far.Frozen) - here.Thawed.Sub(here.Frozen)
		}
		return w, true
	}
	var exp time.Duration
	waitFor(t, "the far node's thaws", 5*time.Second, func() bool {
		var ok bool
		exp, ok = want()
		return ok
	})
	got, n0 := sum()
	t.Logf("running sum %v over %d rounds, from the records %v, before the run's end (%d summarised)", got, rounds, exp, n0)
	if got != exp || n0 != 0 {
		t.Errorf("running sum %v with %d rounds summarised during the run, want %v (the records') and none", got, n0, exp)
	}
	// Direction: every far freeze was reported 20 ms late, round 3's 30.
	if lo := rounds * late / 2; got < lo {
		t.Errorf("running sum %v, want at least %v: the far node's freezes were reported longer", got, lo)
	}
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	if after, n1 := sum(); after != got || n1 != rounds {
		t.Errorf("after the run: sum %v over %d rounds, want %v over %d", after, n1, got, rounds)
	}
}
