// Package nodeagent is slowpoke's node agent on Kubernetes: one process
// per node (a pod of a DaemonSet the run makes: privileged, in the host's
// PID namespace, with the node's cgroup file system and a directory of
// the node's mounted), that serves one controller (internal/controller)
// per service of the run on a port of its own, for the service's pods on
// this node, found by UID (internal/podcgroup). Nothing in the pods
// changes and nothing restarts: the target's controller reads its pods'
// CPU time from their cgroups (the CPU trigger) and freezes the other
// services' pods, one write per pod per round (the cgroup method,
// wire.CgroupPause.Pods).
//
// Safety: every freeze is capped by the controller's hard cap (MaxPause),
// from a timer of its own; the controllers hold a lease that the
// orchestrator renews, and thaw everything when it lapses; SIGTERM (the
// pod deleted or evicted) thaws everything before the agent exits.
// SIGKILL gives no chance to: every pod is recorded in a ledger on the
// node before its first freeze, and an agent thaws what the ledgers of
// agents that are gone record when it starts (the kubelet restarts a
// killed agent's container), and when it ends.
package nodeagent
