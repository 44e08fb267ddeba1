package local

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/guard"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// An attached service (spec: attach) already runs: slowpoke did not start
// it and is not its parent. Its controller is started with the service's
// state (attach.State: its processes and their affinity, nice values and
// freezer cgroups as found) instead of a command, and pauses the processes
// through pidfds. The order in launchAttached is what keeps it safe: the
// state is captured, the controller started, and the guard and the run
// record told about the service (with the state) before anything of the
// service is changed; only then is it pinned to its cores and, where
// slowpoke's cgroups are v1 freezer cgroups, moved into its slowpoke
// cgroup (every process it starts then joins it). From then on, whichever
// of the orchestrator (Stop), the controller (on SIGTERM, which it also
// gets when the orchestrator dies) and the guard (when the orchestrator or
// the controller dies) outlives the others gives it back as found; a later
// run does it from the record if all three were killed. Nothing ever ends
// an attached service's processes, but validate's restart of one that
// also has a command (restartAttached).

// attachedRoots finds the processes of every attached service of the
// spec, to say before anything starts that one cannot be found.
func (d *Deployment) findAttached() error {
	var bad []string
	for i := range d.spec.Services {
		s := &d.spec.Services[i]
		if !s.Attached() {
			continue
		}
		if d.opts.NoController {
			return fmt.Errorf("service %q is attached (attach: %s): it runs only under a controller", s.Name, s.Attach)
		}
		if _, err := attach.Find(s.Attach); err != nil {
			bad = append(bad, fmt.Sprintf("service %q: %v", s.Name, err))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "\n"))
	}
	return nil
}

// attachedCgroup is the cgroup an attached service is moved into for the
// run: its slowpoke cgroup where that is a v1 freezer cgroup, which
// governs nothing but freezing; none on cgroup v2, where moving a process
// would take it out of its own cgroup and its limits.
func (d *Deployment) attachedCgroup(name string) *pause.Cgroup {
	if d.Cgroups == nil || d.Cgroups.V2 || d.runDir == "" {
		return nil
	}
	return &pause.Cgroup{Path: d.cgroupOf(name)}
}

// launchAttached starts the controller of an attached service, and lends
// the service to the run.
func (d *Deployment) launchAttached(s *spec.Service, logPath string, logf *os.File) error {
	roots, err := attach.Find(s.Attach)
	if err != nil {
		return fmt.Errorf("service %q: %w", s.Name, err)
	}
	st, err := attach.Capture(s.Name, roots)
	if err != nil {
		return fmt.Errorf("service %q: %w", s.Name, err)
	}
	cg := d.attachedCgroup(s.Name)
	if cg != nil {
		st.Cgroup = cg.Path
	}
	var pids []int
	for _, p := range st.Procs {
		pids = append(pids, p.PID)
	}
	fmt.Fprintf(logf, "attached to %s: processes %v (its output stays where it was going)\n", s.Attach, pids)
	d.opts.Logf("%s: attached to %s (processes %v)", s.Name, s.Attach, pids)
	stateFile := filepath.Join(d.opts.LogDir, "."+s.Name+".attach")
	if err := st.Save(stateFile); err != nil {
		return err
	}
	addrFile := filepath.Join(d.opts.LogDir, "."+s.Name+".addr")
	os.Remove(addrFile)
	atomicfile.RemoveLeftovers(addrFile)
	cpus := d.placement.CPUs(s.Name)
	if d.placement.Keep {
		cpus = nil // its processes stay on the cores its user gave them
	}
	cmd := exec.Command(d.opts.Executable, "controller", "--name", s.Name, "--addr-file", addrFile,
		"--max-pause", d.opts.MaxPause.String(), "--cpus", FormatCPUs(cpus), "--attach-state", stateFile)
	cmd.Env = append(d.environ(s), controller.EnvSecret+"="+hex.EncodeToString(d.Secret))
	cmd.Stdout, cmd.Stderr = logf, logf
	// SIGTERM if the orchestrator dies: the controller then lets the
	// service go and restores it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := theSpawner.start(cmd, d.placement.OtherCPUs); err != nil {
		return fmt.Errorf("start the controller of %q: %w", s.Name, err)
	}
	root := st.Root()
	svc := &Service{Service: backend.Service{Name: s.Name, Port: s.Port, LogPath: logPath}, PID: root.PID,
		cmd: cmd, exited: make(chan struct{}), startTick: root.Start, attached: st}
	if cg != nil {
		svc.Cgroup = cg.Path
	}
	go func() {
		cmd.Wait()
		close(svc.exited)
		d.mu.Lock()
		expected := svc.stopping || d.stopping
		d.mu.Unlock()
		if !expected {
			d.failure.Fail(svc.deathError())
		}
	}()
	d.mu.Lock()
	d.services[s.Name] = svc
	d.mu.Unlock()
	// The guard and the record know the state before anything changes.
	if err := d.guardService(svc); err != nil {
		return fmt.Errorf("service %q: %w", s.Name, err)
	}
	if err := st.Apply(cpus, cg); err != nil {
		return fmt.Errorf("service %q: %w", s.Name, err)
	}
	addr, err := waitAddr(addrFile, svc.exited, controllerStartTimeout)
	os.Remove(addrFile)
	atomicfile.RemoveLeftovers(addrFile)
	if err != nil {
		return fmt.Errorf("service %q: controller did not come up: %v\n%s", s.Name, err, logTail(logPath))
	}
	svc.Control = controller.NewClient(addr, d.Secret)
	return nil
}

