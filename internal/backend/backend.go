package backend

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Backend is a running application, as the experiment flow sees it. Its
// methods must not be called while an experiment runs on it, but
// Services, Service, Spec, Placement and those of Meter, Processes and
// SharedFiles.
//
// The experiment asks the backend, never the machine, for what depends on
// where the services run: the cores' idle time and a service's CPU time
// (Meter), how a pause method reaches a service's processes (Processes),
// and the files it shares with the controllers (SharedFiles).
type Backend interface {
	Meter
	Processes
	SharedFiles
	// Spec is the application's spec.
	Spec() *spec.Spec
	// Services returns the running services in spec order.
	Services() []*Service
	// Service returns a running service by name, or nil.
	Service(name string) *Service
	// Placement says where the services run.
	Placement() Placement
	// PauseMethod resolves m (pause.MethodAuto chooses) for this
	// backend, or says why it cannot be used.
	PauseMethod(m pause.Method) (pause.Method, error)
	// Retarget makes another service the target without restarting
	// anything.
	Retarget(target string) error
	// Restart restarts one service with env over the environment it was
	// started with (its spec's and what the run added, such as where to
	// export spans), and waits until it is ready.
	Restart(ctx context.Context, name string, env map[string]string) error
	// Watch returns a context that ends when parent does or when the
	// application fails (a service or its controller dies), with the
	// failure as its cause.
	Watch(parent context.Context) (context.Context, context.CancelFunc)
	// Explain returns the failure behind err, if the application failed,
	// and err otherwise.
	Explain(err error) error
	// Stop stops what the backend started and restores what it changed.
	Stop() error
}

// Options are what every backend is started with; each backend's own
// options embed them.
type Options struct {
	// Target is the service to be sped up ("" for none): the local
	// backend gives it cores of its own.
	Target string
	// MaxPause is the controllers' hard cap on one pause.
	MaxPause time.Duration
	// Logf receives progress and warnings; nil discards them.
	Logf func(format string, args ...any)
}

// WithDefaults returns o with what is unset defaulted, as every backend
// starts with it: Logf discards, MaxPause is controller.DefaultMaxPause.
func (o Options) WithDefaults() Options {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.MaxPause <= 0 {
		o.MaxPause = controller.DefaultMaxPause
	}
	return o
}

// Service is one running service.
type Service struct {
	Name    string
	Port    int
	Control Control // nil when it runs without a controller
	// LogPath is where its output goes: a file, or for a pod the command
	// that shows it.
	LogPath string
}

// Control is a service's controller as the experiment drives it, over its
// authenticated control port (docs/controller.md); *controller.Client is
// the one implementation slowpoke uses. A call fails with an error that
// wraps wire.ErrRemote when the controller refused it, and with a
// network error when it could not be reached.
type Control interface {
	// Addr is the control port's address, where neighbours send rounds.
	Addr() string
	// Stats is a fresh snapshot of the service's counters.
	Stats() (*wire.Stats, error)
	// Configure sets the next slowdown run's parameters.
	Configure(wire.Configure) error
	// Start starts the slowdown run; Stop ends it and resumes the
	// service; Reset ends any run and zeroes the round and pause
	// counters.
	Start() error
	Stop() error
	Reset() error
	// SetPool sets the service's admission limit and good-call threshold.
	SetPool(wire.Pool) error
	// SetLatency starts (or, with an empty store, ends) a latency what-if.
	SetLatency(wire.Latency) error
	// Renew renews the orchestrator's lease.
	Renew() error
	// Close closes the connection; a later call opens a new one.
	Close() error
}

var _ Control = (*controller.Client)(nil)

// CanTarget says why the service called name of b cannot be a target, or
// returns nil: it must be in the spec and run under a controller. It need
// not be instrumented: rounds then follow its CPU time (the experiment's
// trigger).
func CanTarget(b Backend, name string) error {
	if _, ok := b.Spec().Service(name); !ok {
		return fmt.Errorf("unknown service %q", name)
	}
	svc := b.Service(name)
	if svc == nil || svc.Control == nil {
		return fmt.Errorf("service %q does not run under a controller", name)
	}
	if _, err := svc.Control.Stats(); err != nil {
		return fmt.Errorf("service %q: controller: %w", name, err)
	}
	return nil
}

// Uninstrumented says once per service, not at every restart, that a
// service runs without slowpoke's instrumentation; the zero value is ready.
type Uninstrumented struct {
	mu   sync.Mutex
	said map[string]bool
}

// Note logs through logf, the first time only, that service name is not
// instrumented and what that means.
func (u *Uninstrumented) Note(name string, logf func(format string, args ...any)) {
	u.mu.Lock()
	said := u.said[name]
	if u.said == nil {
		u.said = map[string]bool{}
	}
	u.said[name] = true
	u.mu.Unlock()
	if !said {
		logf("service %q is not instrumented: its calls are not counted and it is not in the call graph; as the target, its rounds follow its CPU time", name)
	}
}
