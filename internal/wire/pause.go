package wire

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"
)

// Pause is how a slowdown run pauses the services other than the target
// (Configure.Pause): a tagged union of the pause methods, whose key on the
// wire names the method. At most one field is set; none is the signal
// method with nothing to forward to. Each method carries only its own
// fields, so that no field of one can travel with another.
//
// A new method is one more type that implements PauseMethod, one more
// field here, and one more line in Method.
type Pause struct {
	Signal *SignalPause `json:"signal,omitempty"`
	Cgroup *CgroupPause `json:"cgroup,omitempty"`
	Cores  *CoresPause  `json:"cores,omitempty"`
}

// PauseMethod is one method's configuration: one variant of Pause.
type PauseMethod interface {
	// Name is the method's name, as pause.Method spells it.
	Name() string
	// check says whether the configuration is well formed for the
	// controller of the target or of another service: its fields' bounds
	// and forms, and which of them each may be sent.
	check(target bool) error
}

// Method returns the one method p configures.
func (p Pause) Method() (PauseMethod, error) {
	var set []PauseMethod
	add := func(ok bool, m PauseMethod) {
		if ok {
			set = append(set, m)
		}
	}
	add(p.Signal != nil, p.Signal)
	add(p.Cgroup != nil, p.Cgroup)
	add(p.Cores != nil, p.Cores)
	switch len(set) {
	case 0:
		return &SignalPause{}, nil
	case 1:
		return set[0], nil
	}
	names := make([]string, len(set))
	for i, m := range set {
		names[i] = m.Name()
	}
	return nil, fmt.Errorf("pause methods %s at once: want one", strings.Join(names, " and "))
}

// SignalPause is the signal method: every controller stops its own
// service's process group (SIGSTOP, then SIGCONT) for the pause of every
// round it receives, and forwards the round once to its neighbours.
type SignalPause struct {
	// Neighbours are the controllers this one forwards rounds to.
	Neighbours []Neighbour `json:"neighbours,omitempty"`
	// Local switches a non-target to uncoordinated pausing, for comparison
	// with rounds: it pauses PausePerRoundNS every Batch calls to its own
	// service, on its own, and neither sends nor forwards rounds.
	Local bool `json:"local,omitempty"`
	// Colocated are processes that are never paused but share this
	// service's cores (load generator, controllers). A stop is extended by
	// the CPU time they use during it, so that it removes the full pause
	// from the cores' capacity instead of lending part of it to them.
	Colocated []int `json:"colocated,omitempty"`
	// CorePeers are the other paused services on this service's cores
	// (not the round neighbours). Stops due together start and end a
	// little apart (each controller wakes in turn on a shared core), and a
	// peer that runs while this service is stopped takes the core the
	// pause should have left idle. At the end of the stop as asked, the
	// stop is extended once by the CPU time the peers used since it began,
	// divided by the service's cores.
	CorePeers []int `json:"core_peers,omitempty"`
	// LeadNS delays each stop until this long after the round was
	// triggered (Round.SentUnixNS), so that services sharing cores stop
	// together instead of one round delay apart; a round that arrives
	// later stops at once. 0 stops on arrival.
	LeadNS int64 `json:"lead_ns,omitempty"`
}

// Name is "signal".
func (*SignalPause) Name() string { return "signal" }

func (s *SignalPause) check(target bool) error {
	switch {
	case target && s.Local:
		return errors.New("the target never pauses: local mode is for the other services")
	case len(s.Neighbours) > MaxNeighbours:
		return fmt.Errorf("at most %d neighbours, got %d", MaxNeighbours, len(s.Neighbours))
	case s.LeadNS < 0 || time.Duration(s.LeadNS) > MaxLead:
		return fmt.Errorf("lead must be in [0, %v], got %v", MaxLead, time.Duration(s.LeadNS))
	}
	for _, n := range s.Neighbours {
		if _, _, err := net.SplitHostPort(n.Addr); err != nil || n.Name == "" || len(n.Name) > 253 {
			return fmt.Errorf("bad neighbour %q at %q", n.Name, n.Addr)
		}
	}
	if err := checkPIDs("co-located processes", s.Colocated); err != nil {
		return err
	}
	return checkPIDs("core peers", s.CorePeers)
}

