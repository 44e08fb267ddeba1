package local

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/guard"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Options configure Start.
type Options struct {
	backend.Options                              // Target gets cores of its own
	Placement       Mode                         // whether the other services get cores of their own too; "" is ModeAuto
	Executable      string                       // slowpoke binary that runs the controllers; default os.Executable()
	LogDir          string                       // per-service logs; required
	ExtraPath       []string                     // directories put in front of PATH for service commands
	Env             map[string]map[string]string // extra environment per service, over the spec's
	// NoController starts the services directly, without controllers (the
	// uninstrumented baseline of the overhead benchmark).
	NoController bool
	Secret       []byte // experiment secret; generated when nil
	// NoCgroups keeps the services out of cgroups even where slowpoke could
	// make them: their processes are then known by process group only,
	// and the cgroup pause method is not available.
	NoCgroups bool
}

// Deployment is a running application.
type Deployment struct {
	spec      *spec.Spec
	placement Placement
	Secret    []byte
	// Cgroups is where the services' cgroups are; nil where slowpoke could
	// not make cgroups (see Options.NoCgroups).
	Cgroups *pause.Hierarchy

	opts           Options
	runDir         string // the run's cgroup directory, under Cgroups.Root
	guard          *guard.Client
	rec            *record
	failure        backend.Failure // the first unexpected death
	mu             sync.Mutex
	services       map[string]*Service
	stopping       bool
	uninstrumented backend.Uninstrumented
	startEnv       map[string]map[string]string // Options.Env as Start was given it
	// started names the attached services that a restart (validate's
	// ground truth) started from their command: they run under slowpoke
	// from then on (guarded by mu).
	started map[string]bool
}

// Service is one running service: what every backend knows of it (its
// Control nil with NoController), and how this one started it.
type Service struct {
	backend.Service
	// PID is the service's process group (its leader's PID); for an
	// attached service, the process attached to, which is not all of it:
	// what reads its processes reads attached.Members.
	PID    int
	Cgroup string // its cgroup ("" for none)

	cmd       *exec.Cmd // controller (or the service itself with NoController)
	exited    chan struct{}
	startTick string // the service's start time in /proc, to recognise it later
	stopping  bool   // stopped on purpose: its exit is no failure (guarded by Deployment.mu)
	// attached is, for a service that already ran (spec: attach), its
	// processes and how to give them back; nil for one slowpoke started.
	attached *attach.State
}

// Start starts every service of s and waits until all are ready. On error
// everything started so far is stopped.
func Start(ctx context.Context, s *spec.Spec, opts Options) (*Deployment, error) {
	opts, err := resolveOptions(opts)
	if err != nil {
		return nil, err
	}
	d, err := newDeployment(s, opts)
	if err != nil {
		return nil, err
	}
	// What an earlier run left (its orchestrator killed, its guard too)
	// would hold the ports: end it first, and say so.
	for _, note := range cleanLeftovers(d.Cgroups) {
		opts.Logf("warning: %s", note)
	}
	if err := d.findAttached(); err != nil {
		return nil, err
	}
	if err := checkPorts(d.startedServices()); err != nil {
		return nil, err
	}
	if err := d.checkCommands(); err != nil {
		return nil, err
	}
	if w := d.placement.Warning; w != "" {
		opts.Logf("warning: %s", w)
	}
	if err := d.startServices(ctx); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// resolveOptions checks opts and completes them for Start: the defaults,
// the slowpoke binary, ExtraPath and LogDir made absolute, and LogDir
// made if it is missing.
func resolveOptions(opts Options) (Options, error) {
	if opts.LogDir == "" {
		return Options{}, errors.New("local: LogDir is required")
	}
	opts.Options = opts.Options.WithDefaults()
	if opts.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return Options{}, err
		}
		opts.Executable = exe
	}
	// Services run in their own directories: relative PATH entries and log
	// paths would point elsewhere there.
	extra := make([]string, len(opts.ExtraPath)) // not the caller's slice
	for i, dir := range opts.ExtraPath {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return Options{}, err
		}
		extra[i] = abs
	}
	opts.ExtraPath = extra
	if abs, err := filepath.Abs(opts.LogDir); err == nil {
		opts.LogDir = abs
	}
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return Options{}, err
	}
	return opts, nil
}

// controllerStartTimeout bounds the wait for a controller to publish its
// control address. A controller that exits ends the wait at once; one
// that hangs is reported after this long. 10 s was too short on a loaded
// 2-core machine (the unit tier's packages side by side): an attached
// service's controller was not up after 10 s there.
const controllerStartTimeout = 30 * time.Second

