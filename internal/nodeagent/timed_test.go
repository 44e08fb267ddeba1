package nodeagent

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Timed thaws (peer.go): a peer told a freeze's length thaws by itself
// once it has passed since its own freeze, sooner on a thaw frame, never
// later than its cap; a lengthening re-arms it, or freezes again if it
// came after the timer thawed and the round is not over. The lower
// bounds are exact (both ends on the peer's clock); the upper ones leave
// a loaded machine 200 ms.

// margin is how late, at most, a loaded machine may run a timer or a
// frame here.
const margin = 200 * time.Millisecond

// TestPeerTimedThaw drives a peer agent with frames, as an initiator.
func TestPeerTimedThaw(t *testing.T) {
	n := node(t)
	dirB := nodeDir(t, n, "node-b")
	oB := makePodUnder(t, n, dirB)
	sec := secret()
	const capB = 300 * time.Millisecond // the peer's own --max-pause
	b, err := Start(Config{Services: []Service{{Name: "o", Port: freePort(t), Pods: []string{oB.uid}}}, Host: "127.0.0.1",
		StateDir: t.TempDir(), Secret: sec, Lease: 3 * time.Second, MaxPause: capB, Logger: quiet(), Node: "b",
		PeerListen: "127.0.0.1:0", PodsUnder: dirB})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	const none = -1
	cases := []struct {
		name     string
		initCap  time.Duration // the initiator's cap (peerPrepare.MaxPauseNS)
		asked    time.Duration // with the freeze
		thaw     time.Duration // the thaw frame, this long after the freeze's ack (none: never)
		lengthen time.Duration // the length in all a lengthening asks for (0: none)
		late     bool          // the lengthening is sent once the first thaw's ack came, not at once
		refused  bool          // the freeze ends the connection
		refrozen bool          // the late lengthening froze again
		by       thawBy        // what ends the freeze
		atLeast  time.Duration // the freeze lasts that long at least, margin more at most
	}{
		{name: "no thaw frame", initCap: time.Second, asked: 30 * time.Millisecond, thaw: none, by: byTimer, atLeast: 30 * time.Millisecond},
		{name: "thaw frame late", initCap: time.Second, asked: 30 * time.Millisecond, thaw: 250 * time.Millisecond, by: byTimer, atLeast: 30 * time.Millisecond},
		{name: "thaw frame early", initCap: time.Second, asked: 250 * time.Millisecond, thaw: 0, by: byFrame},
		{name: "no length (an older initiator)", initCap: time.Second, thaw: 60 * time.Millisecond, by: byFrame, atLeast: 60 * time.Millisecond},
		{name: "no length, no thaw frame", initCap: time.Second, thaw: none, by: byCap, atLeast: capB},
		{name: "asked over the peer's own cap", initCap: time.Hour, asked: time.Second, thaw: none, by: byCap, atLeast: capB},
		{name: "lengthened while frozen", initCap: time.Second, asked: 30 * time.Millisecond, lengthen: 120 * time.Millisecond, thaw: none, by: byTimer, atLeast: 120 * time.Millisecond},
		{name: "lengthened past the peer's cap", initCap: time.Hour, asked: 30 * time.Millisecond, lengthen: time.Second, thaw: none, by: byCap, atLeast: capB},
		{name: "lengthened after its timer thawed", initCap: time.Second, asked: 20 * time.Millisecond, lengthen: 280 * time.Millisecond, late: true, refrozen: true, thaw: none, by: byTimer, atLeast: 280 * time.Millisecond},
		{name: "lengthened after the thaw frame", initCap: time.Second, asked: 250 * time.Millisecond, lengthen: 280 * time.Millisecond, late: true, thaw: 0, by: byFrame},
		{name: "negative length", initCap: time.Second, asked: -time.Millisecond, thaw: none, refused: true},
		{name: "length over the initiator's cap", initCap: 100 * time.Millisecond, asked: 200 * time.Millisecond, thaw: none, refused: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, acks := openPeer(t, b.PeerAddr(), sec, peerPrepare{Node: "test", Pods: []string{oB.uid}, MaxPauseNS: int64(c.initCap)})
			send := func(m peerSet) {
				if err := w.Send(wire.TRound, m); err != nil {
					t.Error(err)
				}
			}
			send(peerSet{Seq: 1, Frozen: true, ForNS: int64(c.asked)})
			if c.refused {
				if a, ok := nextAck(t, acks, true); ok {
					t.Fatalf("a freeze of %v answered %+v; want the connection ended", c.asked, a)
				}
				if frozen(t, n, oB) {
					t.Error("frozen after a refused freeze")
				}
				return
			}
			fa, _ := nextAck(t, acks, true)
			if !fa.Frozen || fa.Err != "" {
				t.Fatalf("freeze ack %+v", fa)
			}
			acked := time.Now()
			if c.lengthen > 0 && !c.late {
				send(peerSet{Seq: 1, Frozen: true, ForNS: int64(c.lengthen)})
			}
			if c.thaw != none {
				time.AfterFunc(c.thaw, func() { w.Send(wire.TRound, peerSet{Seq: 1}) })
			}
			ta, _ := nextAck(t, acks, true)
			if c.late {
				if ta.Frozen || (c.refrozen && !ta.Timed) {
					t.Fatalf("the first thaw: %+v", ta)
				}
				if c.refrozen && time.Since(acked) > c.lengthen-margin/2 {
					t.Skipf("this machine took %v to report a freeze of %v: too late to lengthen it", time.Since(acked), c.asked)
				}
				send(peerSet{Seq: 1, Frozen: true, ForNS: int64(c.lengthen)})
				ra, _ := nextAck(t, acks, false)
				if ra.Again != c.refrozen || (c.refrozen && (!ra.Frozen || ra.Err != "")) {
					t.Fatalf("a lengthening after the thaw answered %+v, want frozen again: %v", ra, c.refrozen)
				}
				if c.refrozen {
					ta, _ = nextAck(t, acks, true)
				}
			}
			took := time.Duration(ta.AtUnixNS - fa.AtUnixNS)
			t.Logf("thawed after %v: %+v", took, ta)
			if ta.Frozen || ta.Err != "" || ta.Timed != (c.by == byTimer) || ta.Capped != (c.by == byCap) {
				t.Errorf("thaw ack %+v, want ended by %v", ta, c.by)
			}
			if took < c.atLeast || took >= c.atLeast+margin {
				t.Errorf("frozen for %v, want %v to %v", took, c.atLeast, c.atLeast+margin)
			}
			if frozen(t, n, oB) {
				t.Error("frozen after its thaw's ack")
			}
		})
	}
}

