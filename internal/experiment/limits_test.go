package experiment

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/cpuwork"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/testroot"
)

const roleEnv = "SLOWPOKE_EXPERIMENT_TEST_ROLE"

// TestMain lets the test binary play a CPU-bound service: "spin1" on one
// thread, "spin2" on two.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) != "" {
		testroot.Follow() // a helper: end with the test binary
	}
	switch os.Getenv(roleEnv) {
	case "":
		testroot.Serialize() // one timing package at a time (testroot.Serialize)
		os.Exit(m.Run())
	case "spin1", "spin2":
		if os.Getenv(roleEnv) == "spin2" {
			go func() {
				for {
					cpuwork.Spin(time.Millisecond)
				}
			}()
		}
		for {
			cpuwork.Spin(time.Millisecond)
		}
	}
	os.Exit(100)
}

func startSpinner(t *testing.T, role string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"="+role, "GOMAXPROCS=4")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func TestUsableCores(t *testing.T) {
	flat := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	tests := []struct {
		name    string
		q       float64
		samples []float64
		want    float64
		warns   bool
	}{
		{"single-threaded, busy, two cores", 2, flat(0.98, 100), 1, true},
		{"uses both cores", 2, append(flat(0.98, 50), flat(1.9, 50)...), 2, false},
		{"not busy enough to tell", 2, flat(0.3, 100), 2, false},
		{"one core anyway", 1, flat(0.98, 100), 1, false},
		{"no samples", 2, nil, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _, _, warn := usableCores("t", tt.q, tt.samples)
			if q != tt.want || (warn != "") != tt.warns {
				t.Errorf("usableCores = %v, %q; want %v, warning %v", q, warn, tt.want, tt.warns)
			}
		})
	}
}

// The sampler sees a single-threaded process use one core at most, and a
// process spinning two threads use more where two cores are free.
func TestParallelismOfRealProcesses(t *testing.T) {
	for _, tt := range []struct {
		role   string
		single bool
	}{{"spin1", true}, {"spin2", false}} {
		t.Run(tt.role, func(t *testing.T) {
			cmd := startSpinner(t, tt.role)
			time.Sleep(200 * time.Millisecond)
			p := sampleParallelism(func() (time.Duration, error) { return proc.CPUClock(cmd.Process.Pid) })
			time.Sleep(time.Second)
			samples := p.end()
			q, p95, mean, warn := usableCores("spinner", 2, samples)
			t.Logf("%s: %d samples, mean %.2f cores, p95 %.2f: q1 %v", tt.role, len(samples), mean, p95, q)
			if len(samples) < 20 {
				t.Fatalf("%d samples in a second", len(samples))
			}
			if tt.single && p95 > 1.15 {
				t.Errorf("a single thread used %.2f cores", p95)
			}
			if tt.single && mean >= singleBusyMin && (q != 1 || warn == "") {
				t.Errorf("a busy single thread kept q1 = %v", q)
			}
			if !tt.single && p95 > singleCoreBound && q != 2 {
				t.Errorf("two busy threads (p95 %.2f cores) got q1 = %v", p95, q)
			}
		})
	}
}
