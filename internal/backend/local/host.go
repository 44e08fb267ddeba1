package local

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/stale"
)

// The services run here: the experiment's readings of them are this
// machine's (backend.Meter, backend.Processes, backend.SharedFiles).

// IdleTime is the idle time the given cores of this machine have
// accumulated since boot (/proc/stat).
func (d *Deployment) IdleTime(cpus []int) time.Duration { return proc.CoresIdle(cpus) }

// CPUTime reads the CPU clock of the service's process group leader; for
// an attached service, whose work may be done by any of its processes,
// the sum of every one's (attach.State.CPUTime).
func (d *Deployment) CPUTime(service string) (time.Duration, error) {
	svc := d.proc(service)
	if svc != nil && svc.attached != nil {
		return svc.attached.CPUTime()
	}
	if svc == nil || svc.PID <= 0 {
		return 0, fmt.Errorf("service %q has no process", service)
	}
	return proc.CPUClock(svc.PID)
}

// SchedWaits sums the running and waiting time of the service's process
// group (proc.Waits); for an attached service, of its processes.
func (d *Deployment) SchedWaits(service string) (run, wait time.Duration) {
	svc := d.proc(service)
	switch {
	case svc == nil:
		return 0, 0
	case svc.attached != nil:
		return proc.WaitsOf(svc.attached.PIDs())
	case svc.PID > 0:
		return proc.Waits(svc.PID)
	}
	return 0, 0
}

// CPUQuotas lists the CPU quotas on the services' cgroups and on this
// process's.
func (d *Deployment) CPUQuotas() []backend.Quota {
	var out []backend.Quota
	for _, svc := range d.procs() {
		if svc.PID > 0 {
			if q := proc.CPUQuota(svc.PID); q != nil {
				out = append(out, backend.Quota{Service: svc.Name, Cores: q.Cores, Cgroup: q.Cgroup})
			}
		}
	}
	return append(out, backend.LoadQuota()...)
}

// ProcessIDs is the service's process group leader, or an attached
// service's every process (none for an unknown service).
func (d *Deployment) ProcessIDs(service string) []int {
	svc := d.proc(service)
	switch {
	case svc == nil:
		return nil
	case svc.attached != nil:
		return svc.attached.PIDs()
	case svc.PID > 0:
		return []int{svc.PID}
	}
	return nil
}

// FreezeRefs is the service's cgroup; a local service has no pods.
func (d *Deployment) FreezeRefs(service string) (cgroup string, pods []string) {
	if svc := d.proc(service); svc != nil {
		return svc.Cgroup, nil
	}
	return "", nil
}

// SharedPath is a new path for a shared file of kind: in shared memory
// (/dev/shm) where there is one, in the temporary directory otherwise,
// named after this process (package stale), the files of that kind that
// killed processes left there removed first.
func (d *Deployment) SharedPath(kind string) (string, error) {
	dir := "/dev/shm"
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		dir = os.TempDir()
	}
	stale.Sweep(dir, kind)
	b := make([]byte, 8)
	rand.Read(b)
	return filepath.Join(dir, stale.Prefix(kind)+hex.EncodeToString(b)), nil
}