// newDeployment makes the Deployment of s with opts (as resolveOptions
// left them), starting no service: its secret, the services' placement on
// the available cores, and, unless opts.NoCgroups, the cgroup hierarchy
// (without one, a note says so).
func newDeployment(s *spec.Spec, opts Options) (*Deployment, error) {
	secret := opts.Secret
	if secret == nil {
		secret = make([]byte, 32)
		if _, err := randRead(secret); err != nil {
			return nil, err
		}
	}
	avail, err := AvailableCPUs()
	if err != nil {
		return nil, err
	}
	pl, err := Place(avail, s.Services, opts.Target, opts.Placement)
	if err != nil {
		return nil, err
	}
	d := &Deployment{spec: s, placement: pl, Secret: secret, opts: opts, services: map[string]*Service{}, startEnv: opts.Env}
	d.opts.Env = maps.Clone(opts.Env) // Restart changes it
	if !opts.NoCgroups {
		if h, err := pause.FindHierarchy(); err == nil {
			d.Cgroups = &h
		} else {
			opts.Logf("note: no cgroups for the services (%v): their processes are known by process group only, and the cgroup pause method is not available", err)
		}
	}
	return d, nil
}

// startServices guards the run, then launches every service and waits
// until all are ready. On error the caller stops d: what started so far
// is not stopped here.
func (d *Deployment) startServices(ctx context.Context) error {
	if err := d.guardRun(); err != nil {
		return err
	}
	// The orchestrator and the load generator stay off the target's cores
	// (and off every service's, under dedicated placement).
	if err := PinProcess(d.placement.OtherCPUs); err != nil {
		return err
	}
	for i := range d.spec.Services {
		if err := d.launch(&d.spec.Services[i]); err != nil {
			return err
		}
	}
	go d.watchGuard()
	for _, svc := range d.spec.Services {
		if err := d.waitReady(ctx, &svc); err != nil {
			return err
		}
		if err := d.applyPool(&svc); err != nil {
			return err
		}
	}
	return nil
}

// applyPool sets the service's pool (spec.Service.Pool) through its
// controller, which passes it to the instrumentation whenever it connects.
func (d *Deployment) applyPool(s *spec.Service) error {
	if s.Pool == nil {
		return nil
	}
	svc := d.Service(s.Name)
	if svc == nil || svc.Control == nil {
		d.opts.Logf("warning: %s: pool %d not set: the service runs without a controller", s.Name, *s.Pool)
		return nil
	}
	if err := svc.Control.SetPool(wire.Pool{Limit: int64(*s.Pool)}); err != nil {
		return fmt.Errorf("set the pool of %s to %d: %w", s.Name, *s.Pool, err)
	}
	return nil
}

// Spec is the application's spec.
func (d *Deployment) Spec() *spec.Spec { return d.spec }

// Placement is where the services run.
func (d *Deployment) Placement() Placement { return d.placement }

// Services returns the running services in spec order.
func (d *Deployment) Services() []*backend.Service {
	var out []*backend.Service
	for _, svc := range d.procs() {
		out = append(out, &svc.Service)
	}
	return out
}

// procs returns the running services in spec order.
func (d *Deployment) procs() []*Service {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*Service, 0, len(d.services))
	for _, s := range d.spec.Services {
		if svc := d.services[s.Name]; svc != nil {
			out = append(out, svc)
		}
	}
	return out
}

// Service returns a running service by name, or nil.
func (d *Deployment) Service(name string) *backend.Service {
	if svc := d.proc(name); svc != nil {
		return &svc.Service
	}
	return nil
}

// proc returns a running service by name, or nil.
func (d *Deployment) proc(name string) *Service {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.services[name]
}

