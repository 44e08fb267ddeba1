package cpuwork

import (
	"runtime"
	"testing"
	"time"
)

func TestSpinConsumesCPUTime(t *testing.T) {
	for _, d := range []time.Duration{0, 200 * time.Microsecond, 2 * time.Millisecond, 20 * time.Millisecond} {
		runtime.LockOSThread()
		before := ThreadTime()
		Spin(d)
		got := ThreadTime() - before
		runtime.UnlockOSThread()
		// Generous: the loop overshoots by at most one chunk plus clock reads.
		if got < d || got > d+d/2+500*time.Microsecond {
			t.Errorf("Spin(%v) used %v of thread CPU time", d, got)
		}
	}
}
