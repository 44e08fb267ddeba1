package experiment

import (
	"os"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// pausing is a pause method as the orchestrator runs it: what it tells
// each service's controller for a slowdown run. One type for each method
// (and for each variant of wire.Pause); the backend says which it can use
// (backend.Backend.PauseMethod).
type pausing interface {
	// configure sets cf.Pause, and what the method changes of the rest
	// of cf, for the service called name (skip: it takes no part in the
	// run). neighbours are the services each forwards rounds to.
	configure(r *Runner, cf *wire.Configure, name string, neighbours map[string][]string) (skip bool)
	// rounds says whether rounds travel between the controllers: only
	// then can they be sent along the call graph, or every service pace
	// itself instead (Tuning.GraphRounds, Tuning.Uncoordinated).
	rounds() bool
}

// pausings are the methods, by name.
var pausings = map[pause.Method]pausing{
	pause.MethodSignal: signals{},
	pause.MethodCgroup: freezes{},
	pause.MethodCores:  holds{},
}

// signals: every service's controller stops it at every round it
// receives, and forwards the round to its neighbours.
type signals struct{}

func (signals) rounds() bool { return true }

func (signals) configure(r *Runner, cf *wire.Configure, name string, neighbours map[string][]string) bool {
	s := &wire.SignalPause{Colocated: r.colocated(name), CorePeers: r.corePeers(name), LeadNS: int64(r.opts.Tuning.pauseLead())}
	cf.Pause = wire.Pause{Signal: s}
	if r.opts.Tuning.Uncoordinated && !cf.Target && r.prof != nil {
		// Same pause per call as rounds give, applied locally: B calls of
		// this service take B d c1/(q1 ci).
		ci := r.prof.ci[name]
		if ci <= 0 {
			return true
		}
		s.Local = true
		cf.PausePerRoundNS = int64(float64(cf.PausePerRoundNS) * r.prof.c1 / ci)
	}
	if r.opts.Tuning.Uncoordinated {
		return false // no rounds travel: every service paces itself
	}
	for _, n := range neighbours[name] {
		if ns := r.d.Service(n); ns != nil && ns.Control != nil {
			s.Neighbours = append(s.Neighbours, wire.Neighbour{Name: n, Addr: ns.Control.Addr()})
		}
	}
	return false
}

// freezes: the target's controller freezes the other services' cgroups,
// extending each freeze by what the load generator used on their cores
// meanwhile (as SignalPause.Colocated does for signals). The other
// controllers take no part.
type freezes struct{}

func (freezes) rounds() bool { return false }

func (freezes) configure(r *Runner, cf *wire.Configure, name string, _ map[string][]string) bool {
	g := &wire.CgroupPause{}
	cf.Pause = wire.Pause{Cgroup: g}
	if !cf.Target {
		return false
	}
	for _, svc := range r.d.Services() {
		if svc.Name == name {
			continue
		}
		cgroup, pods := r.d.FreezeRefs(svc.Name)
		if cgroup != "" {
			g.Freeze = append(g.Freeze, cgroup)
		}
		g.Pods = append(g.Pods, pods...)
	}
	// Under shared placement the load generator runs on the paused
	// services' cores.
	if !r.opts.Tuning.NoColocatedExtension && r.d.Placement().SharedCores() {
		g.Colocated = []int{os.Getpid()}
	}
	return false
}

// holds: the target's controller holds the other services' cores; the
// other controllers take no part.
type holds struct{}

func (holds) rounds() bool { return false }

func (holds) configure(r *Runner, cf *wire.Configure, _ string, _ map[string][]string) bool {
	h := &wire.CoresPause{}
	if cf.Target {
		h.Cores = r.d.Placement().HoldCores()
	}
	cf.Pause = wire.Pause{Cores: h}
	return false
}
