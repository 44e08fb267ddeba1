package pause

import (
	"fmt"
	"slices"
)

// Method is how the services other than the target are paused.
type Method string

// Methods.
const (
	// MethodAuto picks MethodCores where the target has cores of its own and the
	// process may use real-time scheduling, and MethodSignal otherwise;
	// MethodCgroup is used only on request (see docs/method.md for the
	// measurements behind the choice).
	MethodAuto Method = "auto"
	// MethodSignal stops each service's process group with SIGSTOP and continues
	// it with SIGCONT, from the service's own controller, at every round.
	MethodSignal Method = "signal"
	// MethodCgroup freezes each service's cgroup: the target's controller
	// freezes and thaws all of them at every round, one write each.
	MethodCgroup Method = "cgroup"
	// MethodCores holds the cores the other services run on: one real-time
	// thread per core spins for the length of every pause.
	MethodCores Method = "cores"
)

// Methods lists the valid methods, for flags and errors.
var Methods = []Method{MethodAuto, MethodSignal, MethodCgroup, MethodCores}

// ParseMethod checks a method given by name ("" is MethodAuto).
func ParseMethod(s string) (Method, error) {
	if s == "" {
		return MethodAuto, nil
	}
	if m := Method(s); slices.Contains(Methods, m) {
		return m, nil
	}
	return "", fmt.Errorf("unknown pause method %q: want one of %v", s, Methods)
}
