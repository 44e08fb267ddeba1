// Package proc reads what slowpoke needs of a process from Linux's
// /proc/PID/stat: its state, parent, process group, CPU time and start
// time. The controller, the guard and the local backend use it to find a
// service's processes, to tell a live process from one that ended or from
// a later one that reuses its PID, and to measure a group's CPU time.
//
// It also reads what the backends report to an experiment of the machine
// (backend.Meter): the cores' idle time (/proc/stat), a process's CPU
// clock, the CPU quota on its cgroup, and where the cgroup hierarchies are
// mounted.
package proc
