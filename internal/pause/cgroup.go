package pause

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// Cgroup is a cgroup slowpoke made for one service: every process of the
// service, children included, is in it, and it can be frozen. Path is its
// directory; V2 says whether it is in the unified (v2) hierarchy or the v1
// freezer hierarchy.
type Cgroup struct {
	Path string
	V2   bool
}

// Hierarchy is where slowpoke makes its cgroups: a directory "slowpoke"
// under this process's own cgroup, in the v1 freezer hierarchy where one is
// mounted, and otherwise in the unified (v2) one.
type Hierarchy struct {
	Root string // the "slowpoke" directory
	V2   bool
}

// FindHierarchy finds a cgroup hierarchy this process can make freezable
// cgroups in, and makes its slowpoke directory. It fails where neither a
// v1 freezer nor a cgroup2 file system is mounted, or where this process
// may not write there (cgroups need root, or a delegated v2 subtree).
func FindHierarchy() (Hierarchy, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return Hierarchy{}, err
	}
	own, err := ownCgroups()
	if err != nil {
		return Hierarchy{}, err
	}
	var tried []string
	for _, v2 := range []bool{false, true} {
		mnt, ok := mounts[v2]
		if !ok {
			continue
		}
		key := "freezer"
		if v2 {
			key = ""
		}
		rel, ok := own[key]
		if !ok {
			continue
		}
		h := Hierarchy{Root: filepath.Join(mnt, rel, "slowpoke"), V2: v2}
		if v2 {
			// cgroup.freeze exists in every non-root v2 cgroup (kernel 5.2
			// and later).
			if _, err := os.Stat(filepath.Join(mnt, rel, "cgroup.procs")); err != nil {
				tried = append(tried, err.Error())
				continue
			}
		}
		if err := os.MkdirAll(h.Root, 0o755); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		return h, nil
	}
	if len(tried) == 0 {
		return Hierarchy{}, errors.New("pause: no cgroup v1 freezer and no cgroup2 file system is mounted")
	}
	return Hierarchy{}, fmt.Errorf("pause: cannot make cgroups: %s", strings.Join(tried, "; "))
}

// Create makes (or finds) the cgroup at rel, a slash-separated path under
// the hierarchy's root.
func (h Hierarchy) Create(rel string) (Cgroup, error) {
	p := filepath.Join(h.Root, filepath.Clean("/"+rel))
	if err := os.MkdirAll(p, 0o755); err != nil {
		return Cgroup{}, fmt.Errorf("pause: make cgroup: %w", err)
	}
	return Cgroup{Path: p, V2: h.V2}, nil
}

// cgroupMounts finds the mount points of the v1 freezer hierarchy (false)
// and of the cgroup2 file system (true).
func cgroupMounts() (map[bool]string, error) { return proc.CgroupMounts("freezer") }

// ownCgroups maps each hierarchy of this process's /proc/self/cgroup to its
// path: "freezer" for the v1 freezer, "" for the unified hierarchy.
func ownCgroups() (map[string]string, error) {
	return proc.ReadCgroups("/proc/self/cgroup")
}

func (c Cgroup) stateFile() string {
	if c.V2 {
		return filepath.Join(c.Path, "cgroup.freeze")
	}
	return filepath.Join(c.Path, "freezer.state")
}

func (c Cgroup) value(frozen bool) string {
	switch {
	case c.V2 && frozen:
		return "1"
	case c.V2:
		return "0"
	case frozen:
		return "FROZEN"
	}
	return "THAWED"
}

// Freeze freezes every process of the cgroup.
func (c Cgroup) Freeze() error { return c.set(true) }

// Thaw thaws the cgroup.
func (c Cgroup) Thaw() error { return c.set(false) }

func (c Cgroup) set(frozen bool) error {
	if err := os.WriteFile(c.stateFile(), []byte(c.value(frozen)), 0); err != nil {
		return fmt.Errorf("pause: %s %s: %w", map[bool]string{true: "freeze", false: "thaw"}[frozen], c.Path, err)
	}
	return nil
}

// Frozen reports whether the cgroup is frozen or being frozen (by itself or,
// in v1, by a parent).
func (c Cgroup) Frozen() (bool, error) {
	if c.V2 {
		b, err := os.ReadFile(filepath.Join(c.Path, "cgroup.events"))
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line == "frozen 1" {
				return true, nil
			}
		}
		b, err = os.ReadFile(c.stateFile())
		if err != nil {
			return false, err
		}
		return strings.TrimSpace(string(b)) == "1", nil
	}
	b, err := os.ReadFile(c.stateFile())
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) != "THAWED", nil
}

