package kube

import (
	"errors"
	"slices"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
)

// On a cluster the experiment's readings of the services' machines are
// out of reach, and said so; the pods a node agent freezes are named.
func TestHost(t *testing.T) {
	d := &Deployment{services: map[string]*service{
		"cart": {Service: backend.Service{Name: "cart"}, pods: []string{"uid-1", "uid-2"}},
	}}
	if _, err := d.SharedPath("slowpoke-delays"); !errors.Is(err, ErrNoSharedFiles) {
		t.Errorf("SharedPath: %v, want ErrNoSharedFiles", err)
	}
	if _, err := d.CPUTime("cart"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CPUTime: %v, want unsupported", err)
	}
	if got := d.IdleTime([]int{0}); got != 0 {
		t.Errorf("IdleTime = %v", got)
	}
	if got := d.ProcessIDs("cart"); got != nil {
		t.Errorf("ProcessIDs = %v", got)
	}
	if cg, pods := d.FreezeRefs("cart"); cg != "" || !slices.Equal(pods, []string{"uid-1", "uid-2"}) {
		t.Errorf("FreezeRefs = %q, %v", cg, pods)
	}
}
