package backend

import (
	"fmt"
	"slices"
)

// Mode says how Place spreads the services over the cores.
type Mode string

const (
	// ModeAuto is ModeDedicated where the machine has the cores for it,
	// and ModeShared otherwise. The zero Mode means ModeAuto.
	ModeAuto Mode = "auto"
	// ModeShared gives only the target cores of its own; every other
	// service shares the rest with the controllers, the load generator and
	// the orchestrator. Sharing is safe for the non-target services
	// because they are paused together.
	ModeShared Mode = "shared"
	// ModeDedicated gives every service its spec'd number of cores of its
	// own, as the paper's one service per node does, and keeps at least
	// MinLoadCPUs for the controllers, the load generator and the
	// orchestrator. Place refuses it on a machine too small for it.
	ModeDedicated Mode = "dedicated"
	// ModeCluster is where a cluster placed the services (each pod on a
	// node the scheduler chose): slowpoke knows nothing of their cores,
	// and the load generator runs on none of them.
	ModeCluster Mode = "cluster"
)

// Modes lists the modes a user may ask the local backend for, for flags
// and errors.
var Modes = []Mode{ModeAuto, ModeShared, ModeDedicated}

// ParseMode checks a mode given by name ("" is ModeAuto).
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeAuto, nil
	}
	if m := Mode(s); slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("unknown placement %q: want one of %v", s, Modes)
}

// Placement says which CPUs each part of an experiment runs on.
type Placement struct {
	Target     string
	TargetCPUs []int // the target's cores (empty when there is no target)
	// OtherCPUs are the cores everything without cores of its own shares:
	// the controllers, the load generator, the orchestrator and, unless
	// Services is set, the non-target services.
	OtherCPUs []int
	// Services are the cores of each non-target service under dedicated
	// placement; nil when they share OtherCPUs.
	Services map[string][]int
	Warning  string
	// Cluster is set when a cluster placed the services (ModeCluster):
	// then no field above names a core.
	Cluster bool
}

// Mode is the placement made: ModeDedicated, ModeShared or ModeCluster.
func (p Placement) Mode() Mode {
	if p.Cluster {
		return ModeCluster
	}
	if p.Services != nil {
		return ModeDedicated
	}
	return ModeShared
}

// CPUs returns the CPUs a service runs on.
func (p Placement) CPUs(service string) []int {
	if service == p.Target && len(p.TargetCPUs) > 0 {
		return p.TargetCPUs
	}
	if cpus, ok := p.Services[service]; ok {
		return cpus
	}
	return p.OtherCPUs
}

// PausedCPUs are the cores the non-target services (the paused ones) run
// on, in increasing order.
func (p Placement) PausedCPUs() []int {
	if p.Services == nil {
		return p.OtherCPUs
	}
	var out []int
	for _, cpus := range p.Services {
		out = append(out, cpus...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// HoldCores are the cores the cores method holds: those of the services
// other than the target, never the target's.
func (p Placement) HoldCores() []int {
	return slices.DeleteFunc(slices.Clone(p.PausedCPUs()), func(c int) bool { return slices.Contains(p.TargetCPUs, c) })
}
