package controller

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestAlarm(t *testing.T) {
	fallback := &alarm{C: make(chan struct{}, 1), fd: -1} // as when no timerfd can be had
	alarms := map[string]*alarm{"timerfd": newAlarm(), "Go timer": fallback}
	defer alarms["timerfd"].close()
	if alarms["timerfd"].fd < 0 {
		t.Fatal("no timerfd")
	}
	for name, a := range alarms {
		for _, d := range []time.Duration{-time.Millisecond, 0, 200 * time.Microsecond, 2 * time.Millisecond} {
			start := time.Now()
			a.set(d)
			select {
			case <-a.C:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: set(%v) never fired", name, d)
			}
			// Never early; late by a busy machine's scheduling at most.
			if got := time.Since(start); got < d || got > max(d, 0)+time.Second {
				t.Errorf("%s: set(%v) fired after %v", name, d, got)
			}
		}
		// Re-arming replaces the earlier time; stop disarms.
		a.set(time.Hour)
		a.set(time.Millisecond)
		select {
		case <-a.C:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: re-armed alarm never fired", name)
		}
		armed := time.Now()
		a.set(200 * time.Millisecond)
		a.stop()
		late := time.Since(armed) > 100*time.Millisecond // this goroutine was held up
		select {
		case <-a.C:
			if !late {
				t.Errorf("%s: a stopped alarm fired", name)
			}
		case <-time.After(400 * time.Millisecond):
		}
	}
}

// BenchmarkStopLateness reports how late stops due at a given time start
// (late-µs/stop) and how much longer than asked the longest lasted
// (worst-overrun-µs), for 3 ms stops due 2 ms ahead: what services sharing
// a core see when they are meant to stop together. The signal is a no-op,
// so only the pauser's own timing is measured.
func BenchmarkStopLateness(b *testing.B) {
	p := newPauser(time.Second, signalStopper(func(bool) error { return nil }))
	defer p.Close()
	const pause, lead = 3 * time.Millisecond, 2 * time.Millisecond
	for i := 0; i < b.N; i++ {
		p.PauseAt(pause, time.Now().Add(lead))
		want := uint64(i + 1)
		for p.stats().pauses < want {
			time.Sleep(100 * time.Microsecond)
		}
	}
	st := p.stats()
	if st.due > 0 {
		b.ReportMetric(float64(st.late.Microseconds())/float64(st.due), "late-µs/stop")
	}
	b.ReportMetric(float64((st.longest - pause).Microseconds()), "worst-overrun-µs")
}

// gaining is a peers' CPU clock that gains step on every read after the
// first (read by the pauser's goroutine only).
func gaining(step time.Duration) func() time.Duration {
	var reads time.Duration
	return func() time.Duration {
		v := reads
		reads += step
		return v
	}
}

func TestPeerExtension(t *testing.T) {
	const pause = 30 * time.Millisecond
	tests := []struct {
		name string
		step time.Duration // what the peers' clock gains per read after the first
		want time.Duration // extension
	}{
		// A peer that keeps running gains on every read; the stop is
		// extended once, by what it used up to the stop's asked end.
		{"peer ran during the stop: extended once", 20 * time.Millisecond, 20 * time.Millisecond},
		{"peers stopped too: not extended", 0, 0},
		{"too little to be worth a timer", minExtension / 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPauser(time.Second, signalStopper(func(bool) error { return nil }))
			defer p.Close()
			p.setOthers(nil, gaining(tt.step))
			p.Pause(pause)
			waitFor(t, "the stop to end", 5*time.Second, func() bool { return p.stats().pauses == 1 })
			st := p.stats()
			if st.extended != tt.want {
				t.Fatalf("extended by %v, want %v", st.extended, tt.want)
			}
			if st.actual < pause+tt.want {
				t.Fatalf("stopped %v, want at least %v", st.actual, pause+tt.want)
			}
		})
	}
}

