package attach

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/threads"
)

// MaxProcs bounds how many processes one attached service may have.
const MaxProcs = 1024

// State is what slowpoke must know to give an attached service back as it
// found it: its processes, each thread's CPU affinity and nice value, and
// each process's freezer cgroup, read before anything was changed; and
// the cgroup slowpoke moved them into for the run, if any. It is written
// to the run record and given to the guard and to the service's controller,
// so that whichever of them outlives the others restores it.
type State struct {
	Service string    `json:"service"`
	Procs   []Process `json:"procs"`
	// Cgroup is slowpoke's cgroup (a v1 freezer cgroup) that the processes
	// are moved into for the run ("" where they stay where they are).
	Cgroup string `json:"cgroup,omitempty"`

	// What Members listed last, and when (by a scan of /proc).
	mu     sync.Mutex
	known  []proc.Stat
	listed time.Time
	cpu    CPUCounter // CPUTime's
}

// Process is one process of an attached service as it was found.
type Process struct {
	PID   int    `json:"pid"`
	Start string `json:"start"` // its start time (/proc/PID/stat field 22): a PID alone may be recycled
	// Freezer is its cgroup in the v1 freezer hierarchy, as
	// /proc/PID/cgroup writes it ("" where there is no such hierarchy).
	Freezer string   `json:"freezer,omitempty"`
	Threads []Thread `json:"threads"`
}

// Thread is one thread's scheduling, as it was found.
type Thread struct {
	TID  int   `json:"tid"`
	CPUs []int `json:"cpus"`
	Nice int   `json:"nice"`
}

// Root is the service's first process (the one the spec names, or the
// lowest PID of its cgroup).
func (s *State) Root() Process {
	if len(s.Procs) == 0 {
		return Process{}
	}
	return s.Procs[0]
}

// Alive reports whether p still runs (the same process, not a recycled
// PID).
func (p Process) Alive() bool {
	st, ok := proc.Read(p.PID)
	return ok && !st.Ended() && st.Start == p.Start
}

// Capture reads the processes of a service that already runs: roots (as
// Find returned them, root first) and everything that descends from them.
// It refuses processes that slowpoke must not pause: init, kernel threads,
// this process or one it runs under, a process already stopped (slowpoke
// would continue it).
func Capture(service string, roots []int) (*State, error) {
	if len(roots) == 0 {
		return nil, errors.New("attach: no process")
	}
	pids := Tree(roots)
	// The root first, then the rest in PID order.
	if i := slices.Index(pids, roots[0]); i > 0 {
		pids = append(append([]int{roots[0]}, pids[:i]...), pids[i+1:]...)
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("attach: process %d is gone", roots[0])
	}
	if len(pids) > MaxProcs {
		return nil, fmt.Errorf("attach: %d processes, at most %d", len(pids), MaxProcs)
	}
	self := os.Getpid()
	above := ancestors(self)
	s := &State{Service: service}
	for _, pid := range pids {
		st, ok := proc.Read(pid)
		switch {
		case !ok || st.Ended() || st.Exiting():
			continue // exited meanwhile, or exiting
		case pid == 1:
			return nil, errors.New("attach: refusing to attach to PID 1")
		case pid == self || above[pid]:
			return nil, fmt.Errorf("attach: slowpoke itself runs under process %d: pausing it would pause slowpoke", pid)
		case st.State == 'T' || st.State == 't':
			return nil, fmt.Errorf("attach: process %d (%s) is stopped: slowpoke would continue it; continue it first (kill -CONT %d)", pid, describe(pid), pid)
		case st.Kernel():
			return nil, fmt.Errorf("attach: process %d is a kernel thread", pid)
		}
		p := Process{PID: pid, Start: st.Start}
		if cgs, err := proc.Cgroups(pid); err == nil {
			p.Freezer = cgs["freezer"]
		}
		tids, err := threadIDs(pid)
		if err != nil {
			continue // exited meanwhile
		}
		for _, tid := range tids {
			var set unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &set); err != nil {
				continue
			}
			prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
			if err != nil {
				continue
			}
			// The raw system call returns 20 - nice.
			p.Threads = append(p.Threads, Thread{TID: tid, CPUs: threads.CPUs(&set), Nice: 20 - prio})
		}
		if len(p.Threads) == 0 || !p.Alive() {
			continue
		}
		s.Procs = append(s.Procs, p)
	}
	if len(s.Procs) == 0 {
		return nil, fmt.Errorf("attach: process %d is gone", roots[0])
	}
	return s, nil
}

