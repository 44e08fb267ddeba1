package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/guard"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// guardRun makes the run's cgroups, starts its guard and writes its record
// (see internal/guard): from then on nothing the run starts outlives it,
// whatever kills the orchestrator or a controller.
func (d *Deployment) guardRun() error {
	if d.opts.NoController {
		return nil
	}
	me, ok := guard.Identify(os.Getpid())
	if !ok {
		return errors.New("local: cannot read this process's start time from /proc")
	}
	runID := fmt.Sprintf("run-%d-%s", me.PID, me.Start)
	run := guard.Run{Orchestrator: me}
	if d.Cgroups != nil {
		d.runDir = filepath.Join(d.Cgroups.Root, runID)
		run.V2 = d.Cgroups.V2
		for _, s := range d.spec.Services {
			cg, err := d.Cgroups.Create(runID + "/" + cgroupLeaf(&s))
			if err != nil {
				return err
			}
			run.Cgroups = append(run.Cgroups, cg.Path)
		}
	}
	if err := os.MkdirAll(RunsDir(), 0o700); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if err := checkRunsDir(); err != nil {
		return fmt.Errorf("local: run records: %w; remove it, or set XDG_RUNTIME_DIR to a directory of your own", err)
	}
	run.Record = filepath.Join(RunsDir(), runID+".json")
	d.rec = &record{Run: run, Ports: map[string]int{}, Started: time.Now().UTC(), path: run.Record}
	for _, s := range d.spec.Services {
		d.rec.Ports[s.Name] = s.Port
	}
	g, err := guard.Spawn(d.opts.Executable, filepath.Join(d.opts.LogDir, "guard.log"))
	if err != nil {
		return err
	}
	d.guard = g
	if d.rec.Guard, ok = guard.Identify(g.PID()); !ok {
		return fmt.Errorf("local: the guard exited at once; see %s", filepath.Join(d.opts.LogDir, "guard.log"))
	}
	if err := d.rec.save(); err != nil {
		return fmt.Errorf("local: write the run record: %w", err)
	}
	return g.Run(run)
}

// cgroupOf is the cgroup made for a service ("" without cgroups).
func (d *Deployment) cgroupOf(name string) string {
	if d.runDir == "" {
		return ""
	}
	if s, ok := d.spec.Service(name); ok {
		return filepath.Join(d.runDir, cgroupLeaf(s))
	}
	return filepath.Join(d.runDir, name)
}

// AttachedPrefix starts the name of an attached service's cgroup in a
// run's directory ("attached.cart"; a service name has no dot): what a
// later run finds there, with no record to say how to give it back, is
// moved out and continued, never killed.
const AttachedPrefix = "attached."

// cgroupLeaf is the name of a service's cgroup in its run's directory.
func cgroupLeaf(s *spec.Service) string {
	if s.Attached() {
		return AttachedPrefix + s.Name
	}
	return s.Name
}

// guardService tells the guard and the record about a service's controller
// and, once known, its process group.
func (d *Deployment) guardService(svc *Service) error {
	if d.guard == nil {
		return nil
	}
	ctl, ok := guard.Identify(svc.cmd.Process.Pid)
	if !ok {
		return nil // already gone: its death is reported as such
	}
	gs := guard.Service{Name: svc.Name, Controller: ctl, Cgroup: svc.Cgroup, Attached: svc.attached}
	if d.Cgroups != nil {
		gs.V2 = d.Cgroups.V2
	}
	// An attached service leads no process group of slowpoke's: the
	// guard knows it by its state, and never ends it.
	if svc.PID > 0 && svc.attached == nil {
		gs.Group = guard.Proc{PID: svc.PID, Start: svc.startTick}
	}
	if err := d.guard.Service(gs); err != nil {
		return err
	}
	return d.rec.setService(gs)
}

// watchGuard fails the run if its guard exits before the end: the run must
// not go on unguarded.
func (d *Deployment) watchGuard() {
	if d.guard == nil {
		return
	}
	<-d.guard.Exited()
	d.mu.Lock()
	stopping := d.stopping
	d.mu.Unlock()
	if !stopping {
		d.failure.Fail(fmt.Errorf("the run's guard (PID %d) exited (%s); see %s", d.guard.PID(), d.guard.ExitError(), filepath.Join(d.opts.LogDir, "guard.log")))
	}
}

// removeCgroups removes the services' cgroups (after they have stopped).
func (d *Deployment) removeCgroups() {
	if d.runDir == "" {
		return
	}
	for i, s := range d.spec.Services {
		cg := pause.Cgroup{Path: d.cgroupOf(s.Name), V2: d.Cgroups.V2}
		if d.isAttached(&d.spec.Services[i]) {
			// Its processes went back where they were when it was let
			// go; what is left is never ended, and keeps the cgroup.
			cg.Thaw()
			if left, _ := cg.Procs(); len(left) > 0 {
				d.opts.Logf("warning: %s: processes %v of the attached service are still in %s; they are left running there", s.Name, left, cg.Path)
				continue
			}
		} else {
			cg.Kill(time.Second)
		}
		if err := cg.Remove(); err != nil {
			d.opts.Logf("warning: %v", err)
		}
	}
}

// Err is the first unexpected death of a service, a controller or the
// guard, or nil.
func (d *Deployment) Err() error { return d.failure.Err() }

// Watch returns a context that is cancelled, with the death as its cause
// (context.Cause), when a service, its controller or the run's guard dies
// unexpectedly: a run cannot go on without them.
func (d *Deployment) Watch(parent context.Context) (context.Context, context.CancelFunc) {
	return d.failure.Watch(parent)
}

// Explain returns the death behind err, if a service, a controller or the
// guard died, waiting a moment for it to be seen; without one, err.
func (d *Deployment) Explain(err error) error { return d.failure.Explain(err, 2*time.Second) }

// ServiceDied is the error of a service, or its controller, that died
// during a run.
type ServiceDied struct {
	Service string
	What    string // "service" or "controller"
	How     string // "killed by SIGKILL", "exited with status 2"
	Log     string
}

func (e *ServiceDied) Error() string {
	if e.What == "controller" {
		return fmt.Sprintf("the controller of service %q died (%s), and its service was ended with it; its log: %s", e.Service, e.How, e.Log)
	}
	return fmt.Sprintf("service %q died during the run (%s); %s", e.Service, e.How, logTail(e.Log))
}

// deathError says how a service's controller ended: a controller exits
// with its service's status (128+N when a signal N ended the service), or
// is itself killed.
func (s *Service) deathError() error {
	e := &ServiceDied{Service: s.Name, What: "service", Log: s.LogPath}
	ps := s.cmd.ProcessState
	if ps == nil {
		e.How = "for an unknown reason"
		return e
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	switch {
	case s.attached != nil && !ws.Signaled() && ps.ExitCode() == 1:
		e.How = "the process it is attached to exited"
	case ws.Signaled():
		e.How = "killed by " + unix.SignalName(ws.Signal())
		if s.Control != nil {
			e.What = "controller"
		}
	case ps.ExitCode() > 128 && ps.ExitCode() < 128+65 && s.Control != nil:
		e.How = "killed by " + signalName(ps.ExitCode()-128)
	default:
		e.How = "exited with status " + strconv.Itoa(ps.ExitCode())
	}
	return e
}

func signalName(n int) string {
	if name := unix.SignalName(syscall.Signal(n)); name != "" {
		return name
	}
	return "signal " + strconv.Itoa(n)
}
