// Package hrtimer sleeps for short times with the kernel's high-resolution
// timers, read through the Go runtime's network poller: the runtime's own
// timers can fire a millisecond late when a process is idle. The open-loop
// load generator paces its sends with it, and the instrumentation times
// the waits of a latency what-if.
package hrtimer
