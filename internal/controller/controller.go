package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/inservice"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/stale"
	"github.com/slowpoke-dev/slowpoke/internal/threads"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// EnvSecret names the environment variable that carries the hex-encoded
// experiment secret to a controller. It is never passed on to the service.
const EnvSecret = "SLOWPOKE_SECRET"

// Defaults.
const (
	DefaultMaxPause    = time.Second
	DefaultStopTimeout = 10 * time.Second
	recentRounds       = 64
	idleTimeout        = 10 * time.Minute
	// MaxLease bounds Config.Lease.
	MaxLease = 5 * time.Minute
)

// Config describes one controlled service.
type Config struct {
	Name        string
	Command     []string // program and arguments
	Env         []string // the child's environment; nil means the controller's own, less EnvSecret
	Dir         string
	CPUs        []int         // CPU affinity of the child; empty inherits the controller's
	Listen      string        // control address; default 127.0.0.1:0
	Secret      []byte        // experiment secret, at least wire.MinSecret bytes
	MaxPause    time.Duration // hard cap on one stop; default DefaultMaxPause
	StopTimeout time.Duration // after forwarding a signal, SIGKILL the group if it is still running; default DefaultStopTimeout
	AddrFile    string        // if set, the control address is written here once listening
	// Cgroup, if set, is a cgroup slowpoke made for the service (see
	// internal/pause): the child starts in it, so that every process of
	// the service, however it forks, can be frozen and is ended when the
	// child exits.
	Cgroup string
	// Lease, when set, bounds how long the controller keeps what the
	// orchestrator set up (a slowdown run, a latency what-if, a pool)
	// after the orchestrator's last message: when the orchestrator has
	// been silent for Lease, the controller ends them all and resumes its
	// service, as if told to stop. For controllers no guard watches (in a
	// pod). Every message from the orchestrator but stats renews it; it
	// sends wire.TRenew between them. At most MaxLease.
	Lease time.Duration
	// Pods, when set, is a service that runs in pods on this node, which
	// the controller neither starts nor ends (Command is then empty): see
	// pods.go.
	Pods PodService
	// Attach, when set, names a service that already runs, which the
	// controller pauses and resumes without starting it (Command is then
	// empty): see attached.go.
	Attach *attach.State
	// NormalPriority keeps the controller at the normal scheduling
	// priority instead of raising it (see raisePriority).
	NormalPriority bool
	Stdout         io.Writer
	Stderr         io.Writer
	Logger         *slog.Logger
}

// Controller is one running controller. Create it with Start.
type Controller struct {
	cfg    Config
	log    *slog.Logger
	cmd    *exec.Cmd
	pgid   int
	cgroup *pause.Cgroup // the service's, when Config.Cgroup is set
	pauser *pauser
	// set holds the processes of an attached service (Config.Attach),
	// nil for a service the controller started.
	set *attach.Set
	// releaseOnce ends a controller of pods (Release), or of an attached
	// service (release), once.
	releaseOnce sync.Once

	ln       net.Listener // control
	linkLn   net.Listener
	sockDir  string
	exited   chan struct{} // closed when the child has exited (before it is reaped)
	exitCode int

	sigMu sync.Mutex // guards signalling against reaping
	dead  bool

	mu     sync.Mutex
	conf   wire.Configure
	active bool
	// starting is set while a StartSlowdown prepares its run outside the
	// lock; stops counts stopSlowdown calls, so that a start knows
	// whether a stop came in meanwhile.
	starting bool
	stops    uint64
	// childGone is set, before the slowdown stops, once the child has
	// exited: no slowdown starts after it.
	childGone    bool
	roundMark    uint64        // target: rounds started so far, as total calls / batch
	cpuStop      chan struct{} // closed to end the CPU trigger (see cpuTrigger)
	roundSeq     uint64
	seen         window
	peers        map[string]*peer
	links        map[*linkConn]struct{}
	pool         wire.Pool    // admission limit and threshold, for links now and later
	latency      wire.Latency // latency what-if, for links now and later
	flushSeq     uint64
	c            counters
	recent       []wire.RoundRecord
	busyMeasured bool
	busySampled  time.Time // when the last busy measurement started
	// grp pauses the other services during a run with the cgroup or cores
	// method (target only); grpLast keeps its counters after the run.
	grp     group
	grpLast *pauseStats
	// renewed is when the orchestrator last spoke (see Config.Lease).
	renewed time.Time
}

