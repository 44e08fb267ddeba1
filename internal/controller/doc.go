// Package controller runs one service under slowpoke's control.
//
// A controller starts the service as a child in a new process group and can
// pause the whole group with SIGSTOP/SIGCONT. It listens on a Unix socket for
// the service's instrumentation (internal/inservice) and on an authenticated TCP
// port (internal/wire) for the orchestrator and for other controllers.
//
// During a slowdown run the target's controller starts a round every Batch
// target calls and sends it to its neighbours; every controller forwards a
// round once (round numbers de-duplicate) and, unless it controls the
// target, pauses its service for the configured pause per round.
//
// How the other services are paused is the run's method, one variant of
// wire.Pause and one type here (method): with signals, as above; with a
// cgroup freezer or by holding their cores, the target's controller pauses
// all of them itself and no rounds travel.
//
// Safety: every stop is followed by a continue within MaxPause, enforced by
// a timer independent of the pause loop; the child is started with a
// parent-death signal of SIGCONT, so it runs on if the controller is killed,
// even with SIGKILL; SIGINT, SIGTERM and SIGHUP are forwarded to the group
// (which is continued first), and the controller exits with the child's
// status. The group is signalled only while its leader has not been reaped,
// so a recycled process-group id is never signalled.
package controller
