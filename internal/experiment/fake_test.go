package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// fakeApp is an application without processes, behind a fake backend: an
// HTTP entry that counts every request as one call to each service that
// the workload reaches, and for every service a fake controller (a wire
// server on the loopback) that reports those calls, the CPU they cost and
// the rounds of a slowdown, and records what it is told. A request takes
// a millisecond, so that two connections never exceed 2000 requests/s.
type fakeApp struct {
	spec *spec.Spec
	pl   backend.Placement
	// method is what PauseMethod resolves every method to; methodErr,
	// where set, is its refusal.
	method    pause.Method
	methodErr error
	svcs      []*backend.Service
	ctls      map[string]*fakeController
	requests  atomic.Uint64
	// idleShare is the share of the window the placement's cores are
	// idle (IdleTime); quotas what CPUQuotas lists; cpuTime, where set,
	// the target's CPU clock (CPUTime), unsupported otherwise.
	idleShare float64
	quotas    []backend.Quota
	cpuTime   func() time.Duration
	// sharedDir is where SharedPath puts shared files ("": it has none).
	sharedDir string
	start     time.Time

	mu     sync.Mutex
	slow   bool   // a slowdown is under way on the target
	batch  int    // its calls per round
	pause  int64  // its pause per round, ns
	from   uint64 // the target's calls when it started
	rounds uint64 // rounds of the last slowdown, once stopped
}

// fakeService is how one service of a fakeApp behaves.
type fakeService struct {
	name         string
	cpuPerCall   time.Duration
	cpus         int
	uncalled     bool // the workload does not reach it
	uninstrument bool // its calls are not counted (AgentConnected false)
	// receivedShare and actualShare are the share of the target's rounds
	// it receives, and of the pauses asked that it makes (0: all).
	receivedShare, actualShare float64
	failConfigure              bool
	noController               bool
}

// fakeController is one service's controller.
type fakeController struct {
	app *fakeApp
	fakeService
	ln net.Listener

	mu         sync.Mutex
	configures []wire.Configure
	latencies  []wire.Latency
	msgs       []wire.Type
}

// newFakeApp starts the entry and the controllers of services (the first
// is the entry, the target is "t") and stops them at the test's end.
func newFakeApp(t *testing.T, pl backend.Placement, services ...fakeService) *fakeApp {
	t.Helper()
	app := &fakeApp{pl: pl, method: pause.MethodSignal, ctls: map[string]*fakeController{}, idleShare: 1, start: time.Now()}
	entry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		app.requests.Add(1)
		time.Sleep(time.Millisecond)
	}))
	t.Cleanup(entry.Close)
	u, _ := url.Parse(entry.URL)
	port, _ := strconv.Atoi(u.Port())
	app.spec = &spec.Spec{Name: "fake", Entry: entry.URL, Workload: spec.Workload{
		Connections: 2, Warmup: spec.Duration{Duration: 10 * time.Millisecond}, Duration: spec.Duration{Duration: 100 * time.Millisecond},
		Requests: []spec.Request{{Name: "home", Path: "/", Weight: 1}},
	}}
	secret := []byte("fake-controller-secret")
	for i, fs := range services {
		sv := spec.Service{Name: fs.name, Port: 1 + i, CPUs: fs.cpus}
		if i == 0 {
			sv.Port = port
		}
		app.spec.Services = append(app.spec.Services, sv)
		svc := &backend.Service{Name: fs.name, Port: sv.Port}
		if !fs.noController {
			c := &fakeController{app: app, fakeService: fs}
			var err error
			if c.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			go c.serve(secret)
			svc.Control = controller.NewClient(c.ln.Addr().String(), secret)
			app.ctls[fs.name] = c
			t.Cleanup(func() { c.ln.Close(); svc.Control.Close() })
		}
		app.svcs = append(app.svcs, svc)
	}
	return app
}

// serve answers the controller's connections until its listener closes.
func (c *fakeController) serve(secret []byte) {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			w, err := wire.Server(conn, secret)
			if err != nil {
				return
			}
			for {
				typ, payload, err := w.Recv(-1)
				if err != nil {
					return
				}
				if err := c.handle(w, typ, payload); err != nil {
					return
				}
			}
		}()
	}
}

func (c *fakeController) handle(w *wire.Conn, typ wire.Type, payload []byte) error {
	c.mu.Lock()
	c.msgs = append(c.msgs, typ)
	c.mu.Unlock()
	target := c.name == "t"
	switch typ {
	case wire.TStats:
		return w.Send(wire.TStatsReply, c.stats())
	case wire.TConfigure:
		var cf wire.Configure
		if err := json.Unmarshal(payload, &cf); err != nil {
			return err
		}
		if c.failConfigure {
			return w.Send(wire.TError, wire.ErrorMsg{Error: "configure refused"})
		}
		c.mu.Lock()
		c.configures = append(c.configures, cf)
		c.mu.Unlock()
		if target {
			c.app.mu.Lock()
			c.app.batch, c.app.pause = cf.Batch, cf.PausePerRoundNS
			c.app.mu.Unlock()
		}
	case wire.TLatency:
		var l wire.Latency
		if err := json.Unmarshal(payload, &l); err != nil {
			return err
		}
		c.mu.Lock()
		c.latencies = append(c.latencies, l)
		c.mu.Unlock()
	case wire.TStart, wire.TStop, wire.TReset:
		if target {
			c.app.slowdown(typ, c.calls())
		}
	}
	return w.Send(wire.TOK, nil)
}

