package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

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

// A process in a cgroup v1 cpu hierarchy with a quota is found to run
// under it, in cores.
func TestCPUQuota(t *testing.T) {
	mounts, _ := CgroupMounts("cpu")
	mnt, ok := mounts[false]
	if !ok {
		t.Skip("no cgroup v1 cpu hierarchy here")
	}
	dir := filepath.Join(mnt, fmt.Sprintf("slowpoke-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cpu cgroup: %v", err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Move the process out, end it, and remove the cgroup.
		os.WriteFile(filepath.Join(mnt, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0)
		cmd.Process.Kill()
		cmd.Wait()
		for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	if q := CPUQuota(cmd.Process.Pid); q != nil && !strings.HasPrefix(q.Cgroup, dir) {
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
	q := CPUQuota(cmd.Process.Pid)
	if q == nil || q.Cores != 0.5 || q.Cgroup != dir {
		t.Fatalf("CPUQuota = %+v, want 0.5 cores set in %s", q, dir)
	}
	if CPUQuota(os.Getpid()) != nil && CPUQuota(os.Getpid()).Cgroup == dir {
		t.Error("this process is reported under the child's quota")
	}
}
