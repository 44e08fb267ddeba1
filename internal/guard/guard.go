// Package guard ends what a slowpoke run started when the processes that
// run it die.
//
// The orchestrator starts one guard per deployment ("slowpoke guard"), in a
// session of its own, and tells it on its standard input about every
// controller and service it starts. The guard watches the orchestrator and
// every controller through pidfds:
//
//   - when a controller dies, the guard thaws the run's cgroups (that
//     controller may have been freezing them) and ends its service, children
//     included: the service never outlives its controller;
//   - when the orchestrator dies (its pipe closes or its pidfd fires, any
//     signal, SIGKILL and the OOM killer included), the guard kills every
//     controller (which frees any core a controller held), thaws the run's
//     cgroups, ends every service, removes the cgroups and the run record,
//     and exits;
//   - on a clean teardown the orchestrator says "done" and the guard exits.
//
// A service that slowpoke did not start (spec: attach) is never ended:
// where the above ends a service, the guard gives an attached one back as
// it was found instead (attach.State.Restore: continued, thawed, moved
// back to its cgroups, its affinity and nice values restored). No
// parent-death signal reaches such a service when its controller dies, so
// the guard is what resumes it then.
//
// Processes are signalled through pidfds, or after checking their start
// time, so a recycled PID is never signalled; a service's processes are
// found through its cgroup where it has one, through its process group
// otherwise, and through their environment where the controller died
// before anyone learned the group.
package guard

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/inservice"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/stale"
)

// Proc identifies a process by its PID and its start time (field 22 of
// /proc/PID/stat): a PID alone may be recycled.
type Proc struct {
	PID   int    `json:"pid"`
	Start string `json:"start"`
}

// Identify returns pid's identity, or false if it is gone (or a zombie).
func Identify(pid int) (Proc, bool) {
	st := StartTime(pid)
	return Proc{PID: pid, Start: st}, st != ""
}

// Alive reports whether p still runs (the same process, not a recycled PID).
func (p Proc) Alive() bool {
	return p.PID > 0 && p.Start != "" && StartTime(p.PID) == p.Start
}

// Signal sends sig to p through a pidfd once it is sure the pid is still
// p's, so that a recycled pid is never signalled; it reports whether p was
// signalled. (Checking Alive and then signalling the pid would leave a gap
// in which the pid could be recycled.)
func (p Proc) Signal(sig unix.Signal) bool {
	return p.send(func(fd int) error { return unix.PidfdSendSignal(fd, sig, nil, 0) },
		func() error { return unix.Kill(p.PID, sig) })
}

// pidfdSignalProcessGroup is linux/pidfd.h's PIDFD_SIGNAL_PROCESS_GROUP
// (Linux 6.9): the signal goes to the pidfd's process's group.
const pidfdSignalProcessGroup = 1 << 2

// SignalGroup sends sig to the process group that p leads, once it is
// sure the pid is still p's; it reports whether the group was signalled.
// Through the pidfd where the kernel can (Linux 6.9); before, by the
// group's id right after checking p alive: a group id is not reused while
// its leader lives.
func (p Proc) SignalGroup(sig unix.Signal) bool {
	return p.send(func(fd int) error {
		err := unix.PidfdSendSignal(fd, sig, nil, pidfdSignalProcessGroup)
		if errors.Is(err, unix.EINVAL) {
			return unix.Kill(-p.PID, sig)
		}
		return err
	}, func() error { return unix.Kill(-p.PID, sig) })
}