// openPeer connects to a peer agent as an initiator and prepares; acks
// receives what it answers until the connection ends (closed then).
func openPeer(t *testing.T, addr string, sec []byte, prep peerPrepare) (*wire.Conn, <-chan peerAck) {
	t.Helper()
	w, err := wire.Dial(addr, sec, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	var ok peerPrepared
	if err := w.Call(wire.TConfigure, prep, &ok); err != nil {
		t.Fatal(err)
	}
	if !ok.Timed || len(ok.Pods) != 1 {
		t.Fatalf("prepared %+v, want a timed peer with one pod", ok)
	}
	acks := make(chan peerAck, 16)
	go func() {
		defer close(acks)
		for {
			_, p, err := w.Recv(-1)
			if err != nil {
				return
			}
			var a peerAck
			json.Unmarshal(p, &a)
			acks <- a
		}
	}()
	return w, acks
}

// nextAck is the next ack (of a round only: seqOnly), false if the
// connection ended first; none within 3 s fails the test.
func nextAck(t *testing.T, acks <-chan peerAck, seqOnly bool) (peerAck, bool) {
	t.Helper()
	timeout := time.After(3 * time.Second)
	for {
		select {
		case a, ok := <-acks:
			if !ok {
				return peerAck{}, false
			}
			if seqOnly && a.Seq == 0 {
				continue
			}
			return a, true
		case <-timeout:
			t.Fatal("no answer from the peer within 3 s")
		}
	}
}

func (b thawBy) String() string {
	return [...]string{"the thaw frame", "the cap", "its own timer"}[b]
}

// TestSpanFreezerTimed: the target's node freezes through a real peer
// agent with lengths (controller.TimedPodFreezer); the peer's pods thaw
// at the length asked, or lengthened, while the initiator's own stay
// frozen until it thaws them (a late thaw); an older peer is sent no
// lengths.
func TestSpanFreezerTimed(t *testing.T) {
	n := node(t)
	dirA, dirB := nodeDir(t, n, "node-a"), nodeDir(t, n, "node-b")
	tgt, oA, oB := makePodUnder(t, n, dirA), makePodUnder(t, n, dirA), makePodUnder(t, n, dirB)
	sec := secret()
	services := func() []Service {
		return []Service{{Name: "t", Port: freePort(t), Pods: []string{tgt.uid}}, {Name: "o", Port: freePort(t), Pods: []string{oA.uid, oB.uid}}}
	}
	a, _ := startNodes(t, sec, services, dirA, dirB) // caps of 100 ms
	const capd = 100 * time.Millisecond
	pf, err := spanningService{podService{a, []string{tgt.uid}}}.PodFreezer([]string{oA.uid, oB.uid}, capd)
	if err != nil {
		t.Fatal(err)
	}
	f := pf.(*spanFreezer)
	defer f.Close()
	tf := controller.TimedPodFreezer(f)
	rec := func(seq uint64) NodePause {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.recs[seq].Nodes["b"]
	}
	for i, c := range []struct {
		name            string
		asked, lengthen time.Duration
	}{
		{"asked, the thaw held back", 30 * time.Millisecond, 0},
		{"lengthened", 20 * time.Millisecond, 60 * time.Millisecond},
	} {
		seq := uint64(i + 1)
		if err := tf.Freeze(c.asked); err != nil {
			t.Fatal(err)
		}
		want := c.asked
		if c.lengthen > 0 {
			tf.Lengthen(c.lengthen)
			want = c.lengthen
		}
		waitFor(t, c.name+": b's thaw", 3*time.Second, func() bool { return !rec(seq).Thawed.IsZero() })
		np := rec(seq)
		took := np.Thawed.Sub(np.Frozen)
		t.Logf("%s: b frozen for %v: %+v", c.name, took, np)
		if !np.Timed || np.Capped || np.Err != "" || took < want || took >= want+margin {
			t.Errorf("%s: b frozen for %v (timed %v, capped %v), want %v by its own timer", c.name, took, np.Timed, np.Capped, want)
		}
		if !frozen(t, n, oA) {
			t.Errorf("%s: a's pod thawed before a thawed it", c.name)
		}
		if err := tf.Set(false); err != nil {
			t.Fatal(err)
		}
		if frozen(t, n, oA) || frozen(t, n, oB) {
			t.Errorf("%s: frozen after the thaw", c.name)
		}
	}
	tf.Lengthen(80 * time.Millisecond) // thawed: nothing to lengthen
	time.Sleep(20 * time.Millisecond)
	if frozen(t, n, oB) {
		t.Error("b froze again on a lengthening after the thaw")
	}

	// An older peer (no Timed in its answer) is sent no length, and no
	// lengthening.
	far := newUID()
	var mu sync.Mutex
	var got []peerSet
	addr := fakePeer(t, sec, peerPrepared{Node: "old", Pods: []string{far}}, func(w *wire.Conn, typ wire.Type, p []byte) {
		var m peerSet
		if typ == wire.TRound && json.Unmarshal(p, &m) == nil {
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
			w.Send(wire.TOK, peerAck{Seq: m.Seq, Frozen: m.Frozen, AtUnixNS: time.Now().UnixNano()})
		}
	})
	old, err := Start(Config{Services: []Service{{Name: "t", Port: freePort(t), Pods: []string{tgt.uid}}, {Name: "o", Port: freePort(t), Pods: []string{oA.uid, far}}},
		Host: "127.0.0.1", StateDir: t.TempDir(), Secret: sec, Lease: time.Second, MaxPause: capd, Logger: quiet(),
		Node: "a2", PodsUnder: dirA, Peers: []Peer{{Node: "old", Addr: addr}}})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	f.Close() // a's freezer: oA is frozen by one at a time
	pf2, err := spanningService{podService{old, []string{tgt.uid}}}.PodFreezer([]string{oA.uid, far}, capd)
	if err != nil {
		t.Fatal(err)
	}
	tf2 := pf2.(controller.TimedPodFreezer)
	tf2.Freeze(30 * time.Millisecond)
	tf2.Lengthen(60 * time.Millisecond)
	tf2.Set(false)
	tf2.Close()
	mu.Lock()
	defer mu.Unlock()
	for i := range got {
		if got[i].SentUnixNS == 0 {
			t.Errorf("frame %d carries no send time", i)
		}
		got[i].SentUnixNS = 0
	}
	if len(got) != 2 || got[0] != (peerSet{Seq: 1, Frozen: true}) || got[1] != (peerSet{Seq: 1}) {
		t.Errorf("an older peer was sent %+v, want a freeze and a thaw without lengths", got)
	}
}

// Skews derives the absolute skews, the signed lags and how much longer
// each remote freeze lasted from the rounds' times; a round a node did not
// report is counted missing.
func TestSkewsFromRecords(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	// here freezes at 0 and thaws at 4 ms every round; the node "b"
	// froze and thawed (late start, late end) as below.
	tests := []struct {
		name                  string
		b                     [][2]float64 // per round: froze, thawed
		startP50, startMax    time.Duration
		lateStart, lateEnd    time.Duration
		longerP50, longerP99  time.Duration
		rounds, missing, tmed int
	}{
		{name: "late, longer", b: [][2]float64{{1, 6}, {1, 6}, {1, 6}}, startP50: ms(1), startMax: ms(1), lateStart: ms(1), lateEnd: ms(2), longerP50: ms(1), longerP99: ms(1), rounds: 3, tmed: 3},
		{name: "early, shorter", b: [][2]float64{{-1, 2}, {-1, 2}, {-2, 3}}, startP50: ms(1), startMax: ms(2), lateStart: ms(-1), lateEnd: ms(-2), longerP50: ms(-1), longerP99: ms(1), rounds: 3, tmed: 3},
		{name: "one unreported", b: [][2]float64{{1, 5}, {0, 0}}, startP50: ms(1), startMax: ms(1), lateStart: ms(1), lateEnd: ms(1), longerP50: 0, longerP99: 0, rounds: 1, missing: 1, tmed: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var recs []RoundRecord
			for i, b := range tc.b {
				np := NodePause{Timed: true}
				if b != [2]float64{} {
					np.Frozen, np.Thawed = at(b[0]), at(b[1])
				}
				recs = append(recs, RoundRecord{Seq: uint64(i + 1), Nodes: map[string]NodePause{"": {Frozen: at(0), Thawed: at(4)}, "b": np}})
			}
			sk := Skews(recs)
			if len(sk) != 1 {
				t.Fatalf("Skews = %+v, want one node", sk)
			}
			s := sk[0]
			if s.Rounds != tc.rounds || s.Missing != tc.missing || s.Timed != tc.tmed ||
				s.StartP50 != tc.startP50 || s.StartMax != tc.startMax || s.LateStartP50 != tc.lateStart || s.LateEndP50 != tc.lateEnd ||
				s.LongerP50 != tc.longerP50 || s.LongerP99 != tc.longerP99 {
				t.Errorf("Skews = %+v", s)
			}
		})
	}
}

