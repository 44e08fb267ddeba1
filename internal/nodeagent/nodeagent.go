package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/podcgroup"
)

// Defaults.
const (
	DefaultCgroupRoot = "/sys/fs/cgroup"
	DefaultStateDir   = "/var/lib/slowpoke"
)

// Service is one service of the run: its controller's port and its pods,
// by UID, on every node (those on this node are served).
type Service struct {
	Name string
	Port int
	Pods []string
}

// ParseService parses NAME=PORT:UID,UID,... (the agent's --service).
func ParseService(s string) (Service, error) {
	name, rest, ok := strings.Cut(s, "=")
	port, uids, ok2 := strings.Cut(rest, ":")
	p, err := strconv.Atoi(port)
	if !ok || !ok2 || name == "" || err != nil || p <= 0 || p > 65535 {
		return Service{}, fmt.Errorf("service %q: want NAME=PORT:UID,UID,...", s)
	}
	sv := Service{Name: name, Port: p}
	for _, uid := range strings.Split(uids, ",") {
		if !podcgroup.ValidUID(uid) {
			return Service{}, fmt.Errorf("service %q: %q is not a pod UID", name, uid)
		}
		sv.Pods = append(sv.Pods, uid)
	}
	return sv, nil
}

// String is the form ParseService reads.
func (s Service) String() string {
	return fmt.Sprintf("%s=%d:%s", s.Name, s.Port, strings.Join(s.Pods, ","))
}

// Config configures an agent.
type Config struct {
	Services []Service
	// CgroupRoot is the node's cgroup file system (DefaultCgroupRoot).
	CgroupRoot string
	// StateDir is a directory of the node's for the ledgers
	// (DefaultStateDir).
	StateDir string
	// Host is the address the controllers listen on ("": every one).
	Host string
	// RunID names this agent's ledger.
	RunID    string
	Secret   []byte
	Lease    time.Duration
	MaxPause time.Duration
	Logger   *slog.Logger

	// A run whose pods span nodes (peer.go): Node is this agent's node's
	// name; PeerListen the address it listens on for the other nodes'
	// agents ("": it does not); Peers the other nodes' agents, which the
	// target's controller asks to freeze the pods on their nodes.
	Node       string
	PeerListen string
	Peers      []Peer
	// PodsUnder is where this node's kubelet puts its pods, relative to
	// each hierarchy's root ("kubepods", or "<cgroup root>/kubepods"):
	// the agent touches no pod elsewhere, which another kubelet (another
	// node sharing this one's cgroup file system) would own. "": that of
	// the agent's own pod, or anywhere when it runs in none.
	PodsUnder string
}

// Agent is a running node agent.
type Agent struct {
	cfg    Config
	log    *slog.Logger
	node   podcgroup.Node
	ledger *podcgroup.Ledger
	self   string // this agent's own pod's UID, "" if unknown

	mu    sync.Mutex
	pods  map[string]podcgroup.Pod
	tried map[string]time.Time // when a pod not found was last looked for

	ctls map[string]*controller.Controller

	// Rounds across nodes (peer.go).
	peerLn    net.Listener
	peerWG    sync.WaitGroup
	peerConns map[net.Conn]struct{}
	rounds    []RoundRecord // the last run's, as the initiator
	skews     []Skew
	all       []RoundRecord // every run's, the last keepAll
	cpuLinks  map[string]*cpuLink
	lost      map[string]string // node: why its agent was lost mid-slowdown
	// longer is, per other node, how much longer its freezes lasted
	// than this node's, summed over every round since the agent
	// started (signed; updated as each round's thaws are known).
	longer map[string]time.Duration
}