// send signals p by viaFD with a pidfd of p, which keeps p's identity
// fixed, once p is known alive through it. Where pidfds cannot be had (a
// kernel before 5.3, a seccomp profile that refuses them) it checks p
// alive and signals by bare, rather than leave p unsignalled.
func (p Proc) send(viaFD func(fd int) error, bare func() error) bool {
	if p.PID <= 0 {
		return false
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		return p.Alive() && bare() == nil
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	// The pidfd refers to the process that had the pid when it was
	// opened: if that is still p, the signal goes to p.
	if !p.Alive() {
		return false
	}
	return viaFD(fd) == nil
}

// StartTime returns field 22 of /proc/PID/stat (start time in clock ticks
// since boot), or "" if the process is gone or a zombie.
func StartTime(pid int) string {
	s, ok := proc.Read(pid)
	if !ok || s.Ended() {
		return ""
	}
	return s.Start
}

// childGroup finds the process that ctl started as the leader of a
// process group of its own (a controller's service).
func childGroup(ctl int) (Proc, bool) {
	for _, s := range proc.All() {
		if s.PPID == ctl && s.PGRP == s.PID {
			if p, ok := Identify(s.PID); ok {
				return p, true
			}
		}
	}
	return Proc{}, false
}

// Service is what the guard knows of one service.
type Service struct {
	Name       string `json:"name"`
	Controller Proc   `json:"controller"`
	Group      Proc   `json:"group,omitempty"`  // the service's process group leader (its first process)
	Cgroup     string `json:"cgroup,omitempty"` // every process of the service, where slowpoke made a cgroup
	V2         bool   `json:"v2,omitempty"`
	// Attached, for a service that slowpoke did not start (spec: attach),
	// is how to give it back: it is never ended, but continued, thawed,
	// moved back to its cgroups and unpinned (attach.State.Restore).
	Attached *attach.State `json:"attached,omitempty"`
}

// Run is what the guard, and a later run, need to end a run: the
// orchestrator, the cgroups, where its record is. The services come one by
// one (Service messages), and the record on disk holds them too.
type Run struct {
	Orchestrator Proc     `json:"orchestrator"`
	Cgroups      []string `json:"cgroups,omitempty"` // every service's cgroup, to thaw and remove
	V2           bool     `json:"v2,omitempty"`
	Record       string   `json:"record,omitempty"` // the run record's path, removed once the run is ended
}

// message is one line from the orchestrator.
type message struct {
	Op      string   `json:"op"` // run, service, forget, done
	Run     *Run     `json:"run,omitempty"`
	Service *Service `json:"service,omitempty"`
	Name    string   `json:"name,omitempty"` // forget
}

// killWait bounds the wait for the controllers to exit after SIGKILL.
const killWait = 2 * time.Second

// Grace is how long a service has to end after SIGTERM before SIGKILL.
const Grace = 3 * time.Second

// Main is "slowpoke guard": it reads the orchestrator's messages on in
// until "done" or the orchestrator's death, and logs to logw.
func Main(in io.Reader, logw io.Writer) int {
	g := &guard{log: log.New(logw, "guard: ", log.LstdFlags|log.Lmicroseconds), services: map[string]*watched{}, events: make(chan event, 16), readDone: make(chan struct{})}
	// The guard ends the run when it is told to end (by anyone), as when
	// the orchestrator dies: the run cannot go on unguarded.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	go g.read(in)
	for {
		select {
		case s := <-sigs:
			g.log.Printf("received %v: ending the run", s)
			g.cleanup()
			return 1
		case ev := <-g.events:
			switch {
			case ev.done:
				g.log.Printf("the run ended cleanly")
				return 0
			case ev.orchestratorGone:
				g.log.Printf("the orchestrator is gone (%s): ending the run", ev.why)
				// What the orchestrator wrote before it died may still be
				// in the pipe (a service it started just before): read
				// it all, until the pipe closes, so that cleanup ends
				// that service too. Bounded, in case something else
				// holds the pipe open.
				select {
				case <-g.readDone:
				case <-time.After(drainWait):
					g.log.Printf("the orchestrator's pipe is still open after %v: ending what is known", drainWait)
				}
				g.cleanup()
				return 0
			case ev.service != "":
				g.controllerDied(ev.service, ev.w)
			}
		}
	}
}

// drainWait bounds how long a guard whose orchestrator died waits for the
// rest of its messages before it ends the run.
const drainWait = time.Second

type guard struct {
	log      *log.Logger
	events   chan event
	readDone chan struct{} // closed once in is read to its end (or "done")

	mu       sync.Mutex
	run      Run
	services map[string]*watched
	// attached keeps every attached service's state until the run ends,
	// after its controller died too: what is left in its cgroup when the
	// run ends is given back, never killed.
	attached map[string]*attach.State
}

type watched struct {
	Service
	pidfd int // the controller's
}

type event struct {
	done, orchestratorGone bool
	why                    string
	service                string // its controller died
	w                      *watched
}

func (g *guard) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			g.log.Printf("malformed message: %v", err)
			continue
		}
		switch m.Op {
		case "run":
			if m.Run == nil {
				continue
			}
			g.mu.Lock()
			g.run = *m.Run
			g.mu.Unlock()
			if err := g.watch(m.Run.Orchestrator, func() { g.events <- event{orchestratorGone: true, why: "it exited"} }); err != nil {
				g.events <- event{orchestratorGone: true, why: err.Error()}
			}
		case "service":
			if m.Service != nil {
				g.addService(*m.Service)
			}
		case "forget":
			g.mu.Lock()
			if w := g.services[m.Name]; w != nil {
				delete(g.services, m.Name)
				if w.pidfd >= 0 {
					unix.Close(w.pidfd)
				}
			}
			// A restart: an attached service is let go and ended by
			// the orchestrator, and started under slowpoke.
			delete(g.attached, m.Name)
			g.mu.Unlock()
		case "done":
			close(g.readDone)
			g.events <- event{done: true}
			return
		}
	}
	close(g.readDone)
	g.events <- event{orchestratorGone: true, why: "its pipe closed"}
}

