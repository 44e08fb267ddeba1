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
	// Every process is checked, not only those whose cores the old
	// placement says changed: a retarget that failed part-way may have
	// moved some already. Threads already in place cost one read each.
	// The shared cores first (this process, the load generator's, the
	// controllers'), so that nothing is left on the new target's cores.
	if err := PinProcess(pl.OtherCPUs); err != nil {
		return err
	}
	for _, s := range d.procs() {
		if err := pinTree([]int{s.cmd.Process.Pid}, pl.OtherCPUs); err != nil {
			return fmt.Errorf("move the controller of %q to CPUs %v: %w", s.Name, pl.OtherCPUs, err)
		}
	}
	for _, s := range d.procs() {
		cpus := pl.CPUs(s.Name)
		if d.opts.NoController {
			continue
		}
		pids, err := d.processesOf(s)
		if err != nil {
			return fmt.Errorf("service %q: %w", s.Name, err)
		}
		if err := pinTree(pids, cpus); err != nil {
			return fmt.Errorf("move service %q to CPUs %v: %w", s.Name, cpus, err)
		}
	}
	d.placement = pl
	return nil
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