// CgroupPause is the cgroup method: the target's controller freezes the
// other services' cgroups at every round, one write each, and thaws them
// when the round's pause has passed. No rounds travel.
type CgroupPause struct {
	// Freeze are the cgroups to freeze (target only): the other
	// services', made by slowpoke.
	Freeze []string `json:"freeze,omitempty"`
	// Pods are the other services' pods to freeze, by UID (target
	// only): a node agent finds their cgroups on its node.
	Pods []string `json:"pods,omitempty"`
	// Colocated are processes that are never frozen but share the frozen
	// services' cores (target only; see SignalPause.Colocated).
	Colocated []int `json:"colocated,omitempty"`
}

// Name is "cgroup".
func (*CgroupPause) Name() string { return "cgroup" }

func (g *CgroupPause) check(target bool) error {
	switch {
	case len(g.Freeze) > MaxNeighbours:
		return fmt.Errorf("at most %d cgroups to freeze, got %d", MaxNeighbours, len(g.Freeze))
	case len(g.Pods) > MaxPods:
		return fmt.Errorf("at most %d pods to freeze, got %d", MaxPods, len(g.Pods))
	case !target && (len(g.Freeze) > 0 || len(g.Pods) > 0 || len(g.Colocated) > 0):
		return errors.New("only the target's controller freezes cgroups")
	case target && len(g.Freeze) == 0 && len(g.Pods) == 0:
		return errors.New("the cgroup method needs the cgroups or the pods to freeze")
	}
	for _, p := range g.Freeze {
		if !SlowpokeCgroup(p) {
			return fmt.Errorf("%.100q is not a cgroup of slowpoke's", p)
		}
	}
	for _, uid := range g.Pods {
		if !PodUID(uid) {
			return fmt.Errorf("%.60q is not a pod's UID", uid)
		}
	}
	return checkPIDs("co-located processes", g.Colocated)
}

// SlowpokeCgroup checks the form of a path to a cgroup slowpoke made: an
// absolute, clean path under a "slowpoke" directory. The controller
// checks that it is on a cgroup file system.
func SlowpokeCgroup(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && len(p) <= MaxPath && strings.Contains(p, "/slowpoke/")
}

// PodUID checks the form of a pod's UID (CgroupPause.Pods): RFC 4122
// text in lower case, the form the kubelet names the pod's cgroup after.
func PodUID(uid string) bool {
	if len(uid) != 36 {
		return false
	}
	for i, r := range uid {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if r != '-' {
				return false
			}
		case !('0' <= r && r <= '9' || 'a' <= r && r <= 'f'):
			return false
		}
	}
	return true
}

// CoresPause is the cores method: the target's controller holds the
// cores the other services run on at every round (a real-time thread
// spins on each for the round's pause). No rounds travel.
type CoresPause struct {
	// Cores are the cores to hold (target only), never the target's.
	Cores []int `json:"cores,omitempty"`
	// HeldFile is a file the orchestrator made (see pause.HeldFile) to
	// which the holds' time is added as they end: a load generator on the
	// held cores keeps its clock in their time. Optional.
	HeldFile string `json:"held_file,omitempty"`
}

// Name is "cores".
func (*CoresPause) Name() string { return "cores" }