type counters struct {
	started, received, duplicate, stale, forwarded, forwardErrors uint64
	late                                                          uint64 // received after the lead had passed
	authFailures                                                  uint64
	refused, handshakeTimeouts                                    uint64 // control connections over the unauthenticated bound, or silent past the handshake deadline
	delaySum, delayMax                                            int64
	hopsMax                                                       int
	pauseBusy, pauseWindow                                        int64
}

// Start starts the child and the controller's listeners.
func Start(cfg Config) (*Controller, error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	c := &Controller{
		cfg:    cfg,
		log:    cfg.Logger.With("service", cfg.Name),
		exited: make(chan struct{}),
		peers:  map[string]*peer{},
		links:  map[*linkConn]struct{}{},
	}
	sock, err := c.listen()
	if err != nil {
		return nil, err
	}
	if err := quietChildStops(); err != nil {
		c.log.Warn("cannot stop SIGCHLD on the service's stops and continues; every round costs two more wake-ups", "err", err)
	}
	start := c.startChild
	switch {
	case cfg.Pods != nil:
		start = func(string) error { return nil } // nothing to start: pgid stays 0, never signalled
	case cfg.Attach != nil:
		start = c.attach
	}
	if err := start(sock); err != nil {
		c.ln.Close()
		c.linkLn.Close()
		os.RemoveAll(c.sockDir)
		return nil, err
	}
	c.pauser = newPauser(cfg.MaxPause, signalStopper(c.signalGroup))
	if !cfg.NormalPriority {
		if err := raisePriority(); err != nil {
			c.log.Warn("cannot raise the controller's scheduling priority; rounds may reach busy cores late", "err", err)
		}
	}
	c.serve()
	if cfg.AddrFile != "" {
		if err := atomicfile.Write(cfg.AddrFile, []byte(c.Addr()+"\n"), 0o600); err != nil {
			c.log.Error("cannot write address file", "err", err)
		}
	}
	c.log.Info("controller started", "pid", c.pgid, "pods", cfg.Pods != nil, "attached", c.set != nil, "control", c.Addr(), "cpus", cfg.CPUs)
	return c, nil
}