// watch calls gone once p has exited.
func (g *guard) watch(p Proc, gone func()) error {
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil || !p.Alive() {
		if err == nil {
			unix.Close(fd)
		}
		return fmt.Errorf("process %d is gone", p.PID)
	}
	go func() {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err == nil || !errors.Is(err, unix.EINTR) {
				break
			}
		}
		gone()
	}()
	return nil
}

func (g *guard) addService(s Service) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.Attached != nil {
		if g.attached == nil {
			g.attached = map[string]*attach.State{}
		}
		g.attached[s.Name] = s.Attached
	}
	if w := g.services[s.Name]; w != nil && w.Controller == s.Controller {
		w.Service = s // an update (the group, once the controller knows it)
		return
	}
	fd, err := unix.PidfdOpen(s.Controller.PID, 0)
	if err != nil || !s.Controller.Alive() {
		if err == nil {
			unix.Close(fd)
		}
		g.log.Printf("service %s: its controller (PID %d) is already gone", s.Name, s.Controller.PID)
		// Recorded as the current one, as a live controller's is: the
		// event ends or gives back the service only if it still is (no
		// "forget" came meanwhile).
		w := &watched{Service: s, pidfd: -1}
		if old := g.services[s.Name]; old != nil && old.pidfd >= 0 {
			unix.Close(old.pidfd)
		}
		g.services[s.Name] = w
		go func() { g.events <- event{service: s.Name, w: w} }()
		return
	}
	w := &watched{Service: s, pidfd: fd}
	if old := g.services[s.Name]; old != nil && old.pidfd >= 0 {
		unix.Close(old.pidfd)
	}
	g.services[s.Name] = w
	go func() {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err == nil || !errors.Is(err, unix.EINTR) {
				break
			}
		}
		g.events <- event{service: s.Name, w: w}
	}()
}

// controllerDied ends the service of a controller that died, unless it was
// forgotten (restarted on purpose) meanwhile.
func (g *guard) controllerDied(name string, w *watched) {
	g.mu.Lock()
	current := g.services[name] == w
	if current {
		delete(g.services, name)
	}
	run := g.run
	g.mu.Unlock()
	if !current {
		return
	}
	if w.Attached != nil {
		g.log.Printf("the controller of %s (PID %d) died: thawing the run's cgroups and giving the service back as it was found", name, w.Controller.PID)
	} else {
		g.log.Printf("the controller of %s (PID %d) died: thawing the run's cgroups and ending the service", name, w.Controller.PID)
	}
	thaw(run, g.log.Printf)
	EndService(w.Service, g.log.Printf)
	if w.pidfd >= 0 {
		unix.Close(w.pidfd)
	}
}

