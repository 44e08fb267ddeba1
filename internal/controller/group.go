package controller

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// With the cgroup and cores methods (wire.Configure.Method), the target's
// controller pauses every other service itself: it freezes their cgroups
// or holds their cores at every round, and the other controllers receive
// no rounds. What pauses them lives for one slowdown run: a holder's
// real-time threads exist only while a run does.

// freezeStopper freezes a set of cgroups, one write each.
type freezeStopper struct{ f *pause.Freezer }

func (s freezeStopper) stop() error { return s.f.Set(true) }
func (s freezeStopper) cont()       { s.f.Set(false) }

// group is what pauses the other services for the target's controller.
type group interface {
	// bell is where the target's instrumentation rings rounds itself, ""
	// where the controller starts them from its ticks.
	bellPath() string
	// Pause asks for d more of pause; it never blocks for long.
	Pause(d time.Duration)
	stats() pauseStats
	// close ends the pausing, leaving everything continued, frees the
	// mechanism and returns the counters.
	close() pauseStats
}

// freezeGroup freezes cgroups from a pause loop of its own: a frozen
// cgroup stays frozen until thawed, so the loop times every freeze.
type freezeGroup struct {
	*pauser
	f *pause.Freezer
}

func (g freezeGroup) bellPath() string { return "" }

func (g freezeGroup) close() pauseStats {
	g.Halt()
	g.Close()
	st := g.stats()
	g.f.Close()
	return st
}

// holdGroup holds cores. Its holds end by themselves, so no loop times
// them. The target's instrumentation rings the holder's bell (a FIFO in the
// controller's private directory) every batch of calls, so that a round
// wakes nothing on the held cores but the holding threads; instrumentation
// that cannot ring sends ticks, and the controller asks for the pause.
type holdGroup struct {
	h    *pause.Holder
	bell int    // the FIFO, opened for reading and writing, or -1
	path string // where the FIFO is, "" for none
	held *pause.HeldFile
}

func (g holdGroup) Pause(d time.Duration) { g.h.Pause(d) }

func (g holdGroup) bellPath() string { return g.path }

func (g holdGroup) stats() pauseStats {
	st := g.h.Stats()
	return pauseStats{requested: st.Requested, actual: st.Held, clipped: st.Clipped, heldCPU: st.HeldCPU,
		late: st.Late, due: st.Holds, longest: st.Longest, pauses: st.Holds,
		rounds: st.Rounds, busyIn: st.BusyIn, busyOver: st.BusyOver}
}

func (g holdGroup) close() pauseStats {
	g.h.Close()
	if g.bell >= 0 {
		unix.Close(g.bell)
		os.Remove(g.path)
	}
	st := g.stats()
	if g.held != nil {
		g.held.Close() // after the threads that add to it have ended
	}
	return st
}

// openBell makes the FIFO a run's rounds are rung on, readable by its
// owner only, and opens it for reading and writing: without a writer of
// its own, a FIFO whose instrumentation went away would read as ended,
// and one without a reader could not be opened for writing.
func openBell(path string) (int, error) {
	os.Remove(path) // a run that ended without closing its group
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return -1, fmt.Errorf("bell %s: %w", path, err)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(path)
		return -1, fmt.Errorf("bell %s: %w", path, err)
	}
	return fd, nil
}

// startGroup builds what pauses the other services during a run, when the
// method has it.
func (c *Controller) startGroup(cf wire.Configure) (group, error) {
	if !cf.Target {
		return nil, nil
	}
	switch pause.Method(cf.Method) {
	case pause.MethodCgroup:
		cgs := make([]pause.Cgroup, len(cf.Freeze))
		for i, p := range cf.Freeze {
			v2, err := cgroupVersion(p)
			if err != nil {
				return nil, err
			}
			cgs[i] = pause.Cgroup{Path: p, V2: v2}
		}
		f, err := pause.OpenFreezer(cgs)
		if err != nil {
			return nil, err
		}
		p := newPauser(c.cfg.MaxPause, freezeStopper{f})
		// The never-paused processes listed share the frozen services'
		// cores, which are this controller's own (it runs beside them).
		var own unix.CPUSet
		unix.SchedGetaffinity(0, &own)
		p.setOthers(colocatedCPU(cf.Colocated, own.Count()), nil)
		return freezeGroup{p, f}, nil
	case pause.MethodCores:
		path := filepath.Join(c.sockDir, "bell")
		bell, err := openBell(path)
		if err != nil {
			return nil, err
		}
		// The holder measures the target's CPU over every hold (it is
		// never held): whether it starves while its callers are stopped.
		pgid := c.pgid
		opts := []pause.HolderOption{pause.WithBell(bell, time.Duration(cf.PausePerRoundNS)),
			pause.WithBusyClock(func() time.Duration { return processCPU(pgid) })}
		var held *pause.HeldFile
		if cf.HeldFile != "" {
			if held, err = pause.OpenHeldFile(cf.HeldFile); err != nil {
				unix.Close(bell)
				os.Remove(path)
				return nil, err
			}
			opts = append(opts, pause.WithHeldTotal(held.Total()))
		}
		h, err := pause.NewHolder(cf.HoldCores, c.cfg.MaxPause, opts...)
		if err != nil {
			unix.Close(bell)
			os.Remove(path)
			if held != nil {
				held.Close()
			}
			return nil, err
		}
		return holdGroup{h: h, bell: bell, path: path, held: held}, nil
	}
	return nil, nil
}