// Start thaws what agents that are gone left frozen on this node, then
// serves a controller for each service.
func Start(cfg Config) (*Agent, error) {
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = DefaultCgroupRoot
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.RunID == "" {
		cfg.RunID = "run"
	}
	node, err := podcgroup.Open(cfg.CgroupRoot)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, node: node, pods: map[string]podcgroup.Pod{}, tried: map[string]time.Time{},
		ctls: map[string]*controller.Controller{}, peerConns: map[net.Conn]struct{}{}, cpuLinks: map[string]*cpuLink{}, lost: map[string]string{}, longer: map[string]time.Duration{}}
	a.self = ownPod()
	if a.cfg.PodsUnder == "" {
		a.cfg.PodsUnder = ownPodsUnder()
	}
	if err := thawGone(cfg.StateDir, node, a.log); err != nil {
		return nil, fmt.Errorf("nodeagent: thawing what earlier agents left: %w", err)
	}
	if a.ledger, err = podcgroup.OpenLedger(cfg.StateDir, cfg.RunID, node); err != nil {
		return nil, err
	}
	for _, sv := range cfg.Services {
		var pods controller.PodService = podService{a, slices.Clone(sv.Pods)}
		if len(cfg.Peers) > 0 {
			pods = spanningService{podService{a, slices.Clone(sv.Pods)}}
		}
		c, err := controller.Start(controller.Config{
			Name: sv.Name, Pods: pods, Listen: net.JoinHostPort(cfg.Host, strconv.Itoa(sv.Port)),
			Secret: cfg.Secret, MaxPause: cfg.MaxPause, Lease: cfg.Lease, Logger: cfg.Logger,
		})
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("nodeagent: service %s: %w", sv.Name, err)
		}
		a.ctls[sv.Name] = c
	}
	if cfg.PeerListen != "" {
		if a.peerLn, err = net.Listen("tcp", cfg.PeerListen); err != nil {
			a.Close()
			return nil, fmt.Errorf("nodeagent: listening for other nodes' agents: %w", err)
		}
		go a.servePeers(a.peerLn)
	}
	a.log.Info("node agent started", "node", cfg.Node, "services", len(cfg.Services), "cgroups", cfg.CgroupRoot, "pods_under", a.cfg.PodsUnder,
		"v2", node.V2, "ledger", a.ledger.Path(), "peer_listen", a.PeerAddr(), "peers", len(cfg.Peers))
	return a, nil
}

// ThawLeft thaws what the ledgers of agents that are gone record, for
// `slowpoke agent --thaw-only` (what `slowpoke restore` runs on a node).
func ThawLeft(cgroupRoot, stateDir string, log *slog.Logger) error {
	node, err := podcgroup.Open(cgroupRoot)
	if err != nil {
		return err
	}
	thawed, err := podcgroup.ThawRecorded(stateDir, node)
	log.Info("thawed what agents that are gone left", "cgroups", thawed)
	return err
}

// thawGone thaws what the ledgers of agents that are gone record, and
// logs what it thawed.
func thawGone(stateDir string, node podcgroup.Node, log *slog.Logger) error {
	thawed, err := podcgroup.ThawRecorded(stateDir, node)
	if len(thawed) > 0 {
		log.Warn("thawed the pods of agents that are gone", "cgroups", thawed)
	}
	return err
}

// WatchEvery is how often the watchdog (Watch) looks for agents that are
// gone: the longest a SIGKILLed agent's pods stay frozen, plus one thaw.
const WatchEvery = 100 * time.Millisecond

// Watch is the agents' watchdog, `slowpoke agent --watch`, the second
// container of every agent's pod: until ctx ends, it thaws every `every`
// what the ledgers of agents that are gone record. An agent killed with
// SIGKILL (or by the OOM killer) cannot thaw what it froze, and its
// controllers' hard caps die with it; without the watchdog its pods would
// stay frozen until the kubelet restarts its container, which after a few
// restarts waits up to five minutes. A ledger whose agent still runs is
// never touched. It looks once more as it ends.
func Watch(ctx context.Context, cgroupRoot, stateDir string, every time.Duration, log *slog.Logger) error {
	node, err := podcgroup.Open(cgroupRoot)
	if err != nil {
		return err
	}
	log.Info("watching for agents that are gone", "ledgers", stateDir, "every", every)
	t := time.NewTicker(every)
	defer t.Stop()
	var failing string // the last error logged, not repeated every tick
	for {
		err := thawGone(stateDir, node, log)
		switch {
		case err != nil && err.Error() != failing:
			log.Error("could not thaw every pod an agent that is gone froze; trying again", "err", err)
			failing = err.Error()
		case err == nil:
			failing = ""
		}
		select {
		case <-ctx.Done():
			return thawGone(stateDir, node, log)
		case <-t.C:
		}
	}
}

// Addr is the control address of the service's controller.
func (a *Agent) Addr(service string) string {
	if c := a.ctls[service]; c != nil {
		return c.Addr()
	}
	return ""
}

// PeerAddr is the address other nodes' agents reach this one at, "" if
// none.
func (a *Agent) PeerAddr() string {
	if a.peerLn == nil {
		return ""
	}
	return a.peerLn.Addr().String()
}

// Skews is the skew across nodes of the last slowdown run this agent's
// target controller froze pods on other nodes in, and Rounds its records
// (up to the last 4096 rounds); nil before one ended.
func (a *Agent) Skews() []Skew {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.skews)
}

// Rounds: see Skews.
func (a *Agent) Rounds() []RoundRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.rounds)
}

