package local

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/stale"
)

// The local backend answers the experiment's questions from this
// machine: the services' processes, their CPU clocks and cgroups, and
// shared files in /dev/shm.
func TestHost(t *testing.T) {
	d := &Deployment{
		spec: &spec.Spec{Services: []spec.Service{{Name: "here"}, {Name: "gone"}}},
		services: map[string]*Service{
			"here": {Service: backend.Service{Name: "here"}, PID: os.Getpid(), Cgroup: "/sys/fs/cgroup/slowpoke/here"},
			"gone": {Service: backend.Service{Name: "gone"}},
		},
	}
	if got := d.ProcessIDs("here"); !slices.Equal(got, []int{os.Getpid()}) {
		t.Errorf("ProcessIDs(here) = %v, want [%d]", got, os.Getpid())
	}
	if got := d.ProcessIDs("nosuch"); got != nil {
		t.Errorf("ProcessIDs(nosuch) = %v", got)
	}
	if cg, pods := d.FreezeRefs("here"); cg != "/sys/fs/cgroup/slowpoke/here" || pods != nil {
		t.Errorf("FreezeRefs(here) = %q, %v", cg, pods)
	}
	if cpu, err := d.CPUTime("here"); err != nil || cpu <= 0 {
		t.Errorf("CPUTime(here) = %v, %v", cpu, err)
	}
	if _, err := d.CPUTime("gone"); err == nil {
		t.Error("CPUTime of a service without a process")
	}
	if run, wait := d.SchedWaits("gone"); run != 0 || wait != 0 {
		t.Errorf("SchedWaits(gone) = %v, %v", run, wait)
	}
	p, err := d.SharedPath("slowpoke-test")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(p), stale.Prefix("slowpoke-test")) {
		t.Errorf("SharedPath = %s, want a name starting %s", p, stale.Prefix("slowpoke-test"))
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("SharedPath %s exists already: %v", p, err)
	}
}