// ancestors lists the processes pid runs under (its parent, its
// parent's, ... up to init), walked once.
func ancestors(pid int) map[int]bool {
	out := map[int]bool{}
	if pid == os.Getpid() {
		out[os.Getppid()] = true // even where /proc cannot be read
	}
	for i := 0; i < 4096 && pid > 1; i++ {
		st, ok := proc.Read(pid)
		if !ok || st.PPID <= 0 {
			break
		}
		pid = st.PPID
		out[pid] = true
	}
	return out
}

func describe(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(cmd) > 80 {
		cmd = cmd[:77] + "..."
	}
	return cmd
}

func threadIDs(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out, nil
}

// freezerMount is the mount point of the v1 freezer hierarchy ("" where
// none is mounted).
func freezerMount() string {
	m, _ := proc.CgroupMounts("freezer")
	return m[false]
}

// relistEvery bounds how often Members lists the service's processes
// anew where that costs a scan of /proc (a service without a cgroup of its
// own): in between, it reads again the processes it listed last.
const relistEvery = 250 * time.Millisecond

// Members lists the service's processes: those found at Capture that
// still run, those in its cgroup, and everything that descends from
// either, this process never. Each comes with its start time, for
// signalling it by identity, and its CPU time as of now. It is the one
// list of an attached service's processes: pausing, CPU time and
// scheduling all read it.
//
// It is bounded in cost: where the service is in a cgroup of its own
// (State.Cgroup) that holds every process found at Capture, the cgroup's
// processes are the service's (a process starts in its parent's cgroup),
// and no scan of /proc is needed; otherwise the processes are listed anew
// by a scan of /proc at most every relistEvery, and in between those
// listed last that still run are read again. A process the service
// started since the last scan is then missing for up to relistEvery.
func (s *State) Members() []proc.Stat {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cg, ok := s.cgroupMembers(); ok {
		s.listed, s.known = time.Time{}, nil
		return cg
	}
	if now := time.Now(); s.known == nil || now.Sub(s.listed) >= relistEvery {
		s.known, s.listed = s.scan(), now
		return slices.Clone(s.known)
	}
	var out []proc.Stat
	for _, k := range s.known {
		if st, ok := proc.Read(k.PID); ok && !st.Ended() && st.Start == k.Start {
			out = append(out, st)
		}
	}
	s.known = out
	return slices.Clone(out)
}

// cgroupMembers lists the processes of the service's cgroup, if it has one
// and every process found at Capture that still runs is in it.
func (s *State) cgroupMembers() ([]proc.Stat, bool) {
	if s.Cgroup == "" {
		return nil, false
	}
	pids, err := (pause.Cgroup{Path: s.Cgroup}).Procs()
	if err != nil || len(pids) == 0 {
		return nil, false
	}
	for _, p := range s.Procs {
		if !slices.Contains(pids, p.PID) && p.Alive() {
			return nil, false
		}
	}
	self := os.Getpid()
	var out []proc.Stat
	for _, pid := range pids {
		if st, ok := proc.Read(pid); ok && !st.Ended() && pid != self {
			out = append(out, st)
		}
	}
	return out, true
}

// scan lists the service's processes now, by a scan of /proc: those found
// at Capture that still run, those in its cgroup, and everything that
// descends from either, this process never.
func (s *State) scan() []proc.Stat {
	var roots []int
	for _, p := range s.Procs {
		if p.Alive() {
			roots = append(roots, p.PID)
		}
	}
	if s.Cgroup != "" {
		if pids, err := (pause.Cgroup{Path: s.Cgroup}).Procs(); err == nil {
			roots = append(roots, pids...)
		}
	}
	self := os.Getpid()
	out := []proc.Stat{}
	for _, pid := range Tree(roots) {
		if st, ok := proc.Read(pid); ok && !st.Ended() && pid != self {
			out = append(out, st)
		}
	}
	return out
}