// checkConfig checks cfg, for Start, and fills in its defaults.
func checkConfig(cfg *Config) error {
	switch {
	case len(cfg.Command) == 0 && cfg.Pods == nil && cfg.Attach == nil:
		return errors.New("controller: no command to run")
	case len(cfg.Command) > 0 && (cfg.Pods != nil || cfg.Attach != nil), cfg.Pods != nil && cfg.Attach != nil:
		return errors.New("controller: give one of a command to run, pods to serve and a service to attach to")
	case cfg.Pods != nil && cfg.Name == "":
		return errors.New("controller: a service in pods needs a name")
	}
	if len(cfg.Secret) < wire.MinSecret {
		return fmt.Errorf("controller: experiment secret must be at least %d bytes (set %s)", wire.MinSecret, EnvSecret)
	}
	if cfg.Name == "" && cfg.Attach != nil {
		cfg.Name = cfg.Attach.Service
	}
	if cfg.Name == "" {
		cfg.Name = filepath.Base(cfg.Command[0])
	}
	if cfg.MaxPause <= 0 {
		cfg.MaxPause = DefaultMaxPause
	}
	if cfg.Lease < 0 || cfg.Lease > MaxLease || (cfg.Lease > 0 && cfg.Lease < 4*time.Millisecond) {
		return fmt.Errorf("controller: lease must be 0 (none) or in [4ms, %v], got %v", MaxLease, cfg.Lease)
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return nil
}

// listen opens the instrumentation socket, in a directory of its own, and the
// control listener, and returns the socket's path. On an error it leaves
// nothing open.
func (c *Controller) listen() (sock string, err error) {
	// The directory is named after this process, so that the next
	// controller removes it if this one is killed before it can.
	stale.Sweep(os.TempDir(), inservice.SocketDirKind)
	if c.sockDir, err = os.MkdirTemp("", stale.Prefix(inservice.SocketDirKind)); err != nil {
		return "", err
	}
	sock = filepath.Join(c.sockDir, "link.sock")
	if c.linkLn, err = net.Listen("unix", sock); err != nil {
		os.RemoveAll(c.sockDir)
		return "", err
	}
	if c.ln, err = net.Listen("tcp", c.cfg.Listen); err != nil {
		c.linkLn.Close()
		os.RemoveAll(c.sockDir)
		return "", fmt.Errorf("controller: listen on %s: %w", c.cfg.Listen, err)
	}
	return sock, nil
}

// serve starts the controller's goroutines, once its service is started
// and its pauser made: the lease's watch, the listeners' accept loops and
// the watch on the service.
func (c *Controller) serve() {
	if c.cfg.Lease > 0 {
		c.renewed = time.Now()
		go c.watchLease()
	}
	go c.acceptLinks()
	go c.acceptControl()
	switch {
	case c.set != nil:
		go c.watchAttached()
	case c.cfg.Pods == nil:
		go c.watchChild()
	}
}

// Addr is the control address.
func (c *Controller) Addr() string { return c.ln.Addr().String() }

// PID is the child's process id (and process group id).
func (c *Controller) PID() int { return c.pgid }

// Done is closed when the child has exited.
func (c *Controller) Done() <-chan struct{} { return c.exited }

func (c *Controller) startChild(sock string) error {
	cmd := exec.Command(c.cfg.Command[0], c.cfg.Command[1:]...)
	env := c.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(withoutSecret(env), inservice.EnvSocket+"="+sock, inservice.EnvService+"="+c.cfg.Name)
	cmd.Dir = c.cfg.Dir
	cmd.Stdout, cmd.Stderr = c.cfg.Stdout, c.cfg.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	// A new process group of its own, so that stopping it never stops the
	// controller; SIGCONT when the controller dies, so that it is never left
	// stopped. exec.Cmd.Start returns only after the child has called
	// setpgid and exec'd, so the group exists before any signal is sent.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGCONT}

	start := cmd.Start
	if c.cfg.Cgroup != "" {
		v2, err := cgroupVersion(c.cfg.Cgroup)
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		cg := pause.Cgroup{Path: c.cfg.Cgroup, V2: v2}
		c.cgroup = &cg
		start = func() error { return cg.Start(cmd) }
	}
	// The child inherits the affinity of the thread that forks it.
	if err := threads.StartOn(c.cfg.CPUs, start); err != nil {
		return fmt.Errorf("controller: start %s: %w", c.cfg.Command[0], err)
	}
	c.cmd = cmd
	c.pgid = cmd.Process.Pid
	return nil
}

func withoutSecret(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, EnvSecret+"=") || strings.HasPrefix(kv, inservice.EnvSocket+"=") || strings.HasPrefix(kv, inservice.EnvService+"=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// signalGroup stops or continues the child's process group. It refuses once
// the child has exited, so a recycled group id is never signalled.
func (c *Controller) signalGroup(stop bool) error {
	sig := unix.SIGCONT
	if stop {
		sig = unix.SIGSTOP
	}
	return c.kill(sig)
}

func (c *Controller) kill(sig unix.Signal) error {
	c.sigMu.Lock()
	defer c.sigMu.Unlock()
	if c.dead {
		return errors.New("child has exited")
	}
	if c.set != nil {
		return c.set.Signal(sig)
	}
	if c.pgid <= 1 || c.pgid == unix.Getpgrp() {
		return errors.New("refusing to signal own or invalid process group")
	}
	// Raw, like the CPU clock reads (cpuClock): kill never blocks, and a
	// call through the scheduler wakes the runtime's monitor thread, twice
	// a round on the shared cores.
	if _, _, e := unix.RawSyscall(unix.SYS_KILL, uintptr(-c.pgid), uintptr(sig), 0); e != 0 {
		return e
	}
	return nil
}

// watchChild waits for the child to exit without reaping it, continues the
// group while the id is still held by the zombie, and only then reaps.
func (c *Controller) watchChild() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, c.pgid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil || !errors.Is(err, unix.EINTR) {
			break
		}
	}
	c.pauser.Close()
	c.mu.Lock()
	c.childGone = true
	c.mu.Unlock()
	c.stopSlowdown() // the target's: continue the others
	c.sigMu.Lock()
	unix.Kill(-c.pgid, unix.SIGCONT) // other group members must not stay stopped
	c.dead = true
	c.sigMu.Unlock()
	if c.cgroup == nil {
		// Without a cgroup, what the service left in its process group
		// ends now, while the unreaped leader keeps the group's id from
		// being reused.
		if left := endGroup(c.pgid, 2*time.Second); len(left) > 0 {
			c.log.Info("ended the processes the service left", "pids", left)
		}
	}
	err := c.cmd.Wait()
	c.exitCode = exitCode(c.cmd.ProcessState, err)
	c.log.Info("service exited", "status", c.exitCode)
	// What the service started and left behind (a shell's children, a
	// pre-fork server's workers) ends with it.
	if c.cgroup != nil {
		if left := c.cgroup.Kill(2 * time.Second); len(left) > 0 {
			c.log.Info("ended the processes the service left", "pids", left)
		}
	}
	close(c.exited)
}

