package controller

import (
	"fmt"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// method is a pause method as this controller runs it: one type for each
// variant of wire.Pause, chosen by methodOf. The message's own form is
// wire.Configure.Check's; a method adds what only the controller knows.
type method interface {
	// Name is the method's name (the variant's).
	Name() string
	// check says whether this controller can pause as configured: what
	// the message alone cannot tell (its service's cores, the file
	// system).
	check(c *Controller) error
	// arm readies this controller's own pauser and its neighbours for
	// the next run. Called with c.mu held.
	arm(c *Controller)
	// start, on the target's controller, builds what pauses the other
	// services during a run; nil where their own controllers pause them,
	// moved by rounds.
	start(c *Controller, cf wire.Configure) (group, error)
}

// methodOf returns the method p configures.
func methodOf(p wire.Pause) (method, error) {
	m, err := p.Method()
	if err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case *wire.SignalPause:
		return signals{m}, nil
	case *wire.CgroupPause:
		return freezes{CgroupPause: m}, nil
	case *wire.CoresPause:
		return holds{CoresPause: m}, nil
	}
	return nil, fmt.Errorf("the %s method is not one this controller runs", m.Name())
}

// startGroup builds, on the target's controller, what pauses the other
// services during a run, where its method has one.
func (c *Controller) startGroup(cf wire.Configure) (group, error) {
	m, err := methodOf(cf.Pause)
	if err != nil || !cf.Target {
		return nil, err
	}
	g, err := m.start(c, cf)
	if err != nil {
		return nil, fmt.Errorf("%s method: %w", m.Name(), err)
	}
	return g, nil
}

// signals is the signal method: every controller stops its own service
// for every round it receives, and forwards the round to its neighbours.
type signals struct{ *wire.SignalPause }

func (signals) check(c *Controller) error {
	if c.cfg.Pods != nil {
		return errNoGroup
	}
	return nil
}

func (s signals) arm(c *Controller) {
	n := c.numCPUs()
	c.pauser.setOthers(colocatedCPU(s.Colocated, n), colocatedCPU(s.CorePeers, n))
	for _, nb := range s.Neighbours {
		if c.peers[nb.Addr] == nil {
			c.peers[nb.Addr] = newPeer(nb, c.cfg.Secret, c.noteForwardError)
		}
	}
}

func (signals) start(*Controller, wire.Configure) (group, error) { return nil, nil }

// targetPauses is what the methods in which the target's controller
// pauses every other service itself (cgroup, cores) share: no rounds
// travel, and no controller stops its own service. What pauses the others
// is a group that lives for one slowdown run: a holder's real-time threads
// exist only while a run does.
type targetPauses struct{}

func (targetPauses) arm(c *Controller) { c.pauser.setOthers(nil, nil) }

// group is what pauses the other services for the target's controller.
type group interface {
	// bell is where the target's instrumentation rings rounds itself, ""
	// where the controller starts them from its ticks.
	bellPath() string
	// Pause asks for d more of pause; it never blocks for long.
	Pause(d time.Duration)
	stats() pauseStats
	// timesBusy says whether the group measures the target's CPU over its
	// pauses itself (pauseStats.busyIn).
	timesBusy() bool
	// close ends the pausing, leaving everything continued, frees the
	// mechanism and returns the counters.
	close() pauseStats
}