// stopAttached lets an attached service go: its controller told to stop
// (it continues and restores the service, and exits), killed after grace,
// and the service restored here too, whatever the controller did. The
// service's processes are never signalled to end.
func (d *Deployment) stopAttached(s *Service, grace time.Duration) {
	if s.Control != nil {
		s.Control.Close()
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(grace):
		s.cmd.Process.Kill()
		<-s.exited
	}
	for _, p := range s.attached.Restore() {
		d.opts.Logf("warning: %s: %s", s.Name, p)
	}
	os.Remove(filepath.Join(d.opts.LogDir, "."+s.Name+".attach"))
	d.mu.Lock()
	if d.services[s.Name] == s {
		delete(d.services, s.Name)
	}
	d.mu.Unlock()
}

// restartAttached prepares validate's restart of an attached service (svc:
// nil where it does not run): one with no command cannot be restarted;
// one with a command is let go, its processes ended (a restart ends the
// running service), and Restart then starts it from its command, as a
// service slowpoke starts, for the rest of the run.
func (d *Deployment) restartAttached(svc *Service, s *spec.Service) error {
	if err := s.CanRestart(); err != nil {
		return err
	}
	d.opts.Logf("%s: restarting it from its command (ground truth): its attached processes are ended, and it runs under slowpoke for the rest of the run", s.Name)
	if svc != nil {
		d.mu.Lock()
		svc.stopping = true
		d.mu.Unlock()
		if d.guard != nil {
			d.guard.Forget(s.Name)
		}
		d.stopAttached(svc, 10*time.Second)
		if ended := endProcesses(svc.attached, guard.Grace); len(ended) > 0 {
			d.opts.Logf("%s: ended its attached processes %v", s.Name, ended)
		}
	}
	d.mu.Lock()
	if d.started == nil {
		d.started = map[string]bool{}
	}
	d.started[s.Name] = true
	d.mu.Unlock()
	return nil
}

// endProcesses ends the processes of an attached service (SIGTERM, then
// SIGKILL after grace), through pidfds: a recycled PID is never signalled.
func endProcesses(st *attach.State, grace time.Duration) []int {
	set := st.Open()
	defer set.Close()
	pids := set.PIDs()
	if len(pids) == 0 {
		return nil
	}
	set.Signal(syscall.SIGTERM)
	set.Signal(syscall.SIGCONT)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		set.Refresh()
		if len(set.PIDs()) == 0 {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
	set.Signal(syscall.SIGKILL)
	return pids
}

// isAttached says whether service s runs attached now: the spec attaches
// it, and no restart has started it from its command.
func (d *Deployment) isAttached(s *spec.Service) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return s.Attached() && !d.started[s.Name]
}

// startedServices lists the services slowpoke starts (not those it
// attaches to).
func (d *Deployment) startedServices() []spec.Service {
	var out []spec.Service
	for i := range d.spec.Services {
		if !d.isAttached(&d.spec.Services[i]) {
			out = append(out, d.spec.Services[i])
		}
	}
	return out
}

// attachedWithoutCgroup names an attached service that has no slowpoke
// cgroup, which the cgroup method cannot freeze ("" for none).
func (d *Deployment) attachedWithoutCgroup() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.services {
		if s.attached != nil && s.Cgroup == "" {
			return s.Name
		}
	}
	return ""
}