func (d *Deployment) launch(s *spec.Service) error {
	logPath := filepath.Join(d.opts.LogDir, s.Name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child keeps its own descriptor
	fmt.Fprintf(logf, "---- %s starting %s\n", time.Now().Format(time.RFC3339), s.Name)

	if d.isAttached(s) {
		return d.launchAttached(s, logPath, logf)
	}
	env := d.environ(s)
	cpus := d.placement.CPUs(s.Name)
	var cmd *exec.Cmd
	addrFile := ""
	spawnCPUs := cpus
	if d.opts.NoController {
		cmd = exec.Command(d.lookPath(s.CommandPath()), s.Args...)
	} else {
		addrFile = filepath.Join(d.opts.LogDir, "."+s.Name+".addr")
		os.Remove(addrFile)
		atomicfile.RemoveLeftovers(addrFile)
		args := []string{"controller", "--name", s.Name, "--addr-file", addrFile,
			"--max-pause", d.opts.MaxPause.String(), "--cpus", FormatCPUs(cpus)}
		if cg := d.cgroupOf(s.Name); cg != "" {
			args = append(args, "--cgroup", cg)
		}
		args = append(args, "--", d.lookPath(s.CommandPath()))
		cmd = exec.Command(d.opts.Executable, append(args, s.Args...)...)
		env = append(env, controller.EnvSecret+"="+hex.EncodeToString(d.Secret))
		// The controller itself stays off the target's cores, and off its
		// service's own cores under dedicated placement, as the load
		// generator does: what it uses outside stops is not taken from the
		// services.
		spawnCPUs = d.placement.OtherCPUs
	}
	cmd.Env = env
	cmd.Dir = s.WorkDir(d.spec.Dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group (Ctrl-C reaches only the orchestrator, which
	// tears down in order) and SIGTERM if the orchestrator dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := theSpawner.start(cmd, spawnCPUs); err != nil {
		return fmt.Errorf("start service %q: %w", s.Name, err)
	}
	svc := &Service{Service: backend.Service{Name: s.Name, Port: s.Port, LogPath: logPath}, Cgroup: d.cgroupOf(s.Name), cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(svc.exited)
		d.mu.Lock()
		expected := svc.stopping || d.stopping
		d.mu.Unlock()
		if !expected {
			d.failure.Fail(svc.deathError())
		}
	}()
	if d.opts.NoController {
		svc.PID = cmd.Process.Pid
		svc.startTick = guard.StartTime(svc.PID)
	}
	d.mu.Lock()
	d.services[s.Name] = svc
	d.mu.Unlock()
	if err := d.guardService(svc); err != nil {
		return fmt.Errorf("service %q: %w", s.Name, err)
	}
	if addrFile != "" {
		addr, err := waitAddr(addrFile, svc.exited, controllerStartTimeout)
		// Read once: neither the file nor what a controller killed while
		// writing it left is needed any more.
		os.Remove(addrFile)
		atomicfile.RemoveLeftovers(addrFile)
		if err != nil {
			return fmt.Errorf("service %q: controller did not come up: %v\n%s", s.Name, err, logTail(logPath))
		}
		svc.Control = controller.NewClient(addr, d.Secret)
	}
	return nil
}

// lookPath finds a bare command name in ExtraPath first (exec.Command
// would search only the orchestrator's own PATH), then on PATH, and last
// next to the slowpoke binary, where `go build -o bin/ ./cmd/...` puts
// slowpoke-emu.
func (d *Deployment) lookPath(command string) string {
	if strings.ContainsRune(command, '/') {
		return command
	}
	for _, dir := range d.opts.ExtraPath {
		if p := filepath.Join(dir, command); executable(p) {
			return p
		}
	}
	if _, err := exec.LookPath(command); err == nil {
		return command
	}
	if p := filepath.Join(filepath.Dir(d.opts.Executable), command); executable(p) {
		return p
	}
	return command
}

func (d *Deployment) environ(s *spec.Service) []string {
	env := make([]string, 0, len(os.Environ())+len(s.Env)+2)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, controller.EnvSecret+"=") {
			env = append(env, kv)
		}
	}
	if len(d.opts.ExtraPath) > 0 {
		env = append(env, "PATH="+strings.Join(d.opts.ExtraPath, ":")+":"+os.Getenv("PATH"))
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+s.Env[k])
	}
	for k, v := range d.opts.Env[s.Name] {
		env = append(env, k+"="+v)
	}
	return env
}

