package local

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/threads"
)

// Retarget makes another service the target of the running deployment
// without restarting anything: the placement is made again for the new
// target, and every process whose cores change (each service, the
// controllers, this process) is moved there, every thread of it. The next
// experiment configures the new target's controller; nothing else holds
// state about the target.
//
// The new target must run under a controller (backend.CanTarget).
// Retarget must not be called while an experiment runs on the deployment.
func (d *Deployment) Retarget(target string) error {
	if target == d.placement.Target {
		return nil
	}
	if err := backend.CanTarget(d, target); err != nil {
		return err
	}
	avail, err := AvailableCPUs()
	if err != nil {
		return err
	}
	pl, err := Place(avail, d.spec.Services, target, d.opts.Placement)
	if err != nil {
		return err
	}
	if pl.Keep {
		// Nothing was pinned, and nothing is: every process stays where
		// it runs.
		d.placement = pl
		return nil
	}
	if err := d.pinAll(pl.OtherCPUs, pl.CPUs); err != nil {
		return err
	}
	d.placement = pl
	return nil
}

// pinAll moves this process (the load generator's), every controller and
// every service to the cores given, every thread of each: others for this
// process and the controllers, cpus(service) for each service. Every
// process is checked, not only those whose cores changed: a move that
// failed part-way may have moved some already. Threads already in place
// cost one read each. The shared cores first, so that nothing is left on
// a service's new cores of its own.
func (d *Deployment) pinAll(others []int, cpus func(service string) []int) error {
	if err := PinProcess(others); err != nil {
		return err
	}
	for _, s := range d.procs() {
		if err := pinTree([]int{s.cmd.Process.Pid}, others); err != nil {
			return fmt.Errorf("move the controller of %q to CPUs %v: %w", s.Name, others, err)
		}
	}
	for _, s := range d.procs() {
		if d.opts.NoController {
			continue
		}
		pids, err := d.processesOf(s)
		if err != nil {
			return fmt.Errorf("service %q: %w", s.Name, err)
		}
		if err := pinTree(pids, cpus(s.Name)); err != nil {
			return fmt.Errorf("move service %q to CPUs %v: %w", s.Name, cpus(s.Name), err)
		}
	}
	return nil
}

// Unpinned runs fn with this process, every controller and every service
// allowed on every core slowpoke may use, as an application runs that
// nobody pinned, and puts them back on the placement's cores afterwards,
// whatever fn returned: what a baseline measured in fn is the
// application's throughput placed as the kernel places it. No slowdown
// may run meanwhile. Attached applications are measured before
// slowpoke places anything instead; with one, Unpinned refuses.
func (d *Deployment) Unpinned(fn func() error) error {
	for _, s := range d.procs() {
		if s.attached != nil {
			return fmt.Errorf("service %q is attached: it was measured as it runs before slowpoke placed it", s.Name)
		}
	}
	avail, err := AvailableCPUs()
	if err != nil {
		return err
	}
	all := func(string) []int { return avail }
	err = d.pinAll(avail, all)
	if err == nil {
		err = fn()
	}
	if perr := d.pinAll(d.placement.OtherCPUs, d.placement.CPUs); perr != nil {
		return errors.Join(err, fmt.Errorf("back to slowpoke's placement: %w", perr))
	}
	return err
}

// processesOf lists every process of a service: its cgroup's where it has
// one, its process group's otherwise.
func (d *Deployment) processesOf(s *Service) ([]int, error) {
	if s.attached != nil {
		var out []int
		for _, st := range s.attached.Members() {
			out = append(out, st.PID)
		}
		return out, nil
	}
	if s.Cgroup != "" && d.Cgroups != nil {
		return pause.Cgroup{Path: s.Cgroup, V2: d.Cgroups.V2}.Procs()
	}
	if s.PID <= 0 {
		return nil, errors.New("its process is not known")
	}
	return processGroup(s.PID)
}

// processGroup lists the processes of process group pgid.
func processGroup(pgid int) ([]int, error) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return nil, err
	}
	var out []int
	for _, s := range proc.Group(pgid) {
		out = append(out, s.PID)
	}
	return out, nil
}

// pinTree moves every thread of the given processes to cpus. A thread
// created meanwhile by one not yet moved inherits the old cores, so the
// walk repeats until a pass finds every thread already there (at most a
// few passes). Processes and threads that exit meanwhile are skipped.
func pinTree(pids []int, cpus []int) error {
	set := threads.CPUSet(cpus)
	for pass := 0; pass < 5; pass++ {
		moved := 0
		for _, pid := range pids {
			tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
			if err != nil {
				continue // gone
			}
			for _, t := range tasks {
				tid, err := strconv.Atoi(t.Name())
				if err != nil {
					continue
				}
				var cur unix.CPUSet
				if err := unix.SchedGetaffinity(tid, &cur); err != nil {
					continue
				}
				if cur == set {
					continue
				}
				if err := unix.SchedSetaffinity(tid, &set); err != nil {
					if errors.Is(err, unix.ESRCH) {
						continue
					}
					return fmt.Errorf("thread %d of process %d: %w", tid, pid, err)
				}
				moved++
			}
		}
		if moved == 0 {
			return nil
		}
	}
	return nil
}
