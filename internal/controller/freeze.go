package controller

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// freezes is the cgroup method: the target's controller freezes the other
// services' cgroups.
type freezes struct {
	*wire.CgroupPause
	targetPauses
}

func (f freezes) check(c *Controller) error {
	if len(f.Pods) > 0 && c.cfg.Pods == nil {
		return errors.New("pods to freeze by UID, but this controller runs its service itself: only the node agent's controllers find pods")
	}
	for _, uid := range f.Pods {
		if c.cfg.Pods.Owns(uid) {
			return fmt.Errorf("pod %s is the target's own, which is never paused", uid)
		}
	}
	for _, p := range f.Freeze {
		if _, err := cgroupVersion(p); err != nil {
			return err
		}
	}
	return nil
}

func (f freezes) start(c *Controller, _ wire.Configure) (group, error) {
	var fr PodFreezer
	if sp, ok := c.cfg.Pods.(SpanningPods); ok && len(f.Freeze) == 0 {
		// The node agent of a run that spans nodes: it freezes the
		// pods wherever they run.
		var err error
		if fr, err = sp.PodFreezer(f.Pods, c.cfg.MaxPause); err != nil {
			return nil, err
		}
	} else {
		var err error
		if fr, err = f.openFreezer(c); err != nil {
			return nil, err
		}
	}
	var s stopper = freezeStopper{fr}
	if tf, ok := fr.(TimedPodFreezer); ok {
		s = timedFreezeStopper{freezeStopper{fr}, tf}
	}
	p := newPauser(c.cfg.MaxPause, s)
	// The never-paused processes listed share the frozen services'
	// cores, which are this controller's own (it runs beside them).
	var own unix.CPUSet
	unix.SchedGetaffinity(0, &own)
	p.setOthers(colocatedCPU(f.Colocated, own.Count()), nil)
	return freezeGroup{p, fr}, nil
}

// openFreezer opens the cgroups to freeze, on this node.
func (f freezes) openFreezer(c *Controller) (*pause.Freezer, error) {
	cgs := make([]pause.Cgroup, len(f.Freeze))
	for i, p := range f.Freeze {
		v2, err := cgroupVersion(p)
		if err != nil {
			return nil, err
		}
		cgs[i] = pause.Cgroup{Path: p, V2: v2}
	}
	if len(f.Pods) > 0 {
		pods, err := c.cfg.Pods.Freezers(f.Pods)
		if err != nil {
			return nil, err
		}
		cgs = append(cgs, pods...)
	}
	return pause.OpenFreezer(cgs)
}

// freezeStopper freezes a set of cgroups, one write each (or pods
// wherever they run: SpanningPods).
type freezeStopper struct{ f PodFreezer }

func (s freezeStopper) stop() error { return s.f.Set(true) }
func (s freezeStopper) cont()       { s.f.Set(false) }

// timedFreezeStopper tells its freezer how long each freeze is to last
// (timedStopper).
type timedFreezeStopper struct {
	freezeStopper
	t TimedPodFreezer
}

func (s timedFreezeStopper) stopFor(d time.Duration) error { return s.t.Freeze(d) }
func (s timedFreezeStopper) lengthen(d time.Duration)      { s.t.Lengthen(d) }

// freezeGroup freezes cgroups from a pause loop of its own: a frozen
// cgroup stays frozen until thawed, so the loop times every freeze.
type freezeGroup struct {
	*pauser
	f PodFreezer
}

func (g freezeGroup) bellPath() string { return "" }

func (g freezeGroup) timesBusy() bool { return false }

func (g freezeGroup) close() pauseStats {
	g.Halt()
	g.Close()
	st := g.stats()
	g.f.Close()
	return st
}

// cgroupVersion checks that path is a cgroup slowpoke made (a directory on
// a cgroup file system, under a "slowpoke" directory) and says whether it
// is in the unified (v2) hierarchy.
func cgroupVersion(path string) (v2 bool, err error) {
	if !wire.SlowpokeCgroup(path) {
		return false, fmt.Errorf("%.100q is not a cgroup of slowpoke's", path)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false, fmt.Errorf("cgroup %s: %w", path, err)
	}
	switch fs.Type {
	case unix.CGROUP2_SUPER_MAGIC:
		return true, nil
	case unix.CGROUP_SUPER_MAGIC:
		return false, nil
	}
	return false, fmt.Errorf("%s is not on a cgroup file system", path)
}