// slowdown follows the target's slowdown: started, stopped (its rounds
// kept) or reset.
func (a *fakeApp) slowdown(typ wire.Type, calls uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch typ {
	case wire.TStart:
		a.slow, a.from, a.rounds = true, calls, 0
	case wire.TStop:
		if a.slow && a.batch > 0 {
			a.rounds = (calls - a.from) / uint64(a.batch)
		}
		a.slow = false
	case wire.TReset:
		a.rounds = 0
	}
}

func (c *fakeController) calls() uint64 {
	if c.uncalled {
		return 0
	}
	return c.app.requests.Load()
}

// stats is what the controller reports: the calls so far, their CPU, and
// the rounds of the last slowdown, which the target started and every
// other service received (receivedShare) and paused for (actualShare).
func (c *fakeController) stats() *wire.Stats {
	calls := c.calls()
	st := &wire.Stats{Service: c.name, AgentConnected: !c.uninstrument, Calls: calls, CPUNS: int64(calls) * int64(c.cpuPerCall)}
	c.app.mu.Lock()
	rounds, perRound, slow := c.app.rounds, c.app.pause, c.app.slow
	c.app.mu.Unlock()
	st.Active = slow
	share := func(x, s float64) float64 {
		if s == 0 {
			return x
		}
		return x * s
	}
	group := c.app.method != pause.MethodSignal
	switch {
	case c.name == "t":
		st.RoundsStarted = rounds
		if group {
			st.PauseRequestedNS = int64(rounds) * perRound
			st.PauseActualNS = int64(share(float64(st.PauseRequestedNS), c.actualShare))
		}
	case !group:
		st.RoundsReceived = uint64(share(float64(rounds), c.receivedShare))
		st.PauseRequestedNS = int64(st.RoundsReceived) * perRound
		st.PauseActualNS = int64(share(float64(st.PauseRequestedNS), c.actualShare))
	}
	return st
}

// received lists what the controller was told, in order.
func (c *fakeController) received() ([]wire.Type, []wire.Configure) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wire.Type(nil), c.msgs...), append([]wire.Configure(nil), c.configures...)
}

// latencyWhatIfs lists the latency what-ifs the controller was told to
// join or leave, in order.
func (c *fakeController) latencyWhatIfs() []wire.Latency {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wire.Latency(nil), c.latencies...)
}

func (a *fakeApp) Spec() *spec.Spec             { return a.spec }
func (a *fakeApp) Services() []*backend.Service { return a.svcs }
func (a *fakeApp) Placement() backend.Placement { return a.pl }
func (a *fakeApp) Retarget(string) error        { return errors.ErrUnsupported }
func (a *fakeApp) Explain(err error) error      { return err }
func (a *fakeApp) Stop() error                  { return nil }
func (a *fakeApp) ProcessIDs(name string) []int { return []int{1000 + len(name)} }
func (a *fakeApp) CPUQuotas() []backend.Quota   { return a.quotas }
func (a *fakeApp) SharedPath(kind string) (string, error) {
	if a.sharedDir == "" {
		return "", errors.ErrUnsupported
	}
	return filepath.Join(a.sharedDir, kind+"-fake"), nil
}
func (a *fakeApp) Service(name string) *backend.Service {
	for _, s := range a.svcs {
		if s.Name == name {
			return s
		}
	}
	return nil
}
func (a *fakeApp) PauseMethod(pause.Method) (pause.Method, error) { return a.method, a.methodErr }
func (a *fakeApp) Restart(context.Context, string, map[string]string) error {
	return errors.ErrUnsupported
}
func (a *fakeApp) Watch(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}

// IdleTime: the cores are idle idleShare of the time since the app began.
func (a *fakeApp) IdleTime(cpus []int) time.Duration {
	return time.Duration(a.idleShare * float64(time.Since(a.start)) * float64(len(cpus)))
}

func (a *fakeApp) CPUTime(service string) (time.Duration, error) {
	if a.cpuTime == nil || service != "t" {
		return 0, errors.ErrUnsupported
	}
	return a.cpuTime(), nil
}

func (a *fakeApp) SchedWaits(string) (run, wait time.Duration) { return 0, 0 }

func (a *fakeApp) FreezeRefs(name string) (string, []string) {
	return "/sys/fs/cgroup/slowpoke/" + name, nil
}

// sharedPlacement is the target on core 1, everything else on core 0.
var sharedPlacement = backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}

// threeServices is an entry, the target and one more service, each
// called once per request, the target at 100 µs of CPU a call.
func threeServices() []fakeService {
	return []fakeService{
		{name: "front", cpuPerCall: 20 * time.Microsecond},
		{name: "t", cpuPerCall: 100 * time.Microsecond, cpus: 1},
		{name: "a", cpuPerCall: 50 * time.Microsecond},
	}
}