// Skews measures each frame's way from when the initiator sent it to
// when the peer read it, the thaw frame's only where it thawed the node
// (the peer's timer, not the frame, ended the second round).
func TestSkewsDelivery(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	here := NodePause{Frozen: at(0), Thawed: at(4000)}
	recs := []RoundRecord{
		{Seq: 1, Nodes: map[string]NodePause{"": here, "b": {Frozen: at(300), Thawed: at(4500),
			FreezeSent: at(-10), FreezeRead: at(200), ThawSent: at(4010), ThawRead: at(4410)}}},
		{Seq: 2, Nodes: map[string]NodePause{"": here, "b": {Frozen: at(150), Thawed: at(4150), Timed: true,
			FreezeSent: at(-10), FreezeRead: at(90)}}},
		{Seq: 3, Nodes: map[string]NodePause{"": here, "b": {Frozen: at(100), Thawed: at(4100)}}}, // an older peer: no frame times
	}
	sk := Skews(recs)
	if len(sk) != 1 {
		t.Fatalf("Skews = %+v, want one node", sk)
	}
	s := sk[0]
	us := func(v int) time.Duration { return time.Duration(v) * time.Microsecond }
	// Freeze frames: 100 and 210 µs; the median of two is the upper.
	if s.DeliverStartP50 != us(210) || s.DeliverStartP99 != us(210) || s.DeliverEndP50 != us(400) || s.DeliverEndP99 != us(400) {
		t.Errorf("delivery: freeze %v / %v, thaw %v / %v", s.DeliverStartP50, s.DeliverStartP99, s.DeliverEndP50, s.DeliverEndP99)
	}
}
