package backend

import (
	"fmt"
	"math"
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
	// ModeKeep pins nothing: the services stay on the cores they run on
	// (an attached service as its user placed it, a started one on every
	// core), as do the controllers, the load generator and the
	// orchestrator. The target shares its cores with everything, so the
	// cores pause method is not available; the prediction reads the
	// machine's cores as one pool (docs/method.md, "Your placement and
	// slowpoke's").
	ModeKeep Mode = "keep"
)

// Modes lists the modes a user may ask the local backend for, for flags
// and errors.
var Modes = []Mode{ModeAuto, ModeShared, ModeDedicated, ModeKeep}

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
	// Keep is set under ModeKeep: TargetCPUs and OtherCPUs both name
	// every core this process may use, and nothing is pinned to them.
	Keep bool
}

// Mode is the placement made: ModeDedicated, ModeShared, ModeKeep or
// ModeCluster.
func (p Placement) Mode() Mode {
	if p.Cluster {
		return ModeCluster
	}
	if p.Keep {
		return ModeKeep
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

// CoreCount is how many cores service may run on as placed: as many as
// CPUs names, or +Inf where a cluster placed it and no core is named (its
// pod's CPU limit is the user's to state, in the spec's cpus).
func (p Placement) CoreCount(service string) float64 {
	if p.Cluster {
		return math.Inf(1)
	}
	return float64(len(p.CPUs(service)))
}

// SharesCores says whether services a and b may run on a core in common;
// never where a cluster placed them, in pods of their own.
func (p Placement) SharesCores(a, b string) bool {
	return !p.Cluster && SharesCPU(p.CPUs(a), p.CPUs(b))
}

// SharesLoadCores says whether service may run on a core that the load
// generator (this process) runs on too: always, but under dedicated
// placement or where a cluster placed the services.
func (p Placement) SharesLoadCores(service string) bool {
	return !p.Cluster && SharesCPU(p.CPUs(service), p.OtherCPUs)
}

// SharedCores says whether the paused services share their cores with the
// controllers and the load generator (shared placement): then those
// cores, not the target, can bound a slowdown's throughput, and the work
// of the controllers and the load generator competes with the services'.
func (p Placement) SharedCores() bool { return p.Mode() == ModeShared }

// SharesCPU reports whether two CPU sets overlap; an empty set (not
// pinned) overlaps everything.
func SharesCPU(a, b []int) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, c := range a {
		if slices.Contains(b, c) {
			return true
		}
	}
	return false
}
