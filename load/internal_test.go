package load

import (
	"slices"
	"testing"
	"time"
)

func TestPickerProportions(t *testing.T) {
	mix := []Request{{Weight: 1}, {Weight: 2}, {Weight: 0.5}, {Weight: 6.5}}
	p := newPicker(mix)
	rng := newRNG(42, 7)
	const n = 200000
	counts := make([]int, len(mix))
	for range n {
		counts[p.pick(rng)]++
	}
	for i, c := range counts {
		want := mix[i].Weight / 10
		if got := float64(c) / n; got < want-0.01 || got > want+0.01 {
			t.Errorf("type %d: share %.4f, want %.4f", i, got, want)
		}
	}
}

func TestPickerDeterministicPerSeed(t *testing.T) {
	p := newPicker([]Request{{Weight: 1}, {Weight: 1}, {Weight: 1}})
	seq := func(seed int64, worker uint64) []int {
		rng := newRNG(seed, worker)
		out := make([]int, 64)
		for i := range out {
			out[i] = p.pick(rng)
		}
		return out
	}
	if !slices.Equal(seq(1, 0), seq(1, 0)) {
		t.Error("same seed and worker gave different sequences")
	}
	if slices.Equal(seq(1, 0), seq(2, 0)) {
		t.Error("different seeds gave the same sequence")
	}
	if slices.Equal(seq(1, 0), seq(1, 1)) {
		t.Error("different workers gave the same sequence")
	}
}

func TestRecorderWindowAttribution(t *testing.T) {
	const (
		warm = 100
		dur  = 50
	)
	ok := func(el int64) event { return event{el: el, lat: 1000, out: outOK} }
	tests := []struct {
		name       string
		warmup     []event // observed before the window start is published
		start      int64   // published window start; -1: never
		measure    []event // observed before the window end is published
		end        int64   // published window end; -1: never
		afterwards []event
		want       uint64
	}{
		{"warm-up excluded", []event{ok(10), ok(99)}, 120, nil, 170, nil, 0},
		{"start resolved on next event", []event{ok(110), ok(125)}, 120, []event{ok(130)}, 170, nil, 2},
		{"start resolved at finish", []event{ok(119), ok(120), ok(169)}, 120, nil, 170, nil, 2},
		{"planned end", nil, 120, []event{ok(169)}, 175, nil, 1},
		{"late end includes events up to it", nil, 120, []event{ok(169), ok(170), ok(174)}, 175, []event{ok(175), ok(500)}, 3},
		{"end resolved on next event", nil, 120, []event{ok(172), ok(180)}, 175, []event{ok(190)}, 1},
		{"window never opened", []event{ok(110), ok(150)}, -1, nil, -1, nil, 0},
		{"window never closed", nil, 120, []event{ok(130), ok(180)}, -1, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow(warm, dur)
			r := newRecorder(w, 1, false, false, false)
			observe := func(evs []event) {
				for _, ev := range evs {
					r.observe(ev)
				}
			}
			observe(tt.warmup)
			if tt.start >= 0 {
				w.open(tt.start)
			}
			observe(tt.measure)
			if tt.end >= 0 {
				w.close(tt.end)
			}
			observe(tt.afterwards)
			r.finish()
			if got := r.types[0].completed; got != tt.want {
				t.Errorf("completed = %d, want %d", got, tt.want)
			}
			if got := r.all.n; got != tt.want {
				t.Errorf("latency samples = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLatencySummary(t *testing.T) {
	var a latAcc
	if (a.latency() != Latency{}) {
		t.Errorf("empty latency = %+v", a.latency())
	}
	for _, d := range []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 12345678 * time.Nanosecond} {
		a.add(int64(d))
	}
	l := a.latency()
	if want := (6*time.Millisecond + 12345678) / 4; l.Mean != want {
		t.Errorf("mean = %v, want exactly %v", l.Mean, want)
	}
	if l.Max != 12345678 || l.P999 > l.Max || l.P99 > l.Max {
		t.Errorf("max/p99/p999 = %v/%v/%v; percentiles must not exceed the exact max", l.Max, l.P99, l.P999)
	}
	if l.P50 < 2*time.Millisecond || l.P50 > 2003*time.Microsecond {
		t.Errorf("p50 = %v, want ~2ms", l.P50)
	}
	// Values beyond the histogram range are clamped there, but Max is exact.
	a.add(int64(2 * time.Minute))
	if l := a.latency(); l.Max != 2*time.Minute || l.P999 > 61*time.Second {
		t.Errorf("after 2m sample: max %v, p999 %v", l.Max, l.P999)
	}
}