// endGroup ends the processes of group pgid other than its leader, which
// must have exited and not been reaped: SIGTERM, and SIGKILL for those
// still running after grace. It returns the PIDs it found running.
func endGroup(pgid int, grace time.Duration) []int {
	left := groupMembers(pgid)
	if len(left) == 0 || pgid <= 1 || pgid == unix.Getpgrp() {
		return nil
	}
	unix.Kill(-pgid, unix.SIGTERM)
	unix.Kill(-pgid, unix.SIGCONT)
	deadline := time.Now().Add(grace)
	for len(groupMembers(pgid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(groupMembers(pgid)) > 0 {
		unix.Kill(-pgid, unix.SIGKILL)
		for deadline := time.Now().Add(time.Second); len(groupMembers(pgid)) > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return left
}

// groupMembers lists the processes of group pgid, other than its leader
// and those that have ended (zombies).
func groupMembers(pgid int) []int {
	var out []int
	for _, s := range proc.Group(pgid) {
		if s.PID != pgid && !s.Ended() {
			out = append(out, s.PID)
		}
	}
	return out
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := ps.ExitCode(); code >= 0 {
		return code
	}
	return 1
}

// Signal forwards sig to the service: the slowdown stops, the group is
// continued (a stopped process cannot act on SIGTERM), then signalled.
func (c *Controller) Signal(sig unix.Signal) {
	if c.set != nil {
		// Not the controller's to end: it is given back instead.
		c.release("received "+sig.String(), 0)
		return
	}
	c.stopSlowdown()
	c.kill(sig)
	c.kill(unix.SIGCONT)
}

// Wait waits for the child to exit and releases everything. It returns the
// exit status to use for the controller: the child's exit code, or 128+signal.
func (c *Controller) Wait() int {
	<-c.exited
	// Nothing the run paused may outlive the controller: a slowdown
	// still on (no stop reached it) ends here, its group thawed and its
	// holders gone.
	c.stopSlowdown()
	c.close()
	if c.set != nil {
		c.restore()
	}
	return c.exitCode
}

func (c *Controller) close() {
	c.ln.Close()
	c.linkLn.Close()
	c.mu.Lock()
	for a := range c.links {
		a.conn.Close()
	}
	for _, p := range c.peers {
		p.close()
	}
	c.mu.Unlock()
	os.RemoveAll(c.sockDir)
}

// Run starts a controller and supervises it until the child exits: it
// forwards SIGINT, SIGTERM and SIGHUP, escalates to SIGKILL on the group
// after StopTimeout, and returns the child's exit status. Cancelling ctx acts
// like SIGTERM.
func Run(ctx context.Context, cfg Config) (int, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer signal.Stop(sigs)
	c, err := Start(cfg)
	if err != nil {
		return 1, err
	}
	var killTimer <-chan time.Time
	forward := func(sig unix.Signal) {
		c.log.Info("forwarding signal", "signal", sig)
		c.Signal(sig)
		if killTimer == nil && c.set == nil {
			killTimer = time.After(c.cfg.StopTimeout)
		}
	}
	for {
		select {
		case s := <-sigs:
			forward(s.(syscall.Signal))
		case <-ctx.Done():
			forward(unix.SIGTERM)
			ctx = context.Background()
		case <-killTimer:
			c.log.Warn("service did not stop in time, killing its process group", "timeout", c.cfg.StopTimeout)
			c.kill(unix.SIGKILL)
		case <-c.exited:
			return c.Wait(), nil
		}
	}
}
