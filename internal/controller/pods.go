package controller

import (
	"errors"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// A controller may serve a service that runs in pods of this node
// (Config.Pods): the node agent runs one per service, beside the pods,
// instead of one inside each pod. It starts nothing and ends nothing: it
// has no process group to signal (the signal and cores methods are
// refused), reads the service's CPU time from its pods' cgroups (for
// Stats and the CPU trigger), and, as the target, freezes the other
// services' pods by UID (wire.CgroupPause.Pods). Release ends it.

// PodService is a service that runs in pods on this node.
type PodService interface {
	// CPU is the CPU time the service's pods on this node have used.
	CPU() time.Duration
	// Owns says whether the pod whose UID is uid is one of the service's.
	Owns(uid string) bool
	// Freezers returns the cgroups of the pods given by UID on this node,
	// once they are recorded where a later agent finds them (so that
	// they are thawed should this process die before it thaws them).
	Freezers(uids []string) ([]pause.Cgroup, error)
}

// SpanningPods is a PodService whose run spans nodes: some of the pods it
// is asked to freeze may run on other nodes, whose agents freeze them
// (internal/nodeagent). It freezes them itself, wherever they run.
type SpanningPods interface {
	PodService
	// PodFreezer returns what freezes (Set(true)) and thaws the pods
	// given by UID, on this node and on the others; every freeze on
	// another node is capped at max there, by that node's agent, so that
	// a thaw lost on the way leaves nothing frozen for longer.
	PodFreezer(uids []string, max time.Duration) (PodFreezer, error)
}

// NodeSkewer is a SpanningPods that reports the skew of its rounds
// across nodes (wire.Stats.NodeSkews).
type NodeSkewer interface {
	NodeSkews() []wire.NodeSkew
}

// PodFreezer freezes and thaws a set of pods (pause.Freezer is one, for
// cgroups on this node).
type PodFreezer interface {
	Set(frozen bool) error
	Close() error
}

// TimedPodFreezer is a PodFreezer told how long each freeze is to last,
// and again whenever the freeze under way grows (pause asked for
// meanwhile, the co-located extension): the other nodes' agents then
// thaw on time by themselves instead of when the thaw reaches them
// (internal/nodeagent). Set(false) still thaws everything, at once where
// it comes first.
type TimedPodFreezer interface {
	PodFreezer
	// Freeze freezes, for d from now.
	Freeze(d time.Duration) error
	// Lengthen says that the freeze under way lasts d in all.
	Lengthen(d time.Duration)
}

// errNoGroup refuses the methods that need the service's process group.
var errNoGroup = errors.New("this controller serves pods it did not start (the node agent): it has no process group to signal or cores to keep; use the cgroup method")

// serviceCPUTime is the service's CPU time: its process group leader's,
// its pods', or an attached service's processes' (any of them may do its
// work: a shell script's workers, a pre-fork server's).
func (c *Controller) serviceCPUTime() time.Duration {
	if c.cfg.Pods != nil {
		return c.cfg.Pods.CPU()
	}
	if c.cfg.Attach != nil {
		cpu, _ := c.cfg.Attach.CPUTime()
		return cpu
	}
	return processCPU(c.pgid)
}

// cgroupMeter is the CPU trigger's meter for a service in pods: their
// cgroups' CPU time since the meter was made.
type cgroupMeter struct {
	read0 time.Duration
	cpu   func() time.Duration
}

func (m *cgroupMeter) read(time.Time) time.Duration { return max(0, m.cpu()-m.read0) }

// newMeter returns the CPU trigger's meter for the service.
func (c *Controller) newMeter(now time.Time) interface{ read(time.Time) time.Duration } {
	if c.cfg.Pods != nil {
		return &cgroupMeter{read0: c.cfg.Pods.CPU(), cpu: c.cfg.Pods.CPU}
	}
	return newCPUMeterOf(c.members, processCPU, now) // its process group, or an attached service's processes
}

// Release ends a controller of pods (Config.Pods): the slowdown stops,
// what it froze is thawed, and Done is closed. Nothing is ended. It does
// nothing on a controller that started its service.
func (c *Controller) Release() {
	if c.cfg.Pods == nil {
		return
	}
	c.releaseOnce.Do(func() {
		c.pauser.Close()
		c.mu.Lock()
		c.childGone = true
		c.mu.Unlock()
		c.stopSlowdown()
		c.sigMu.Lock()
		c.dead = true
		c.sigMu.Unlock()
		close(c.exited)
	})
}
