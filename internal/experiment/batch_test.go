package experiment

import (
	"math"
	"testing"
	"time"
)

func TestChooseBatch(t *testing.T) {
	tests := []struct {
		name  string
		d, u1 time.Duration
		q1    float64
		conns int
		cap   time.Duration // 0: the default
		want  int
	}{
		{"no reduction: largest batch", 0, time.Millisecond, 1, 128, 0, maxAutoBatch},
		{"small reduction: capped at 100", 10 * time.Microsecond, time.Millisecond, 1, 128, 0, maxAutoBatch},
		{"pause limit: 4ms / 1ms", time.Millisecond, 1250 * time.Microsecond, 1, 1024, 0, 4},
		{"two cores double the batch", time.Millisecond, 1250 * time.Microsecond, 2, 1024, 0, 8},
		{"queue limit: 0.25*16*1ms/0.5ms", 500 * time.Microsecond, time.Millisecond, 1, 16, 0, 8},
		{"never below one", 900 * time.Microsecond, time.Millisecond, 1, 1, 0, 1},
		{"shared-bound cap: 64ms / 1ms", time.Millisecond, time.Millisecond, 1, 256, sharedBoundPause, 64},
		{"shared-bound cap, queue limit: 0.25*128*1ms/1ms", time.Millisecond, time.Millisecond, 1, 128, sharedBoundPause, 32},
		{"a cap twice 64ms doubles the queue share: 0.5*256", time.Millisecond, time.Millisecond, 1, 256, 2 * sharedBoundPause, 128},
		{"and the largest batch", 10 * time.Microsecond, time.Millisecond, 1, 256, 2 * sharedBoundPause, 2 * maxAutoBatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chooseBatch(tt.d, tt.u1, tt.q1, tt.conns, tt.cap); got != tt.want {
				t.Fatalf("chooseBatch = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPickConnections(t *testing.T) {
	tests := []struct {
		name string
		tput []float64
		want int
	}{
		{"flat: the smallest", []float64{569, 576, 568, 565, 570, 579}, 0},
		{"rising to the last", []float64{484, 495, 512, 518, 505, 613}, 5},
		{"plateau from the third", []float64{300, 400, 500, 505, 498, 510}, 2},
		{"one probe", []float64{100}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pickConnections(tt.tput); got != tt.want {
				t.Fatalf("pickConnections(%v) = %d, want %d", tt.tput, got, tt.want)
			}
		})
	}
}

func TestQueueFloor(t *testing.T) {
	tests := []struct {
		name string
		u1   time.Duration
		q1   float64
		want int
	}{
		// 4 ms / (0.25 * 1 ms) = 16
		{"1 ms per call", time.Millisecond, 1, 16},
		// 4 ms / (0.25 * 550 µs) = 29.1 -> 32
		{"550 µs per call", 550 * time.Microsecond, 1, 32},
		{"two cores need twice the queue", 550 * time.Microsecond, 2, 64},
		{"cheap calls: the largest step", 10 * time.Microsecond, 1, 256},
		{"unknown cost", 0, 1, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := queueFloor(tt.u1, tt.q1); got != tt.want {
				t.Fatalf("queueFloor(%v, %g) = %d, want %d", tt.u1, tt.q1, got, tt.want)
			}
		})
	}
}

func TestCycleLimit(t *testing.T) {
	limit := (&Runner{opts: Options{Duration: 3 * time.Second}}).maxCycle()
	if want := 3 * time.Second / cyclesPerWindow; limit != want {
		t.Fatalf("maxCycle = %v, want %v", limit, want)
	}
	tests := []struct {
		name   string
		conns  int
		tput   float64
		want   time.Duration
		within bool
	}{
		// Probes recorded on the synthetic subset (dag-cross-grpc-seq-leaf).
		{"32 at 189 req/s", 32, 189, 169312169, true},
		{"64 at 189 req/s", 64, 189, 338624338, false},
		{"128 at 189 req/s", 128, 189, 677248677, false},
		{"16 at 584 req/s", 16, 584, 27397260, true},
		{"nothing completed", 8, 0, time.Duration(math.MaxInt64), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cycle(tt.conns, tt.tput)
			if d := got - tt.want; d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("cycle(%d, %g) = %v, want %v", tt.conns, tt.tput, got, tt.want)
			}
			if within := got <= limit; within != tt.within {
				t.Fatalf("cycle %v within %v = %v, want %v", got, limit, within, tt.within)
			}
		})
	}
}
