package proc

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCoresIdle(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	before := CoresIdle(cpus)
	if before <= 0 {
		t.Fatalf("CPUs %v have no idle time since boot: %v", cpus, before)
	}
	start := time.Now()
	time.Sleep(300 * time.Millisecond)
	after := CoresIdle(cpus)
	elapsed := time.Since(start)
	// Idle time never goes backwards and cannot grow faster than the
	// CPUs' wall time (plus two ticks of rounding per CPU).
	if d := after - before; d < 0 || d > time.Duration(len(cpus))*(elapsed+2*time.Second/clockTick) {
		t.Fatalf("idle moved %v over %v on %d CPUs", d, elapsed, len(cpus))
	}
	if got := CoresIdle([]int{1 << 20}); got != 0 {
		t.Fatalf("a CPU that does not exist has idle time %v", got)
	}
}

// This process's CPU clock moves as it works; no process, no clock.
func TestCPUClock(t *testing.T) {
	before, err := CPUClock(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
	}
	if after, err := CPUClock(os.Getpid()); err != nil || after <= before {
		t.Fatalf("CPU clock %v then %v, %v", before, after, err)
	}
	if _, err := CPUClock(0); err == nil {
		t.Fatal("a clock for no process")
	}
}

func TestOnlineCPUs(t *testing.T) {
	cpus := OnlineCPUs()
	if len(cpus) == 0 {
		t.Fatal("no CPU found in /proc/stat")
	}
	// This process runs on some of them.
	if len(cpus) < runtime.NumCPU() {
		t.Fatalf("OnlineCPUs = %v, fewer than the %d this process may use", cpus, runtime.NumCPU())
	}
}
