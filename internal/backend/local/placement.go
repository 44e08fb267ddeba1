package local

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/threads"
)

// Placement says which CPUs each part of an experiment runs on.
type Placement struct {
	Target     string
	TargetCPUs []int // the target's cores (empty when there is no target)
	OtherCPUs  []int // everything else: other services, controllers, load, orchestrator
	Warning    string
}

// CPUs returns the CPUs a service runs on.
func (p Placement) CPUs(service string) []int {
	if service == p.Target && len(p.TargetCPUs) > 0 {
		return p.TargetCPUs
	}
	return p.OtherCPUs
}

// Place splits the available CPUs: the target takes the last targetCPUs of
// them, the rest is shared.
func Place(available []int, target string, targetCPUs int) Placement {
	p := Placement{Target: target, OtherCPUs: available}
	if target == "" {
		return p
	}
	if targetCPUs < 1 {
		targetCPUs = 1
	}
	if len(available)-targetCPUs < 1 {
		p.TargetCPUs = available
		p.Warning = fmt.Sprintf("this machine has %d usable CPUs: the target %q (cpus: %d) cannot have cores of its own, so it shares them with everything else; predictions will be less accurate", len(available), target, targetCPUs)
		return p
	}
	n := len(available)
	p.TargetCPUs = append([]int(nil), available[n-targetCPUs:]...)
	p.OtherCPUs = append([]int(nil), available[:n-targetCPUs]...)
	if len(p.OtherCPUs) == 1 {
		p.Warning = fmt.Sprintf("only CPU %d is left for the other services, the controllers and the load generator; the load generator competes with them, which a machine with more cores avoids", p.OtherCPUs[0])
	}
	return p
}

// startCPUs are the CPUs this process could use when it started, before
// PinProcess narrowed them: every deployment is placed on those, not on
// what an earlier deployment left the orchestrator pinned to.
var startCPUs, startCPUsErr = currentCPUs()

// AvailableCPUs returns the CPUs this process may run on, as it could when
// it started.
func AvailableCPUs() ([]int, error) {
	return append([]int(nil), startCPUs...), startCPUsErr
}

func currentCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for i := 0; i < 1024 && len(out) < set.Count(); i++ {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out, nil
}

// PinProcess sets the CPU affinity of every thread of this process; threads
// created later inherit it.
func PinProcess(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	set := cpuSet(cpus)
	return threads.Each(func(tid int) error {
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("pin thread %d to CPUs %v: %w", tid, cpus, err)
		}
		return nil
	})
}

func cpuSet(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return set
}

// FormatCPUs writes a CPU list as the controller's --cpus flag expects.
func FormatCPUs(cpus []int) string {
	s := ""
	for i, c := range cpus {
		if i > 0 {
			s += ","
		}
		s += strconv.Itoa(c)
	}
	return s
}