// Procs lists the processes in the cgroup.
func (c Cgroup) Procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.Path, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Start starts cmd inside the cgroup: the child is in it from its first
// instruction, before it can fork. On v2 it is cloned into the cgroup
// (CLONE_INTO_CGROUP); on v1 the forking thread joins the cgroup for the
// fork and goes back after.
func (c Cgroup) Start(cmd *exec.Cmd) error {
	if c.V2 {
		dir, err := os.Open(c.Path)
		if err != nil {
			return fmt.Errorf("pause: open cgroup: %w", err)
		}
		defer dir.Close()
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(dir.Fd())
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := proc.ReadCgroups("/proc/thread-self/cgroup")
	if err != nil {
		return err
	}
	back, ok := own["freezer"]
	if !ok {
		return errors.New("pause: this thread is in no freezer cgroup")
	}
	mnt, err := cgroupMounts()
	if err != nil {
		return err
	}
	tid := []byte(strconv.Itoa(unix.Gettid()))
	if err := os.WriteFile(filepath.Join(c.Path, "tasks"), tid, 0); err != nil {
		return fmt.Errorf("pause: join cgroup %s: %w", c.Path, err)
	}
	err = cmd.Start()
	if berr := os.WriteFile(filepath.Join(mnt[false], back, "tasks"), tid, 0); berr != nil {
		// This thread stays behind in the service's cgroup, where every
		// freeze would stop it: keep it locked (the deferred unlock leaves
		// it locked, so no other goroutine runs on it) and fail the start,
		// so that the controller ends rather than pause with it.
		runtime.LockOSThread()
		if err == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		return fmt.Errorf("pause: leave cgroup %s after starting the service: %w", c.Path, berr)
	}
	return err
}

// Kill ends every process in the cgroup: it thaws it (a frozen v1 task
// cannot act on any signal), continues and terminates each process, and
// kills what is left after grace. It returns the processes it found.
func (c Cgroup) Kill(grace time.Duration) []int {
	c.Thaw()
	first, _ := c.Procs()
	for _, pid := range first {
		unix.Kill(pid, unix.SIGCONT)
		unix.Kill(pid, unix.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for {
		left, err := c.Procs()
		if err != nil || len(left) == 0 {
			return first
		}
		if time.Now().After(deadline) {
			c.Thaw()
			for _, pid := range left {
				unix.Kill(pid, unix.SIGKILL)
			}
			if time.Now().After(deadline.Add(2 * time.Second)) {
				return first
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Remove removes the cgroup (it must have no processes; their exit takes a
// moment to show, so it tries for a second) and then every parent up to
// the hierarchy's slowpoke directory that is left empty.
func (c Cgroup) Remove() error {
	var err error
	for i := 0; i < 50; i++ {
		if err = unix.Rmdir(c.Path); err == nil || errors.Is(err, fs.ErrNotExist) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pause: remove cgroup %s: %w", c.Path, err)
	}
	for dir := filepath.Dir(c.Path); filepath.Base(dir) != "slowpoke" && strings.Contains(dir, "/slowpoke/"); dir = filepath.Dir(dir) {
		if unix.Rmdir(dir) != nil {
			break
		}
	}
	return nil
}

// Freezer freezes and thaws a set of cgroups through descriptors opened
// once, one write each: what a round costs the process that pauses. Its
// methods may be called from several goroutines (a pause's hard-cap timer
// thaws from its own); after Close, Set does nothing.
type Freezer struct {
	cgs   []Cgroup
	mu    sync.Mutex
	files []*os.File
}

// OpenFreezer opens the state file of every cgroup.
func OpenFreezer(cgs []Cgroup) (*Freezer, error) {
	f := &Freezer{cgs: cgs}
	for _, c := range cgs {
		fd, err := os.OpenFile(c.stateFile(), os.O_WRONLY, 0)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("pause: %w", err)
		}
		f.files = append(f.files, fd)
	}
	return f, nil
}

// Set freezes (true) or thaws (false) every cgroup. It goes on past
// failures, so that a thaw reaches every cgroup it can, and returns the
// first.
func (f *Freezer) Set(frozen bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.setLocked(frozen)
}

func (f *Freezer) setLocked(frozen bool) error {
	var first error
	for i, fd := range f.files {
		if _, err := fd.Write([]byte(f.cgs[i].value(frozen))); err != nil && first == nil {
			first = fmt.Errorf("pause: %s: %w", f.cgs[i].Path, err)
		}
	}
	return first
}

// Close thaws every cgroup and closes the descriptors.
func (f *Freezer) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.setLocked(false)
	for _, fd := range f.files {
		fd.Close()
	}
	f.files = nil
	return err
}
