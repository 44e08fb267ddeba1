package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// holds is the cores method: the target's controller holds the cores the
// other services run on.
type holds struct {
	*wire.CoresPause
	targetPauses
}

func (h holds) check(c *Controller) error {
	if c.cfg.Pods != nil {
		return errNoGroup
	}
	own := c.serviceCPUs()
	for _, core := range h.Cores {
		if slices.Contains(own, core) {
			return fmt.Errorf("core %d runs the target, which is never paused", core)
		}
	}
	return nil
}

func (h holds) start(c *Controller, cf wire.Configure) (g group, err error) {
	path := filepath.Join(c.sockDir, "bell")
	bell, err := openBell(path)
	if err != nil {
		return nil, err
	}
	var held *pause.HeldFile
	defer func() {
		if err != nil {
			unix.Close(bell)
			os.Remove(path)
			if held != nil {
				held.Close()
			}
		}
	}()
	// The holder measures the target's CPU over every hold (it is never
	// held): whether it starves while its callers are stopped.
	opts := []pause.HolderOption{pause.WithBell(bell, time.Duration(cf.PausePerRoundNS)),
		pause.WithBusyClock(c.busyClock())}
	if h.HeldFile != "" {
		if held, err = pause.OpenHeldFile(h.HeldFile); err != nil {
			return nil, err
		}
		opts = append(opts, pause.WithHeldTotal(held.Total()))
	}
	hl, err := pause.NewHolder(h.Cores, c.cfg.MaxPause, opts...)
	if err != nil {
		return nil, err
	}
	return holdGroup{h: hl, bell: bell, path: path, held: held}, nil
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

func (g holdGroup) timesBusy() bool { return true }

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

// serviceCPUs returns the cores the service runs on now: its placement may
// have moved since it started (a deployment retargeted live, which moves
// every thread of the service but tells its controller nothing). They are
// read from the service's processes: the child the controller started, or
// every process of an attached service, whose cores are those it was
// attached with only until the first retarget. Where no affinity can be
// read, the cores it was started on.
func (c *Controller) serviceCPUs() []int {
	if cpus := affinityOf(c.servicePIDs()); len(cpus) > 0 {
		return cpus
	}
	return c.cfg.CPUs
}

// servicePIDs lists the processes whose cores are the service's: an
// attached service's every process, or the child this controller started;
// none for a controller of pods.
func (c *Controller) servicePIDs() []int {
	switch {
	case c.cfg.Pods != nil:
		return nil
	case c.cfg.Attach != nil:
		var pids []int
		for _, st := range c.members() {
			pids = append(pids, st.PID)
		}
		return pids
	case c.cmd != nil && c.cmd.Process != nil:
		return []int{c.cmd.Process.Pid}
	}
	return nil
}

// affinityOf returns the union of the CPU affinities of pids, in
// increasing order; processes gone meanwhile are skipped.
func affinityOf(pids []int) []int {
	var all unix.CPUSet
	for _, pid := range pids {
		var set unix.CPUSet
		if unix.SchedGetaffinity(pid, &set) != nil {
			continue
		}
		for i := range all {
			all[i] |= set[i]
		}
	}
	var cpus []int
	for cpu := 0; cpu < wire.MaxCPU && len(cpus) < all.Count(); cpu++ {
		if all.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}
