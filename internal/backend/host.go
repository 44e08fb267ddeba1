package backend

import (
	"os"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// Meter is what an experiment reads through the backend besides the
// controllers' counters: how busy the cores were and how much CPU a
// service used. Only the backend knows where the services run; where a
// reading cannot be made from this machine (the pods of a cluster), it
// says so with a zero value or an error, as each method documents.
type Meter interface {
	// IdleTime is the idle time (idle and iowait) the given cores have
	// accumulated since boot, summed over them; 0 where it cannot be
	// read. The cores are those Placement names.
	IdleTime(cpus []int) time.Duration
	// CPUTime is the CPU time service has used so far, all its threads,
	// read often enough to see how many cores it uses at once; an error
	// where it cannot be read from here.
	CPUTime(service string) (time.Duration, error)
	// SchedWaits sums, over service's threads, the time spent running and
	// the time spent runnable but waiting for a core; 0, 0 where unknown.
	SchedWaits(service string) (run, wait time.Duration)
	// CPUQuotas lists the CPU bandwidth limits that throttle the services
	// or the load generator (this process), the services in spec order
	// first.
	CPUQuotas() []Quota
}

// Quota is a CPU bandwidth limit on a service, or on the load generator.
type Quota struct {
	Service string  // the service; "" for the load generator (this process)
	Cores   float64 // quota / period
	Cgroup  string  // the cgroup that sets it
}

// LoadQuota is the CPU quota on this process, which runs the load
// generator, as Meter's CPUQuotas lists it (nil for none): every backend
// runs the load generator here.
func LoadQuota() []Quota {
	if q := proc.CPUQuota(os.Getpid()); q != nil {
		return []Quota{{Cores: q.Cores, Cgroup: q.Cgroup}}
	}
	return nil
}

// Processes says where a service's processes are, for the pause methods
// that reach them from outside their own controller
// (wire.SignalPause.CorePeers, wire.CgroupPause).
type Processes interface {
	// ProcessIDs lists the processes on this machine whose CPU clocks
	// make service's CPU time: its process group leader for a service
	// the backend started, every process of one attached to (spec:
	// attach); none where it does not run here.
	ProcessIDs(service string) []int
	// FreezeRefs names what the cgroup method freezes to pause service:
	// its cgroup on this machine, or the UIDs of its pods, which a node
	// agent freezes by UID; both empty where it cannot be frozen.
	FreezeRefs(service string) (cgroup string, pods []string)
}

// SharedFiles makes the files this process shares with the services'
// controllers: a latency what-if's delay store and the cores method's
// held-time counter are memory-mapped files every controller opens.
type SharedFiles interface {
	// SharedPath returns a new path for a shared file of kind (a prefix
	// of package stale), or an error saying why the controllers cannot
	// share a file with this process.
	SharedPath(kind string) (string, error)
}
