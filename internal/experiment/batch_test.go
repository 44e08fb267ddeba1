package experiment

import (
	"testing"
	"time"
)

func TestChooseBatch(t *testing.T) {
	tests := []struct {
		name  string
		d, u1 time.Duration
		q1    float64
		conns int
		want  int
	}{
		{"no reduction: largest batch", 0, time.Millisecond, 1, 128, maxAutoBatch},
		{"small reduction: capped at 100", 10 * time.Microsecond, time.Millisecond, 1, 128, maxAutoBatch},
		{"pause limit: 10ms / 1ms", time.Millisecond, 1250 * time.Microsecond, 1, 1024, 10},
		{"two cores double the batch", time.Millisecond, 1250 * time.Microsecond, 2, 1024, 20},
		{"queue limit: 0.25*16*1ms/0.5ms", 500 * time.Microsecond, time.Millisecond, 1, 16, 8},
		{"never below one", 900 * time.Microsecond, time.Millisecond, 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chooseBatch(tt.d, tt.u1, tt.q1, tt.conns); got != tt.want {
				t.Fatalf("chooseBatch = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSaturatedThroughput(t *testing.T) {
	tests := []struct {
		name string
		tput []float64
		want float64
	}{
		{"flat with one lucky probe", []float64{151, 161, 159, 164, 198, 171}, 171},
		{"rising", []float64{486, 464, 522, 560, 572, 617}, 572},
		{"two probes", []float64{100, 120}, 120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := saturatedThroughput(tt.tput); got != tt.want {
				t.Fatalf("saturatedThroughput(%v) = %g, want %g", tt.tput, got, tt.want)
			}
		})
	}
}
