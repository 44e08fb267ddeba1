// Package attach finds the processes of a service that already runs,
// started outside slowpoke (spec: attach by port, pid_file, cgroup or
// container), and lends them to a run without being their parent.
//
// Find names the first processes (the one listening on a port, the one a
// PID file names, everything in a cgroup or in a container's cgroup, the
// container found through its runtime's CLI); Capture adds their
// descendants and records, before anything changes, each thread's CPU
// affinity and nice value and each process's freezer cgroup. Apply then
// pins them to the run's cores and, where slowpoke's cgroups are in the
// v1 freezer hierarchy, moves them into the service's slowpoke cgroup, so
// that every process they start joins it (a v2 cgroup is never used:
// moving a process there would take it out of its own limits). A Set
// holds a pidfd on each process, to stop and continue them by identity.
// Restore gives them back: thawed, continued, moved back, affinity and
// nice as found; it never ends a process, and any process holding the
// State may call it, any number of times.
package attach