// Apply makes the service run where the run needs it: every thread of every
// process on cpus (none: left as they are), and every process moved into
// slowpoke's cgroup cg, where cg is a v1 freezer cgroup (nil: not moved).
// A v2 cgroup is never used: moving a process there would take it out of
// its own, and of the limits set on it. State.Cgroup must already name cg
// (so that a restore made meanwhile takes them out again).
func (s *State) Apply(cpus []int, cg *pause.Cgroup) error {
	if cg != nil && !cg.V2 {
		if s.Cgroup != cg.Path {
			return errors.New("attach: the state does not name the cgroup to move into")
		}
		// Twice: a process forked by one not yet moved lands in the old
		// cgroup.
		for pass := 0; pass < 2; pass++ {
			for _, st := range s.scan() {
				if err := moveTo(cg.Path, st); err != nil {
					return err
				}
			}
		}
	}
	if len(cpus) == 0 {
		return nil
	}
	set := threads.CPUSet(cpus)
	for pass := 0; pass < 5; pass++ {
		moved := 0
		for _, st := range s.scan() {
			tids, _ := threadIDs(st.PID)
			for _, tid := range tids {
				var cur unix.CPUSet
				if unix.SchedGetaffinity(tid, &cur) != nil || cur == set {
					continue
				}
				if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
					return fmt.Errorf("attach: pin thread %d of process %d to CPUs %v: %w", tid, st.PID, cpus, err)
				}
				moved++
			}
		}
		if moved == 0 {
			break
		}
	}
	return nil
}

// moveTo moves a process (all its threads) into the v1 cgroup at dir,
// unless it has exited or its PID now names another process.
func moveTo(dir string, st proc.Stat) error {
	if now, ok := proc.Read(st.PID); !ok || now.Start != st.Start {
		return nil
	}
	err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(st.PID)), 0)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("attach: move process %d into %s: %w", st.PID, dir, err)
	}
	return nil
}

// Restore gives the service back as Capture found it: it thaws slowpoke's
// cgroup, continues every process of the service (a pause may have
// stopped it), moves each process back to the freezer cgroup it was in
// (one born since: to its root's), and gives every thread back its CPU
// affinity and nice value (a thread born since: its process's first
// thread's, or the root's). It never ends a process. It may be called
// any number of times, by any process (the orchestrator, a controller,
// the guard, a later run), and is bounded in time. It returns what it
// could not restore, in words.
func (s *State) Restore() []string {
	var problems []string
	if s.Cgroup != "" {
		if err := (pause.Cgroup{Path: s.Cgroup}).Thaw(); err != nil && !errors.Is(err, os.ErrNotExist) {
			problems = append(problems, err.Error())
		}
	}
	members := s.scan()
	for _, st := range members {
		signal(st, unix.SIGCONT)
	}
	byPID := map[int]Process{}
	for _, p := range s.Procs {
		byPID[p.PID] = p
	}
	recorded := func(st proc.Stat) (Process, bool) {
		p, ok := byPID[st.PID]
		return p, ok && p.Start == st.Start
	}
	root := s.Root()
	if s.Cgroup != "" {
		mnt := freezerMount()
		_, left := release(pause.Cgroup{Path: s.Cgroup}, func(st proc.Stat) (string, error) {
			home := root.Freezer
			if p, ok := recorded(st); ok {
				home = p.Freezer
			}
			if mnt == "" || home == "" {
				return "", fmt.Errorf("process %d: no freezer cgroup to move it back to", st.PID)
			}
			return filepath.Join(mnt, filepath.Clean("/"+home)), nil
		})
		problems = append(problems, left...)
	}
	for _, st := range members {
		p, ok := recorded(st)
		if !ok {
			p = root
		}
		if len(p.Threads) == 0 {
			continue
		}
		tids, _ := threadIDs(st.PID)
		for _, tid := range tids {
			want := p.Threads[0] // the process's first thread's, for a thread born since
			for _, t := range p.Threads {
				if t.TID == tid && ok {
					want = t
				}
			}
			set := threads.CPUSet(want.CPUs)
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				problems = append(problems, fmt.Sprintf("thread %d of process %d: affinity %v: %v", tid, st.PID, want.CPUs, err))
			}
			if prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err == nil && 20-prio != want.Nice {
				if err := unix.Setpriority(unix.PRIO_PROCESS, tid, want.Nice); err != nil && !errors.Is(err, unix.ESRCH) {
					problems = append(problems, fmt.Sprintf("thread %d of process %d: nice %d: %v", tid, st.PID, want.Nice, err))
				}
			}
		}
	}
	return problems
}

