package controller

import (
	"testing"
	"time"
)

func TestSleepPrecisely(t *testing.T) {
	for _, d := range []time.Duration{-time.Millisecond, 0, 200 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		sleepPrecisely(d)
		got := time.Since(start)
		// Never early; late by a busy machine's scheduling at most.
		if got < d || got > max(d, 0)+200*time.Millisecond {
			t.Errorf("sleepPrecisely(%v) slept %v", d, got)
		}
	}
}

// BenchmarkStopLateness reports how late stops due at a given time start
// (late-µs/stop) and how much longer than asked the longest lasted
// (worst-overrun-µs), for 3 ms stops due 2 ms ahead: what services sharing
// a core see when they are meant to stop together. The signal is a no-op,
// so only the pauser's own timing is measured.
func BenchmarkStopLateness(b *testing.B) {
	p := newPauser(time.Second, func(bool) error { return nil })
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
