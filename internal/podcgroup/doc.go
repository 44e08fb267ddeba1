// Package podcgroup finds a Kubernetes pod's cgroups on its node by the
// pod's UID, and records which of them a node agent may freeze, so that a
// later agent thaws what one that was killed left frozen.
//
// The kubelet names a pod's cgroup after its UID, under its cgroup root
// (kubepods), in one of two forms: pod<uid> with the cgroupfs driver
// (kubepods/besteffort/pod1234-...), and kubepods-<qos>-pod<uid with
// underscores>.slice with the systemd driver. The same relative path holds
// the pod in every v1 hierarchy (freezer, cpuacct), or once in the unified
// (v2) hierarchy. A Node finds it by walking the hierarchy a few levels
// deep; the pod's cgroup holds every container of the pod (and its
// sandbox), so that one write freezes them all, and its CPU accounting sums
// theirs.
//
// A Ledger is a file on the node (a hostPath of the agent's pod) that lists
// the pods' cgroups an agent resolved to freeze, written before the first
// freeze. An agent thaws what every ledger in its directory lists when it
// starts (ThawRecorded), and when it ends, so that SIGKILL, which gives no
// chance to thaw, leaves nothing frozen past the next agent's start.
package podcgroup