func (h *CoresPause) check(target bool) error {
	switch {
	case len(h.Cores) > MaxHoldCores:
		return fmt.Errorf("at most %d cores to hold, got %d", MaxHoldCores, len(h.Cores))
	case !target && (len(h.Cores) > 0 || h.HeldFile != ""):
		return errors.New("only the target's controller holds cores")
	case target && len(h.Cores) == 0:
		return errors.New("the cores method needs the cores to hold")
	case h.HeldFile != "" && !heldFileName(h.HeldFile):
		return fmt.Errorf("held-time file %.100q: want an absolute path of at most %d bytes to a file named %s-*", h.HeldFile, MaxPath, HeldFileKind)
	}
	for _, core := range h.Cores {
		if core < 0 || core >= MaxCPU {
			return fmt.Errorf("bad core %d to hold", core)
		}
	}
	return nil
}

// HeldFileKind starts the name of a held-time file (CoresPause.HeldFile).
const HeldFileKind = "slowpoke-held"

// heldFileName checks the form of a held-time file's path; the controller
// checks the file when it opens it.
func heldFileName(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && len(p) <= MaxPath && strings.HasPrefix(filepath.Base(p), HeldFileKind+"-")
}

// checkPIDs checks a list of process ids sent to be measured.
func checkPIDs(what string, pids []int) error {
	if len(pids) > MaxColocated {
		return fmt.Errorf("at most %d %s, got %d", MaxColocated, what, len(pids))
	}
	for _, pid := range pids {
		if pid <= 0 {
			return fmt.Errorf("bad pid %d among the %s", pid, what)
		}
	}
	return nil
}

// Bounds on a configure message.
const (
	MaxBatch      = 1 << 20          // Configure.Batch, and the rounds coalesced in one (Round.Count)
	MaxCPUPerCall = 10 * time.Second // Configure.CPUPerCallNS
	// MaxLead bounds SignalPause.LeadNS: a round stamped further in the
	// future (a clock gone wrong) stops at once.
	MaxLead       = 50 * time.Millisecond
	MaxNeighbours = 256  // SignalPause.Neighbours, CgroupPause.Freeze
	MaxPods       = 1024 // CgroupPause.Pods
	MaxColocated  = 64   // each list of process ids
	MaxHoldCores  = 1024 // CoresPause.Cores
	MaxCPU        = 4096 // the highest core number, plus one
	MaxPath       = 4096 // a path's length in bytes
)

// Check says whether cf is well formed: every bound, and every
// combination of fields, of the message itself. What only the receiving
// controller can tell (its hard cap on a pause, its service's cores, the
// file system) it checks itself.
func (cf Configure) Check() error {
	m, err := cf.Pause.Method()
	if err != nil {
		return err
	}
	switch {
	case (cf.Target || cf.Local()) && (cf.Batch < 1 || cf.Batch > MaxBatch):
		return fmt.Errorf("batch must be in [1, %d], got %d", MaxBatch, cf.Batch)
	case cf.CPUPerCallNS < 0 || time.Duration(cf.CPUPerCallNS) > MaxCPUPerCall:
		return fmt.Errorf("CPU per call must be in [0, %v], got %v", MaxCPUPerCall, time.Duration(cf.CPUPerCallNS))
	case cf.CPUPerCallNS > 0 && !cf.Target:
		return errors.New("only the target's rounds follow its CPU time")
	case cf.PausePerRoundNS < 0:
		return fmt.Errorf("pause per round must be >= 0, got %d", cf.PausePerRoundNS)
	}
	if err := m.check(cf.Target); err != nil {
		return fmt.Errorf("%s method: %w", m.Name(), err)
	}
	return nil
}

// Local says whether cf switches a non-target to uncoordinated pausing
// (SignalPause.Local).
func (cf Configure) Local() bool { return cf.Pause.Signal != nil && cf.Pause.Signal.Local }

// Lead is how long after a round's trigger its stops are due
// (SignalPause.LeadNS); 0 for stops on arrival.
func (cf Configure) Lead() time.Duration {
	if cf.Pause.Signal == nil {
		return 0
	}
	return time.Duration(cf.Pause.Signal.LeadNS)
}
