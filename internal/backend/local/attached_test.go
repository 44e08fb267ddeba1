package local

import (
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

// An attached service that stays in its own cgroup (cgroup v2) cannot be
// frozen: the cgroup method is refused, naming it.
func TestPauseMethodAttachedWithoutCgroup(t *testing.T) {
	own := Placement{Target: "cart", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
	d := &Deployment{placement: own, runDir: "/sys/fs/cgroup/unified/slowpoke/run-1-1", services: map[string]*Service{
		"db": {Service: backend.Service{Name: "db"}, attached: &attach.State{Service: "db"}},
	}}
	if _, err := d.PauseMethod(pause.MethodCgroup); err == nil || !strings.Contains(err.Error(), `service "db" is attached and stays in its own cgroup`) {
		t.Errorf("PauseMethod(cgroup) = %v", err)
	}
	d.services["db"].Cgroup = "/sys/fs/cgroup/freezer/slowpoke/run-1-1/db"
	if _, err := d.PauseMethod(pause.MethodCgroup); err != nil {
		t.Errorf("with the service in slowpoke's cgroup: %v", err)
	}
}
