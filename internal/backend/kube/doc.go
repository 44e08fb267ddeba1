// Package kube runs slowpoke's experiments on an application already
// deployed on a Kubernetes cluster, one Deployment (of one replica) per
// service, without changing the user's images.
//
// Start patches each Deployment's pod template: an init container copies
// the slowpoke binary from the spec's kubernetes.image into a shared
// emptyDir volume, and the service's container then runs its own command
// under `slowpoke controller`, which pauses it with signals inside the
// container, as on a local run. The original template is kept in an
// annotation of the Deployment; Stop, and `slowpoke restore` after a
// crash, put it back. Between points nothing is redeployed: the
// controllers are reconfigured live over their control ports (pod IP and
// kubernetes.control_port+i), and only the ground truth changes the
// target's environment, with one rollout.
//
// Safety: each controller holds a lease that the orchestrator renews; if
// the orchestrator dies, even by SIGKILL, every controller ends its
// slowdown and resumes its service within the lease, and every pause is
// capped as on a local run.
package kube
