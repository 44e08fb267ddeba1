package controller

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// A controller attached to a service that already runs (Config.Attach)
// starts nothing and is no process's parent. It pauses the service's
// processes through pidfds it holds on each (attach.Set), so that a
// recycled PID is never signalled, instead of signalling a process group
// it made: the service's processes share a group with whatever started
// them (a shell script's background jobs share the script's). It lists
// them again every attachRelist, to pause the children they start.
//
// It never ends them. A signal to the controller (SIGTERM, the
// orchestrator's death through the parent-death signal) and the exit of
// the attached process both release the service: the slowdown stops,
// every process is continued, and Wait gives it back as it was found
// (attach.State.Restore: affinity, nice, cgroup). A controller killed
// outright cannot: the run's guard restores the service then, since no
// signal of the kernel's reaches a process slowpoke did not start.

// attachRelist is how often an attached service's processes are listed
// again (a scan of /proc).
const attachRelist = 500 * time.Millisecond

// attach takes hold of the attached service's processes.
func (c *Controller) attach(string) error {
	root := c.cfg.Attach.Root()
	if !root.Alive() {
		return fmt.Errorf("controller: the process attached to (PID %d) is gone", root.PID)
	}
	c.set = c.cfg.Attach.Open()
	c.pgid = root.PID
	return nil
}

// watchAttached lists the service's processes again now and then, and
// releases the service once the process attached to exits.
func (c *Controller) watchAttached() {
	gone := attach.Wait(c.cfg.Attach.Root())
	t := time.NewTicker(attachRelist)
	defer t.Stop()
	for {
		select {
		case <-gone:
			c.release("the process attached to exited", 1)
			return
		case <-c.exited:
			return
		case <-t.C:
			c.set.Refresh()
		}
	}
}

// release ends the controller's hold on the attached service, once: no
// slowdown, every process continued, Done closed with exit status code.
func (c *Controller) release(why string, code int) {
	c.releaseOnce.Do(func() {
		c.log.Info("releasing the attached service", "why", why)
		c.pauser.Close()
		c.mu.Lock()
		c.childGone = true
		c.mu.Unlock()
		c.stopSlowdown()
		c.sigMu.Lock()
		c.set.Signal(unix.SIGCONT)
		c.dead = true
		c.sigMu.Unlock()
		c.exitCode = code
		close(c.exited)
	})
}

// restore gives the attached service back as it was found.
func (c *Controller) restore() {
	if problems := c.cfg.Attach.Restore(); len(problems) > 0 {
		c.log.Warn("could not give the attached service back entirely as it was", "problems", problems)
	} else {
		c.log.Info("gave the attached service back as it was found")
	}
	c.set.Close()
}

// members lists the service's processes: its process group, or an
// attached service's processes.
func (c *Controller) members() []proc.Stat {
	if c.cfg.Attach != nil {
		return c.cfg.Attach.Members()
	}
	return proc.Group(c.pgid)
}

// busyClock is the service's CPU time read without blocking, for the
// holder's busy clock: its process group leader's CPU clock, or the sum of
// an attached service's processes' as its set last listed them (raw
// system calls only; the sum never decreases).
func (c *Controller) busyClock() func() time.Duration {
	if c.set == nil {
		pgid := c.pgid
		return func() time.Duration { return processCPU(pgid) }
	}
	var sum attach.CPUCounter
	return func() time.Duration { return sum.Read(c.set.Snapshot(), processCPU) }
}

// serviceCPU is the CPU time (ns) of the service's live processes (its
// pods', for a controller of pods).
func (c *Controller) serviceCPU() int64 {
	if c.cfg.Pods != nil {
		return int64(c.cfg.Pods.CPU())
	}
	if c.cfg.Attach == nil {
		return groupCPU(c.pgid)
	}
	var total int64
	for _, s := range c.members() {
		total += int64(s.CPU)
	}
	return total
}