func waitAddr(path string, exited <-chan struct{}, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return strings.TrimSpace(string(b)), nil
		}
		select {
		case <-exited:
			return "", errors.New("it exited")
		case <-deadline:
			return "", fmt.Errorf("no control address after %v", timeout)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitReady probes the service, then checks its instrumentation.
func (d *Deployment) waitReady(ctx context.Context, s *spec.Service) error {
	svc := d.proc(s.Name)
	timeout := s.Ready.Timeout.Duration
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	deadline := time.Now().Add(timeout)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	client := &http.Client{Timeout: time.Second}
	for {
		var err error
		if s.Ready.HTTPPath != "" {
			var resp *http.Response
			if resp, err = client.Get("http://" + addr + s.Ready.HTTPPath); err == nil {
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					err = fmt.Errorf("GET %s: %s", s.Ready.HTTPPath, resp.Status)
				}
			}
		} else {
			var c net.Conn
			if c, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
			}
		}
		if err == nil {
			break
		}
		select {
		case <-svc.exited:
			return fmt.Errorf("service %q exited during start-up\n%s", s.Name, logTail(svc.LogPath))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("service %q not ready after %v: %v\n%s", s.Name, timeout, err, logTail(svc.LogPath))
		}
	}
	if svc.Control == nil {
		return nil
	}
	st, err := svc.Control.Stats()
	if err != nil {
		return fmt.Errorf("service %q: controller: %w", s.Name, err)
	}
	svc.PID = st.PID
	svc.startTick = guard.StartTime(st.PID)
	if err := d.guardService(svc); err != nil {
		return fmt.Errorf("service %q: %w", s.Name, err)
	}
	// The instrumentation connects when the service first wraps a handler
	// or client; give it a moment.
	for wait := time.Now().Add(3 * time.Second); !st.AgentConnected && time.Now().Before(wait); {
		time.Sleep(50 * time.Millisecond)
		if st, err = svc.Control.Stats(); err != nil {
			return fmt.Errorf("service %q: controller: %w", s.Name, err)
		}
	}
	if !st.AgentConnected {
		d.uninstrumented.Note(s.Name, d.opts.Logf)
	}
	return nil
}

// Restart stops one service and starts it again with extra environment
// (e.g. a ground-truth knob) over what Options.Env gave it at the start,
// waiting until it is ready.
func (d *Deployment) Restart(ctx context.Context, name string, env map[string]string) error {
	s, ok := d.spec.Service(name)
	if !ok {
		return fmt.Errorf("unknown service %q", name)
	}
	svc := d.proc(name)
	if d.isAttached(s) {
		// A restart ends what runs and starts the service's command.
		if err := d.restartAttached(svc, s); err != nil {
			return err
		}
		svc = nil
	}
	if svc != nil {
		d.mu.Lock()
		svc.stopping = true
		d.mu.Unlock()
		if d.guard != nil {
			d.guard.Forget(name)
		}
		d.stopOne(svc, 10*time.Second)
	}
	if d.opts.Env == nil {
		d.opts.Env = map[string]map[string]string{}
	}
	d.opts.Env[name] = maps.Clone(d.startEnv[name])
	if d.opts.Env[name] == nil {
		d.opts.Env[name] = map[string]string{}
	}
	maps.Copy(d.opts.Env[name], env)
	if err := d.launch(s); err != nil {
		return err
	}
	if err := d.waitReady(ctx, s); err != nil {
		return err
	}
	return d.applyPool(s)
}

// Stop stops every service: SIGTERM to each controller, SIGKILL after a
// grace period, then any service process still there is killed. It is safe
// to call more than once.
func (d *Deployment) Stop() error {
	d.mu.Lock()
	d.stopping = true
	svcs := make([]*Service, 0, len(d.services))
	for _, s := range d.services {
		svcs = append(svcs, s)
	}
	d.services = map[string]*Service{}
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range svcs {
		wg.Add(1)
		go func() { defer wg.Done(); d.stopOne(s, 10*time.Second) }()
	}
	wg.Wait()
	d.removeCgroups()
	if d.guard != nil {
		d.guard.Done()
	}
	if d.rec != nil {
		os.Remove(d.rec.path)
	}
	return nil
}

func (d *Deployment) stopOne(s *Service, grace time.Duration) {
	if s.attached != nil {
		d.stopAttached(s, grace)
		return
	}
	if s.Control != nil {
		s.Control.Close()
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	if d.opts.NoController {
		syscall.Kill(s.cmd.Process.Pid, syscall.SIGCONT)
	}
	select {
	case <-s.exited:
	case <-time.After(grace):
		s.cmd.Process.Kill()
		<-s.exited
	}
	// A controller killed before its child exited leaves the service
	// running (continued, by its parent-death signal). It is still ours:
	// recognise it by its start time and end its group, and whatever else
	// is in its cgroup.
	if leader := (guard.Proc{PID: s.PID, Start: s.startTick}); leader.SignalGroup(syscall.SIGCONT) {
		leader.SignalGroup(syscall.SIGKILL)
	}
	if s.Cgroup != "" {
		pause.Cgroup{Path: s.Cgroup, V2: d.Cgroups.V2}.Kill(time.Second)
	}
	d.mu.Lock()
	if d.services[s.Name] == s {
		delete(d.services, s.Name)
	}
	d.mu.Unlock()
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "last lines of " + path + ":\n  " + strings.Join(lines, "\n  ")
}

var _ backend.Backend = (*Deployment)(nil)
