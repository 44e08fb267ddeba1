package experiment

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/cpuwork"
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
		testroot.Mark()
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

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in      string
		cores   float64
		limited bool
	}{
		{"max 100000\n", 0, false},
		{"50000 100000\n", 0.5, true},
		{"200000 100000", 2, true},
		{"0 100000", 0, false},
		{"garbage", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		cores, limited := parseCPUMax(tt.in)
		if cores != tt.cores || limited != tt.limited {
			t.Errorf("parseCPUMax(%q) = %v, %v; want %v, %v", tt.in, cores, limited, tt.cores, tt.limited)
		}
	}
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
			p := sampleParallelism(cmd.Process.Pid)
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

// A process in a cgroup v1 cpu hierarchy with a quota is found to run
// under it, in cores.
func TestFindCPUQuota(t *testing.T) {
	mnt, ok := cpuMounts()[false]
	if !ok {
		t.Skip("no cgroup v1 cpu hierarchy here")
	}
	dir := filepath.Join(mnt, fmt.Sprintf("slowpoke-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cpu cgroup: %v", err)
	}
	cmd := startSpinner(t, "spin1")
	t.Cleanup(func() {
		// Move the process out, end it, and remove the cgroup.
		os.WriteFile(filepath.Join(mnt, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0)
		cmd.Process.Kill()
		cmd.Wait()
		for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	if q := findCPUQuota(cmd.Process.Pid); q != nil && !strings.HasPrefix(q.Cgroup, dir) {
		t.Logf("the test already runs under a quota: %+v", q)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte("100000"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte("50000"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	q := findCPUQuota(cmd.Process.Pid)
	if q == nil || q.Cores != 0.5 || q.Cgroup != dir {
		t.Fatalf("findCPUQuota = %+v, want 0.5 cores set in %s", q, dir)
	}
	if findCPUQuota(os.Getpid()) != nil && findCPUQuota(os.Getpid()).Cgroup == dir {
		t.Error("this process is reported under the child's quota")
	}
}