// Close ends every controller (their slowdowns stop, what they froze is
// thawed), ends the other nodes' agents' connections (what they had this
// node freeze is thawed) and thaws everything the ledger records.
func (a *Agent) Close() error {
	for _, c := range a.ctls {
		c.Release()
		c.Wait()
	}
	if a.peerLn != nil {
		a.peerLn.Close()
	}
	a.mu.Lock()
	for c := range a.peerConns {
		c.Close()
	}
	a.mu.Unlock()
	a.peerWG.Wait()
	a.closeCPULinks()
	if a.ledger == nil {
		return nil
	}
	return a.ledger.Close()
}

// find returns the pod's cgroup on this node, looking again for one not
// found at most once a second (CPU is read often).
func (a *Agent) find(uid string) (podcgroup.Pod, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.pods[uid]; ok {
		return p, nil
	}
	if t, ok := a.tried[uid]; ok && time.Since(t) < time.Second {
		return podcgroup.Pod{}, fmt.Errorf("no cgroup of pod %s on this node", uid)
	}
	p, err := a.node.Find(uid)
	if err == nil && !under(p.Rel, a.cfg.PodsUnder) {
		err = fmt.Errorf("pod %s is not on this node: its cgroup %s is not under this kubelet's %s", uid, p.Rel, a.cfg.PodsUnder)
	}
	if err != nil {
		a.tried[uid] = time.Now()
		return podcgroup.Pod{}, err
	}
	a.pods[uid] = p
	return p, nil
}

// podService is one service's pods on this node (controller.PodService).
type podService struct {
	a    *Agent
	uids []string
}

func (s podService) CPU() time.Duration {
	var sum time.Duration
	for _, uid := range s.uids {
		if p, err := s.a.find(uid); err == nil {
			if d, err := p.CPU(); err == nil {
				sum += d
			}
		}
	}
	return sum
}

func (s podService) Owns(uid string) bool { return slices.Contains(s.uids, uid) }

func (s podService) Freezers(uids []string) ([]pause.Cgroup, error) {
	var pods []podcgroup.Pod
	for _, uid := range uids {
		if uid == s.a.self {
			return nil, fmt.Errorf("pod %s is the node agent's own", uid)
		}
		p, err := s.a.find(uid)
		if err != nil {
			return nil, err
		}
		pods = append(pods, p)
	}
	if err := s.a.ledger.Add(pods...); err != nil {
		return nil, err
	}
	out := make([]pause.Cgroup, len(pods))
	for i, p := range pods {
		out[i] = p.Freezer()
	}
	return out, nil
}

// under says whether the relative path rel is dir or below it ("" is
// everywhere).
func under(rel, dir string) bool {
	return dir == "" || rel == dir || strings.HasPrefix(rel, dir+"/")
}

// ownPodsUnder is where the kubelet that runs this process's pod puts
// pods (relative to a hierarchy's root, up to its kubepods directory),
// from this process's cgroup, or "" where it runs in no pod.
func ownPodsUnder() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		// 4:freezer:/slowpoke-n1/kubepods/besteffort/pod<uid>/<id>, or
		// 0::/kubepods.slice/... (v2): the freezer's or the unified one.
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || (f[1] != "freezer" && !(f[0] == "0" && f[1] == "")) {
			continue
		}
		parts := strings.Split(strings.Trim(f[2], "/"), "/")
		for i, part := range parts {
			if part == "kubepods" || strings.HasPrefix(part, "kubepods.") || strings.HasPrefix(part, "kubepods-") {
				return strings.Join(parts[:i+1], "/")
			}
		}
	}
	return ""
}

// ownPod is the UID of the pod this process runs in, from its cgroup's
// path, or "".
func ownPod() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		for _, part := range strings.Split(line, "/") {
			if uid, ok := podcgroup.PodDirName(part); ok {
				return uid
			}
		}
	}
	return ""
}

// Run starts an agent and serves until ctx ends or a signal comes
// (Serve).
func Run(ctx context.Context, cfg Config) error {
	a, err := Start(cfg)
	if err != nil {
		return err
	}
	return a.Serve(ctx)
}

// Serve serves until ctx ends or SIGTERM, SIGINT or SIGHUP arrives (the
// pod deleted or evicted), then closes the agent: every pod thawed.
func (a *Agent) Serve(ctx context.Context) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	select {
	case s := <-sigs:
		a.log.Info("ending: thawing every pod", "signal", s)
	case <-ctx.Done():
	}
	if err := a.Close(); err != nil {
		return errors.Join(errors.New("nodeagent: could not thaw every pod"), err)
	}
	a.log.Info("node agent ended, every pod thawed")
	return nil
}
