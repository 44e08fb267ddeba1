package kube

import (
	"errors"
	"fmt"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
)

// The services run in pods on the cluster's nodes, this process (the
// orchestrator and the load generator) elsewhere: what the experiment
// would read of their machines is out of its reach (backend.Meter,
// backend.Processes, backend.SharedFiles), but the pods' UIDs, which a
// node agent freezes.

// ErrNoSharedFiles is why a run on Kubernetes has no shared file, and so
// no latency what-if's delay store: a command can refuse with it before
// it deploys.
var ErrNoSharedFiles = errors.New("the controllers run in the services' pods, not on this machine, and share no memory with it " +
	"(a latency what-if's delay store is shared memory on the machine that runs every service)")

// IdleTime is 0: Placement names none of the nodes' cores.
func (d *Deployment) IdleTime([]int) time.Duration { return 0 }

// CPUTime cannot be read from here: the service runs in a pod.
func (d *Deployment) CPUTime(service string) (time.Duration, error) {
	return 0, fmt.Errorf("service %q runs in a pod: its CPU clock cannot be read from this machine: %w", service, errors.ErrUnsupported)
}

// SchedWaits is unknown: the service runs in a pod.
func (d *Deployment) SchedWaits(string) (run, wait time.Duration) { return 0, 0 }

// CPUQuotas lists the quota on this process, the load generator, only:
// the pods' CPU limits are the spec's cpus (see warnCPULimit).
func (d *Deployment) CPUQuotas() []backend.Quota { return backend.LoadQuota() }

// ProcessIDs is none: no service runs on this machine.
func (d *Deployment) ProcessIDs(string) []int { return nil }

// FreezeRefs are the service's pods where a node agent freezes them
// (ModeAgent); none otherwise.
func (d *Deployment) FreezeRefs(service string) (cgroup string, pods []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.services[service]; s != nil {
		return "", s.pods
	}
	return "", nil
}

// SharedPath fails with ErrNoSharedFiles.
func (d *Deployment) SharedPath(string) (string, error) { return "", ErrNoSharedFiles }
