// Package local runs an application on this machine: every service as a
// process under its own slowpoke controller, pinned to CPUs so that the
// target has cores of its own.
//
// Placement (Mode): where the machine has the cores, every service gets its
// spec'd number of cores of its own, as in the paper's one service per node,
// and the controllers, the load generator and the orchestrator share the
// rest (at least MinLoadCPUs). Otherwise only the target gets cores of its
// own (the highest numbered ones) and every other service shares the rest
// with them; sharing is safe for the non-target services because they are
// paused together. When the machine is too small to give even the target
// cores of its own, everything shares all cores and Placement.Warning says
// so.
//
// Teardown stops every controller it started (by recorded PID, SIGTERM then
// SIGKILL), then makes sure no service process it started is left, running
// or stopped. Controllers get SIGTERM if the orchestrator dies, and services
// get SIGCONT if their controller dies.
//
// A service the spec attaches to (attach: it already runs, started
// outside slowpoke) is not started and never ended: its controller pauses
// its processes through pidfds, and the orchestrator, the controller and
// the guard each give it back as it was found (attached.go).
package local