// cleanup ends the whole run: the controllers first, through their pidfds
// (one may hold cores or freeze cgroups; a dead one does neither).
func (g *guard) cleanup() {
	g.mu.Lock()
	run := g.run
	svcs := make([]Service, 0, len(g.services))
	fds := map[string]int{}
	for name, w := range g.services {
		svcs = append(svcs, w.Service)
		fds[name] = w.pidfd
	}
	for name, st := range g.attached {
		if _, watched := g.services[name]; !watched {
			// Its controller died earlier: no controller to kill.
			svcs = append(svcs, Service{Name: name, Cgroup: st.Cgroup, Attached: st})
		}
	}
	g.services = map[string]*watched{}
	g.mu.Unlock()
	End(run, svcs, func(s Service) {
		if fd, ok := fds[s.Name]; ok && fd >= 0 {
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
	}, g.log.Printf)
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// End ends a run whose orchestrator is gone: it kills every controller
// (with kill, or by PID after checking its start time when kill is nil),
// thaws the run's cgroups, ends every service, removes the cgroups and the
// run record. It returns what it ended, in words.
func End(run Run, svcs []Service, kill func(Service), logf func(string, ...any)) []string {
	var ended []string
	// A service whose group was not known yet (a run killed while it
	// started it) is found as its live controller's child, before the
	// controller dies and the service is orphaned out of reach.
	svcs = slices.Clone(svcs)
	for i, s := range svcs {
		if s.Cgroup == "" && s.Group.PID == 0 && s.Attached == nil && s.Controller.Alive() {
			if g, ok := childGroup(s.Controller.PID); ok {
				svcs[i].Group = g
			}
		}
	}
	for _, s := range svcs {
		if kill != nil {
			kill(s)
		} else if s.Controller.Signal(unix.SIGKILL) {
			ended = append(ended, fmt.Sprintf("the controller of %s (PID %d)", s.Name, s.Controller.PID))
		}
	}
	// SIGKILL is delivered asynchronously: wait (boundedly) until the
	// controllers have exited, so that no write of theirs (a freeze, a
	// held core) can land after the thaw below.
	deadline := time.Now().Add(killWait)
	for _, s := range svcs {
		for s.Controller.Alive() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	thaw(run, logf)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range svcs {
		wg.Go(func() {
			if what := EndService(s, logf); what != "" {
				mu.Lock()
				ended = append(ended, what)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, p := range run.Cgroups {
		cg := pause.Cgroup{Path: p, V2: run.V2}
		if a := attachedIn(svcs, p); a != nil {
			// An attached service's processes are never ended: what
			// joined its cgroup since the restore above goes back too.
			a.Restore()
		} else {
			cg.Kill(Grace) // anything that joined it since
		}
		if err := cg.Remove(); err != nil {
			logf("%v", err)
		}
	}
	if run.Record != "" {
		os.Remove(run.Record)
	}
	logf("ended the run of %d services", len(svcs))
	return ended
}

// attachedIn returns the attached service whose processes slowpoke moved
// into cgroup path, or nil.
func attachedIn(svcs []Service, path string) *attach.State {
	for _, s := range svcs {
		if s.Attached != nil && (s.Attached.Cgroup == path || s.Cgroup == path) {
			return s.Attached
		}
	}
	return nil
}

// thaw thaws every cgroup of the run.
func thaw(run Run, logf func(string, ...any)) {
	for _, p := range run.Cgroups {
		if err := (pause.Cgroup{Path: p, V2: run.V2}).Thaw(); err != nil && !errors.Is(err, os.ErrNotExist) {
			logf("%v", err)
		}
	}
}

// EndService continues and ends every process of a service: those in its
// cgroup where it has one, its process group otherwise, and where nobody
// learned its group before its controller died, the processes that carry
// the controller's marks in their environment (strays). It says what it
// ended ("" for nothing).
func EndService(s Service, logf func(string, ...any)) string {
	if s.Attached != nil {
		problems := s.Attached.Restore()
		for _, p := range problems {
			logf("%s: %s", s.Name, p)
		}
		logf("gave %s back as it was found (attached: continued, thawed, back in its cgroups, affinity and nice restored)", s.Name)
		if len(problems) > 0 {
			return fmt.Sprintf("%s (attached; given back, but: %s)", s.Name, strings.Join(problems, "; "))
		}
		return fmt.Sprintf("%s (attached; continued and given back as it was)", s.Name)
	}
	if s.Cgroup != "" {
		pids := (pause.Cgroup{Path: s.Cgroup, V2: s.V2}).Kill(Grace)
		if len(pids) == 0 {
			return ""
		}
		logf("ended %s: processes %v", s.Name, pids)
		return fmt.Sprintf("%s (PIDs %v)", s.Name, pids)
	}
	if s.Group.PID == 0 {
		return endStrays(s, logf)
	}
	if !s.Group.Alive() {
		return ""
	}
	s.Group.SignalGroup(unix.SIGCONT)
	s.Group.SignalGroup(unix.SIGTERM)
	deadline := time.Now().Add(Grace)
	for s.Group.Alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s.Group.SignalGroup(unix.SIGKILL)
	logf("ended %s: process group %d", s.Name, s.Group.PID)
	return fmt.Sprintf("%s (process group %d)", s.Name, s.Group.PID)
}

// strays finds the processes of service s that its controller started
// without anyone learning their process group: the service's name and a
// socket in the controller's own directory (inservice.SocketDirKind, named
// after the controller's pid) are in their environment, and they began no
// earlier than the controller. Their parent may be gone: they are found
// wherever they were reparented.
func strays(s Service) []proc.Stat {
	since, err := strconv.ParseUint(s.Controller.Start, 10, 64)
	if err != nil || s.Controller.PID <= 0 {
		return nil
	}
	// The controller's pid, reused by another process, may name another
	// controller's directory now (a later run's cleanup of an old
	// record): the strays would be that one's.
	if now := StartTime(s.Controller.PID); now != "" && now != s.Controller.Start {
		return nil
	}
	var out []proc.Stat
	for _, st := range proc.All() {
		start, err := strconv.ParseUint(st.Start, 10, 64)
		if err != nil || start < since || st.Ended() || st.PID == os.Getpid() {
			continue
		}
		if name, _ := proc.Getenv(st.PID, inservice.EnvService); name != s.Name {
			continue
		}
		sock, _ := proc.Getenv(st.PID, inservice.EnvSocket)
		if pid, ok := stale.Creator(filepath.Base(filepath.Dir(sock)), inservice.SocketDirKind); !ok || pid != s.Controller.PID {
			continue
		}
		out = append(out, st)
	}
	return out
}

// endStrays continues and ends a service's strays, their process groups
// too where they lead one: SIGTERM, then SIGKILL after Grace. It looks
// again until none is left (a stray may fork while it ends), for at most
// Grace and a second more.
func endStrays(s Service, logf func(string, ...any)) string {
	var ended []int
	deadline := time.Now().Add(Grace)
	for stop := deadline.Add(time.Second); time.Now().Before(stop); time.Sleep(20 * time.Millisecond) {
		ps := strays(s)
		if len(ps) == 0 {
			break
		}
		late := time.Now().After(deadline)
		for _, st := range ps {
			first := !slices.Contains(ended, st.PID)
			if first {
				ended = append(ended, st.PID)
			}
			switch {
			case late:
				signalStray(st, unix.SIGKILL)
			case first:
				signalStray(st, unix.SIGCONT)
				signalStray(st, unix.SIGTERM)
			}
		}
	}
	if len(ended) == 0 {
		return ""
	}
	logf("ended %s, found by its environment after its controller (PID %d) died: processes %v", s.Name, s.Controller.PID, ended)
	return fmt.Sprintf("%s (PIDs %v)", s.Name, ended)
}

// signalStray signals st through a pidfd, once it is sure that the pid is
// still st's (a recycled pid is never signalled), and st's process group
// where st leads it (a group id is not reused while its leader lives).
func signalStray(st proc.Stat, sig unix.Signal) {
	p := Proc{PID: st.PID, Start: st.Start}
	if st.PGRP == st.PID {
		// The group first: it holds st, which may be gone once signalled.
		p.SignalGroup(sig)
	}
	p.Signal(sig)
}
