package experiment

import (
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
)

func TestSharedIdle(t *testing.T) {
	cpus, err := local.AvailableCPUs()
	if err != nil || len(cpus) == 0 {
		t.Fatalf("available CPUs: %v %v", cpus, err)
	}
	before := sharedIdle(cpus)
	if before <= 0 {
		t.Fatalf("CPUs %v have no idle time since boot: %v", cpus, before)
	}
	start := time.Now()
	time.Sleep(300 * time.Millisecond)
	after := sharedIdle(cpus)
	elapsed := time.Since(start)
	// Idle time never goes backwards and cannot grow faster than the
	// CPUs' wall time (plus two ticks of rounding per CPU).
	if d := after - before; d < 0 || d > time.Duration(len(cpus))*(elapsed+2*time.Second/userHZ) {
		t.Fatalf("idle moved %v over %v on %d CPUs", d, elapsed, len(cpus))
	}
	if got := sharedIdle([]int{1 << 20}); got != 0 {
		t.Fatalf("a CPU that does not exist has idle time %v", got)
	}
}
