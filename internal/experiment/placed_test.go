package experiment

import (
	"context"
	"errors"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// placed is a backend with no services, only a spec and a placement: what
// the tests of the corrections and flags read, which are pure arithmetic
// over recorded samples.
type placed struct {
	spec *spec.Spec
	pl   backend.Placement
}

func (p placed) Spec() *spec.Spec                               { return p.spec }
func (p placed) Services() []*backend.Service                   { return nil }
func (p placed) Service(string) *backend.Service                { return nil }
func (p placed) Placement() backend.Placement                   { return p.pl }
func (p placed) PauseMethod(pause.Method) (pause.Method, error) { return pause.MethodSignal, nil }
func (p placed) Retarget(string) error                          { return errors.ErrUnsupported }
func (p placed) Restart(context.Context, string, map[string]string) error {
	return errors.ErrUnsupported
}
func (p placed) Watch(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}
func (p placed) Explain(err error) error                          { return err }
func (p placed) Stop() error                                      { return nil }
func (p placed) IdleTime([]int) time.Duration                     { return 0 }
func (p placed) CPUTime(string) (time.Duration, error)            { return 0, errors.ErrUnsupported }
func (p placed) SchedWaits(string) (run, wait time.Duration)      { return 0, 0 }
func (p placed) CPUQuotas() []backend.Quota                       { return nil }
func (p placed) ProcessIDs(string) []int                          { return nil }
func (p placed) FreezeRefs(string) (cgroup string, pods []string) { return "", nil }
func (p placed) SharedPath(string) (string, error)                { return "", errors.ErrUnsupported }