// Release thaws slowpoke's cgroup cg of an attached service and moves
// every process in it into the v1 cgroup at dir, continuing each (through
// a pidfd), never ending any: for a service whose state is lost (a run
// killed before it wrote its record), where each process came from is
// not known. It returns the processes it found, and what it could not do.
func Release(cg pause.Cgroup, dir string) (found []int, problems []string) {
	if err := cg.Thaw(); err != nil && !errors.Is(err, os.ErrNotExist) {
		problems = append(problems, err.Error())
	}
	found, left := release(cg, func(proc.Stat) (string, error) { return dir, nil })
	return found, append(problems, left...)
}

// release moves every process in cg (thawed) to the v1 cgroup that home
// names for it, continuing each once (through a pidfd: a recycled
// PID is never signalled). It is bounded: after 2 s, a process that could
// not be moved is left where it is. It returns the processes it found,
// and what it could not do.
func release(cg pause.Cgroup, home func(proc.Stat) (string, error)) (found []int, problems []string) {
	problem := func(p string) {
		if !slices.Contains(problems, p) {
			problems = append(problems, p)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		left, err := cg.Procs()
		if err != nil || len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			problem(fmt.Sprintf("processes %v are still in %s", left, cg.Path))
			break
		}
		for _, pid := range left {
			st, ok := proc.Read(pid)
			if !ok {
				continue
			}
			if !slices.Contains(found, pid) {
				found = append(found, pid)
				signal(st, unix.SIGCONT)
			}
			dir, err := home(st)
			if err == nil {
				err = moveTo(dir, st)
			}
			if err != nil {
				problem(err.Error())
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return found, problems
}

// signal sends sig to the process st describes, through a pidfd once it is
// sure the PID is still st's: a recycled PID is never signalled.
func signal(st proc.Stat, sig unix.Signal) bool {
	fd, err := unix.PidfdOpen(st.PID, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if now, ok := proc.Read(st.PID); !ok || now.Start != st.Start {
		return false
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}

// Save writes the state to path (mode 0600), for a controller to read.
func (s *State) Save(path string) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Load reads a state that Save wrote.
func Load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("attach: %s: %w", path, err)
	}
	if len(s.Procs) == 0 {
		return nil, fmt.Errorf("attach: %s names no process", path)
	}
	return &s, nil
}

// PIDs lists the service's processes (Members).
func (s *State) PIDs() []int {
	var out []int
	for _, st := range s.Members() {
		out = append(out, st.PID)
	}
	return out
}

// CPUTime is the CPU time the service's processes (Members) have used so
// far, each read through its process CPU clock (all its threads, to the
// nanosecond); it never decreases (CPUCounter). It fails where the service
// has no process left.
func (s *State) CPUTime() (time.Duration, error) {
	pids := s.PIDs()
	if len(pids) == 0 {
		return 0, fmt.Errorf("attach: service %q has no process left", s.Service)
	}
	return s.cpu.Read(pids, func(pid int) time.Duration {
		c, _ := proc.CPUClock(pid)
		return c
	}), nil
}

// CPUCounter sums the CPU clocks of a changing set of processes, such that
// the sum never decreases: a process that leaves the set (it exited) keeps
// what it had used when last read, and one that joins counts all it used.
// The zero value is ready; it is safe for concurrent use.
type CPUCounter struct {
	mu         sync.Mutex
	last, next map[int]time.Duration // next: a spare, so that a read allocates nothing
	total      time.Duration
}

// Read reads clock (a process's CPU time; 0 for one that is gone) of each
// of pids, the processes of the set now, and returns the sum.
func (c *CPUCounter) Read(pids []int, clock func(pid int) time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = map[int]time.Duration{}
	}
	now := c.next
	clear(now)
	for _, pid := range pids {
		cur := clock(pid)
		if cur == 0 { // gone
			continue
		}
		prev := c.last[pid]
		if cur > prev {
			c.total += cur - prev
		} else {
			cur = prev
		}
		now[pid] = cur
	}
	c.last, c.next = now, c.last
	return c.total
}

// ReadAttached reads into c the CPU time of the processes a spec's attach
// section names and of every live process descending from them, and
// returns c's sum (CPUCounter.Read: what a process that has ended used
// stays counted).
func (c *CPUCounter) ReadAttached(a *spec.Attach) (time.Duration, error) {
	roots, err := Find(a)
	if err != nil {
		return 0, err
	}
	return c.Read(Tree(roots), func(pid int) time.Duration {
		t, _ := proc.CPUClock(pid)
		return t
	}), nil
}
