package local

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/threads"
)

// The placement's types are the backend's (every backend has one); the
// local backend is the one that makes them.
type (
	Mode      = backend.Mode
	Placement = backend.Placement
)

const (
	ModeAuto      = backend.ModeAuto
	ModeShared    = backend.ModeShared
	ModeDedicated = backend.ModeDedicated
	ModeKeep      = backend.ModeKeep
)

// Modes lists the valid modes, for flags and errors.
var Modes = backend.Modes

// ParseMode checks a mode given by name ("" is ModeAuto).
func ParseMode(s string) (Mode, error) { return backend.ParseMode(s) }

// MinLoadCPUs is how many cores dedicated placement keeps for the load
// generator, the controllers and the orchestrator: with fewer, the load
// generator competes with the controllers' wake-ups, and the rounds reach
// the services late.
const MinLoadCPUs = 2

// Place splits the available CPUs between the services (in spec order, for
// their cpus) under mode; see Mode. The target takes the highest-numbered
// cores, the services with cores of their own the ones below in reverse
// spec order, and the lowest-numbered are shared.
func Place(available []int, services []spec.Service, target string, mode Mode) (Placement, error) {
	mode, err := ParseMode(string(mode))
	if err != nil {
		return Placement{}, err
	}
	p := Placement{Target: target, OtherCPUs: available}
	if mode == ModeKeep {
		p.Keep = true
		if target != "" {
			p.TargetCPUs = available
		}
		return p, nil
	}
	cpus := map[string]int{}
	need := MinLoadCPUs
	for _, s := range services {
		cpus[s.Name] = max(1, s.CPUs)
		need += cpus[s.Name]
	}
	if target != "" {
		if _, ok := cpus[target]; !ok {
			cpus[target] = 1 // a target the spec does not list: its caller's error
			need++
		}
	}
	dedicated := len(available) >= need
	switch {
	case mode == ModeDedicated && !dedicated:
		return Placement{}, fmt.Errorf("placement dedicated: %d services with %d cores in all, plus %d for the load generator and the controllers, need %d CPUs; this process may use %d", len(cpus), need-MinLoadCPUs, MinLoadCPUs, need, len(available))
	case mode == ModeShared:
		return placeShared(p, cpus[target]), nil
	case !dedicated:
		p = placeShared(p, cpus[target])
		if p.Warning == "" && len(available) > MinLoadCPUs {
			p.Warning = fmt.Sprintf("cores of their own for every service need %d CPUs, and this process may use %d: the services other than the target share CPUs %v with the load generator and the controllers", need, len(available), p.OtherCPUs)
		}
		return p, nil
	}
	// Take cores from the top: the target first, then the others.
	rest := available
	take := func(n int) []int {
		got := append([]int(nil), rest[len(rest)-n:]...)
		rest = rest[:len(rest)-n]
		return got
	}
	if target != "" {
		p.TargetCPUs = take(cpus[target])
	}
	p.Services = map[string][]int{}
	for _, s := range services {
		if s.Name != target {
			p.Services[s.Name] = take(cpus[s.Name])
		}
	}
	p.OtherCPUs = append([]int(nil), rest...)
	return p, nil
}

// placeShared gives the target its targetCPUs; the rest is shared.
func placeShared(p Placement, targetCPUs int) Placement {
	if p.Target == "" {
		return p
	}
	available := p.OtherCPUs
	if len(available)-targetCPUs < 1 {
		p.TargetCPUs = available
		p.Warning = fmt.Sprintf("this machine has %d usable CPUs: the target %q (cpus: %d) cannot have cores of its own, so it shares them with everything else; predictions will be less accurate", len(available), p.Target, targetCPUs)
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
	set := threads.CPUSet(cpus)
	if err := threads.SetAffinity(&set); err != nil {
		return fmt.Errorf("pin to CPUs %v: %w", cpus, err)
	}
	return nil
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