// checkMethod validates the method fields of a configure message.
func (c *Controller) checkMethod(cf wire.Configure) error {
	m, err := pause.ParseMethod(cf.Method)
	if err != nil || m == pause.MethodAuto {
		return fmt.Errorf("pause method %q: want signal, cgroup or cores", cf.Method)
	}
	switch {
	case len(cf.Freeze) > maxNeighbours:
		return fmt.Errorf("at most %d cgroups to freeze, got %d", maxNeighbours, len(cf.Freeze))
	case len(cf.HoldCores) > maxHoldCores:
		return fmt.Errorf("at most %d cores to hold, got %d", maxHoldCores, len(cf.HoldCores))
	case (len(cf.Freeze) > 0 || len(cf.HoldCores) > 0) && !cf.Target:
		return errors.New("only the target's controller freezes cgroups or holds cores")
	case len(cf.Freeze) > 0 && m != pause.MethodCgroup, len(cf.HoldCores) > 0 && m != pause.MethodCores:
		return fmt.Errorf("cgroups to freeze or cores to hold do not go with the %s method", m)
	case cf.Target && m == pause.MethodCgroup && len(cf.Freeze) == 0:
		return errors.New("the cgroup method needs the cgroups to freeze")
	case cf.Target && m == pause.MethodCores && len(cf.HoldCores) == 0:
		return errors.New("the cores method needs the cores to hold")
	case cf.HeldFile != "" && len(cf.HoldCores) == 0:
		return errors.New("a held-time file goes with cores to hold")
	case cf.HeldFile != "" && !heldFileName(cf.HeldFile):
		return fmt.Errorf("held-time file %.100q: want an absolute path of at most %d bytes to a file named %s-*", cf.HeldFile, maxHeldPath, HeldFileKind)
	case cf.Local && m != pause.MethodSignal:
		return errors.New("local pausing is made with signals")
	}
	for _, p := range cf.Freeze {
		if _, err := cgroupVersion(p); err != nil {
			return err
		}
	}
	own := c.serviceCPUs()
	for _, core := range cf.HoldCores {
		if core < 0 || core >= maxCPU {
			return fmt.Errorf("bad core %d to hold", core)
		}
		if slices.Contains(own, core) {
			return fmt.Errorf("core %d runs the target, which is never paused", core)
		}
	}
	return nil
}

// serviceCPUs returns the cores the service runs on now: its placement may
// have moved since it started (a deployment retargeted live). Where its
// affinity cannot be read, the cores it was started on.
func (c *Controller) serviceCPUs() []int {
	if c.cmd == nil || c.cmd.Process == nil {
		return c.cfg.CPUs
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(c.cmd.Process.Pid, &set); err != nil {
		return c.cfg.CPUs
	}
	var cpus []int
	for cpu := 0; cpu < maxCPU && len(cpus) < set.Count(); cpu++ {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

// Bounds on the method fields of a configure message.
const (
	maxHoldCores = 1024
	maxCPU       = 4096
	maxHeldPath  = 4096
)

// HeldFileKind starts the name of a held-time file (wire.Configure.HeldFile).
const HeldFileKind = "slowpoke-held"

// heldFileName checks the form of a held-time file's path; OpenHeldFile
// checks the file.
func heldFileName(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && len(p) <= maxHeldPath && strings.HasPrefix(filepath.Base(p), HeldFileKind+"-")
}

// cgroupVersion checks that path is a cgroup slowpoke made (a directory on
// a cgroup file system, under a "slowpoke" directory) and says whether it
// is in the unified (v2) hierarchy.
func cgroupVersion(path string) (v2 bool, err error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || !strings.Contains(path, "/slowpoke/") {
		return false, fmt.Errorf("%q is not a cgroup of slowpoke's", path)
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