// A snapshot taken during a stop counts the stop so far: a measurement
// window's edge that falls inside a stop of tens of milliseconds reads the
// pause received up to the edge, not up to the last stop that ended.
func TestStatsCountStopInProgress(t *testing.T) {
	stopped := make(chan struct{}, 1)
	p := newPauser(time.Second, signalStopper(func(stop bool) error {
		if stop {
			stopped <- struct{}{}
		}
		return nil
	}))
	defer p.Close()
	p.Pause(400 * time.Millisecond)
	<-stopped
	// The stop counts as begun once the pauser has marked it.
	for deadline := time.Now().Add(time.Second); p.stats().actual == 0; {
		if time.Now().After(deadline) {
			t.Fatal("a stop in progress is not counted")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	mid := p.stats()
	if mid.pauses != 0 {
		t.Fatalf("the stop ended early: %d pauses counted", mid.pauses)
	}
	// At least the 100 ms slept; at most the 400 ms asked (the stop has
	// not ended).
	if mid.actual < 100*time.Millisecond || mid.actual > 400*time.Millisecond {
		t.Fatalf("mid-stop actual = %v, want between 100 ms and 400 ms", mid.actual)
	}
	p.Halt()
	for p.stats().pauses == 0 {
		time.Sleep(time.Millisecond)
	}
	if end := p.stats(); end.actual < mid.actual {
		t.Fatalf("actual went back from %v to %v when the stop ended", mid.actual, end.actual)
	}
}

// timedFake is a timedStopper that records what it is told.
type timedFake struct {
	mu                sync.Mutex
	stopFors, lengths []time.Duration
	plain             int // stops without a length
}

func (f *timedFake) stop() error { f.mu.Lock(); f.plain++; f.mu.Unlock(); return nil }
func (f *timedFake) cont()       {}
func (f *timedFake) stopFor(d time.Duration) error {
	f.mu.Lock()
	f.stopFors = append(f.stopFors, d)
	f.mu.Unlock()
	return nil
}
func (f *timedFake) lengthen(d time.Duration) {
	f.mu.Lock()
	f.lengths = append(f.lengths, d)
	f.mu.Unlock()
}

// TestTimedStopperTold: a timed stopper (the freezer of pods on other
// nodes, whose agents thaw on time themselves) is told each stop's length
// as it starts, within the cap, and its new length whenever it grows: by
// pause asked for meanwhile, by the peers' extension at its end.
func TestTimedStopperTold(t *testing.T) {
	const long = 300 * time.Millisecond
	tests := []struct {
		name     string
		max      time.Duration
		pause    time.Duration
		more     time.Duration // asked for once the stop began
		peers    time.Duration // the peers' extension
		want     time.Duration // the stop's first length told
		lengths  []time.Duration
		haltSeen bool // halt the stop once the lengthening was told
	}{
		{name: "as asked", max: time.Second, pause: 30 * time.Millisecond, want: 30 * time.Millisecond},
		{name: "within the cap", max: 50 * time.Millisecond, pause: 80 * time.Millisecond, want: 50 * time.Millisecond},
		{name: "asked for more meanwhile", max: time.Second, pause: long, more: 20 * time.Millisecond, want: long,
			lengths: []time.Duration{long + 20*time.Millisecond}, haltSeen: true},
		{name: "extended for the peers", max: time.Second, pause: 30 * time.Millisecond, peers: 20 * time.Millisecond,
			want: 30 * time.Millisecond, lengths: []time.Duration{50 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &timedFake{}
			p := newPauser(tt.max, f)
			defer p.Close()
			p.setOthers(nil, gaining(tt.peers))
			p.Pause(tt.pause)
			told := func() (stopFors, lengths []time.Duration) {
				f.mu.Lock()
				defer f.mu.Unlock()
				return slices.Clone(f.stopFors), slices.Clone(f.lengths)
			}
			waitFor(t, "the stop", 5*time.Second, func() bool { s, _ := told(); return len(s) == 1 })
			if tt.more > 0 {
				p.Pause(tt.more)
			}
			if tt.haltSeen {
				waitFor(t, "the lengthening", 5*time.Second, func() bool { _, l := told(); return len(l) > 0 })
				p.Halt()
			}
			waitFor(t, "the stop to end", 5*time.Second, func() bool { return p.stats().pauses == 1 })
			stopFors, lengths := told()
			if f.plain != 0 || len(stopFors) != 1 || stopFors[0] != tt.want || !slices.Equal(lengths, tt.lengths) {
				t.Errorf("told %v, lengthened to %v (%d plain stops); want %v, then %v", stopFors, lengths, f.plain, tt.want, tt.lengths)
			}
		})
	}
}
