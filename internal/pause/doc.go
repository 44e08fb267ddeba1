// Package pause holds what stops a part of an application for a while:
// the methods slowpoke can pause with, and the two mechanisms that are not
// plain signals.
//
//   - Signal: SIGSTOP and SIGCONT to a service's process group (done by its
//     controller, internal/controller).
//   - Cgroup: a cgroup freezer (v1 freezer.state, v2 cgroup.freeze) around
//     each service; a round freezes and thaws them, one write each, from one
//     thread ([Cgroup]).
//   - Cores: where the target has cores of its own, the cores of every
//     other service are held: a thread pinned to each of them at real-time
//     priority spins for the length of the pause, so that nothing else
//     runs there, whatever the number of services and threads ([Holder]).
//
// Every mechanism keeps a hard cap on one pause, enforced where the pause
// is made: a holder's threads end their spin by themselves, and a frozen
// cgroup is thawed by a timer of the process that froze it. What is left
// when that process dies is the guard's (internal/guard): a holder's
// threads die with it, and cgroups are thawed by the guard.
package pause
