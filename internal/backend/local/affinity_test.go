package local

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// Helpers of both tiers' tests of this package (retarget_test.go is
// end-to-end; retarget_attached_test.go is not).

// affinities returns the CPU set of every thread of every process of a
// service.
func affinities(t *testing.T, d *Deployment, name string) map[int][]int {
	t.Helper()
	pids, err := d.processesOf(d.proc(name))
	if err != nil || len(pids) == 0 {
		t.Fatalf("processes of %s: %v %v", name, pids, err)
	}
	out := map[int][]int{}
	for _, pid := range pids {
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			var set unix.CPUSet
			if unix.SchedGetaffinity(tid, &set) != nil {
				continue
			}
			var cpus []int
			for c := 0; c < 1024; c++ {
				if set.IsSet(c) {
					cpus = append(cpus, c)
				}
			}
			out[tid] = cpus
		}
	}
	return out
}

func checkOn(t *testing.T, d *Deployment, name string, want []int) {
	t.Helper()
	for tid, cpus := range affinities(t, d, name) {
		if !slices.Equal(cpus, want) {
			t.Errorf("%s: thread %d on CPUs %v, want %v", name, tid, cpus, want)
		}
	}
}
