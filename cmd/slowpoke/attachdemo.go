//go:build lab || e2e

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/examples/demo"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/threads"
)

// The demo application started the plain way, by a shell script with
// background jobs and PID files, as a user runs it before asking slowpoke
// about it; and a spec that attaches to it. TestAttachPredict and
// TestAttachFaults use it, and so do bench attach and bench faults.

// attachedDemoScript starts the four services in the background, each
// writing its PID file, and waits for them.
const attachedDemoScript = `cd "$(dirname "$0")"
for s in frontend cart catalog currency; do
  ./slowpoke-emu -topology topology.yaml -service $s > $s.out 2>&1 &
  echo $! > $s.pid
done
wait
`

// attachedDemoSpec attaches to the services the script started, by port
// and by PID file; its workload is the demo's (examples/demo/app.yaml).
const attachedDemoSpec = `name: demo-attached
services:
  - {name: frontend, attach: {port: 18080}, ready: {http_path: /healthz}}
  - {name: cart, attach: {pid_file: cart.pid}, port: 18081, protocol: grpc, ground_truth: {env: EMU_WORK_OFFSET_US, base_us: 0}}
  - {name: catalog, attach: {port: 18082}, ready: {http_path: /healthz}}
  - {name: currency, attach: {pid_file: currency.pid}, port: 18083, ready: {http_path: /healthz}}
` + demoEntryAndWorkload

// demoEntryAndWorkload are the demo's entry and workload
// (examples/demo/app.yaml), for specs that reach the demo another way.
const demoEntryAndWorkload = `entry: http://127.0.0.1:18080
workload:
  connections: 128
  warmup: 1s
  duration: 3s
  requests:
    - {name: home, method: GET, path: /home, weight: 1}
`

// attachedDemoServices are the demo's services, in the script's order.
var attachedDemoServices = []string{"frontend", "cart", "catalog", "currency"}

const attachedDemoEntry = "http://127.0.0.1:18080/home"

type attachedDemo struct {
	dir    string
	spec   string
	script *exec.Cmd
	pids   map[string]int
	before map[string]string // state of every service process
}

// launchAttachedDemo writes the demo's topology, a slowpoke-emu link to
// emu, the script and the attaching spec into dir, starts the script (in
// a process group of its own, which stop ends) and waits until the demo
// answers. On an error after the script started, the returned demo is
// not nil: stop it.
func launchAttachedDemo(dir, emu string) (*attachedDemo, error) {
	topo, err := fs.ReadFile(demo.Files, "topology.yaml")
	if err != nil {
		return nil, err
	}
	return launchAttachedTopology(dir, emu, topo)
}

// crowdedTopology is the demo with a frontend about as costly as its cart:
// run as deployed, unpinned, the two need both cores of a 2-core machine
// together, and a cheaper cart frees CPU the frontend uses; pinned apart
// as slowpoke places them (cart on a core of its own), the frontend's
// core binds, and a cheaper cart gains nothing there. Same services and
// ports as the demo.
const crowdedTopology = `entry: frontend
services:
  frontend:
    port: 18080
    protocol: http
    endpoints:
      /home:
        work_us: 700
        calls:
          - {service: cart, endpoint: Get}
          - {service: catalog, endpoint: /list}
  cart:
    port: 18081
    protocol: grpc
    endpoints:
      Get: {work_us: 900}
  catalog:
    port: 18082
    protocol: http
    endpoints:
      /list:
        work_us: 40
        calls:
          - {service: currency, endpoint: /convert}
  currency:
    port: 18083
    protocol: http
    endpoints:
      /convert: {work_us: 30}
`

// launchAttachedTopology is launchAttachedDemo with the emulator's
// topology topo (the demo's services and ports).
func launchAttachedTopology(dir, emu string, topo []byte) (*attachedDemo, error) {
	if err := os.WriteFile(filepath.Join(dir, "topology.yaml"), topo, 0o644); err != nil {
		return nil, err
	}
	os.Remove(filepath.Join(dir, emuName))
	if err := os.Symlink(emu, filepath.Join(dir, emuName)); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "start.sh"), []byte(attachedDemoScript), 0o755); err != nil {
		return nil, err
	}
	a := &attachedDemo{dir: dir, spec: filepath.Join(dir, "app.yaml"), pids: map[string]int{}}
	if err := os.WriteFile(a.spec, []byte(attachedDemoSpec), 0o644); err != nil {
		return nil, err
	}
	for _, name := range attachedDemoServices {
		os.Remove(filepath.Join(dir, name+".pid"))
	}
	a.script = exec.Command("/bin/sh", filepath.Join(dir, "start.sh"))
	a.script.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.script.Start(); err != nil {
		return nil, err
	}
	for _, name := range attachedDemoServices {
		for deadline := time.Now().Add(20 * time.Second); a.pids[name] == 0; time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(dir, name+".pid")); err == nil {
				a.pids[name], _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			if time.Now().After(deadline) {
				return a, fmt.Errorf("no PID file for %s", name)
			}
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := a.answers()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return a, fmt.Errorf("the demo started by a script does not answer: %v", err)
		}
	}
	a.before = a.state()
	return a, nil
}

// stop continues and kills the script's process group and waits, by
// their PIDs, until the services are gone, so that the ports are free.
func (a *attachedDemo) stop() {
	if a == nil || a.script == nil || a.script.Process == nil {
		return
	}
	pgid := a.script.Process.Pid
	syscall.Kill(-pgid, syscall.SIGCONT)
	syscall.Kill(-pgid, syscall.SIGKILL)
	a.script.Wait()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if len(alive(a.pids)) == 0 {
			break
		}
	}
	// A process of the demo that no pid file or port named (a service's
	// child) may still hold a port for a moment after the script's group
	// is killed: whatever runs the demo next would find it busy.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !attachedDemoPortsFree(); time.Sleep(50 * time.Millisecond) {
	}
}

// attachedDemoPortsFree says whether the attached demo's ports
// (18080-18083) can be listened on.
func attachedDemoPortsFree() bool { return attachedDemoPortsBusy() == "" }

// attachedDemoPortsBusy says why one of the attached demo's ports cannot
// be listened on, "" where none is busy.
func attachedDemoPortsBusy() string {
	for port := 18080; port <= 18083; port++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return err.Error()
		}
		l.Close()
	}
	return ""
}

// answers asks the demo's entry for its home page.
func (a *attachedDemo) answers() error {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(attachedDemoEntry)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", attachedDemoEntry, resp.Status)
	}
	return nil
}

func alive(pids map[string]int) []int {
	var out []int
	for _, pid := range pids {
		if st, ok := proc.Read(pid); ok && !st.Ended() {
			out = append(out, pid)
		}
	}
	return out
}

// state describes how each service process runs, one entry per aspect,
// keyed "SERVICE ASPECT": its start time (the same process), whether it
// is stopped, its freezer cgroup and whether that cgroup is frozen, and
// each thread's CPU affinity ("SERVICE thread TID cpus") and nice value
// ("... nice").
func (a *attachedDemo) state() map[string]string {
	m := map[string]string{}
	for name, pid := range a.pids {
		p := "/proc/" + strconv.Itoa(pid)
		st, ok := proc.Read(pid)
		if !ok {
			m[name] = "gone"
			continue
		}
		m[name+" start"] = st.Start
		m[name+" stopped"] = strconv.FormatBool(st.State == 'T' || st.State == 't')
		cgs, _ := proc.Cgroups(pid)
		frozen := false
		if path, ok := cgs["freezer"]; ok {
			m[name+" freezer"] = path
			b, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup/freezer", path, "freezer.state"))
			frozen = frozen || strings.TrimSpace(string(b)) != "THAWED" && len(b) > 0
		}
		if path, ok := cgs[""]; ok {
			for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				b, _ := os.ReadFile(filepath.Join(root, path, "cgroup.freeze"))
				frozen = frozen || strings.TrimSpace(string(b)) == "1"
			}
		}
		m[name+" frozen"] = strconv.FormatBool(frozen)
		tasks, _ := os.ReadDir(p + "/task")
		for _, tk := range tasks {
			tid, _ := strconv.Atoi(tk.Name())
			var set unix.CPUSet
			if unix.SchedGetaffinity(tid, &set) != nil {
				continue // ended meanwhile
			}
			prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
			if err != nil {
				continue
			}
			m[name+" thread "+tk.Name()+" cpus"] = cpuList(&set)
			m[name+" thread "+tk.Name()+" nice"] = strconv.Itoa(20 - prio)
		}
	}
	return m
}

func cpuList(set *unix.CPUSet) string {
	return local.FormatCPUs(threads.CPUs(set))
}

// changes lists, sorted, how the service processes run now differently
// from before slowpoke attached. A thread that has ended since is no
// change.
func (a *attachedDemo) changes() []string {
	now := a.state()
	var diff []string
	for k, v := range a.before {
		if now[k] != v && !(strings.Contains(k, " thread ") && now[k] == "") {
			diff = append(diff, fmt.Sprintf("%s: %q, was %q", k, now[k], v))
		}
	}
	slices.Sort(diff)
	return diff
}

// changeKind names what a line of changes is about: stopped, frozen,
// moved (another freezer cgroup), pinned (another CPU affinity), reniced,
// or gone (the process ended or is another one).
func changeKind(change string) string {
	key, _, _ := strings.Cut(change, ":")
	switch {
	case strings.HasSuffix(key, " stopped"):
		return "stopped"
	case strings.HasSuffix(key, " frozen"):
		return "frozen"
	case strings.HasSuffix(key, " freezer"):
		return "moved"
	case strings.HasSuffix(key, " cpus"):
		return "pinned"
	case strings.HasSuffix(key, " nice"):
		return "reniced"
	}
	return "gone"
}

// waitAsBefore waits up to d until the service processes run as before,
// and returns what still differs.
func (a *attachedDemo) waitAsBefore(d time.Duration) []string {
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		if diff := a.changes(); len(diff) == 0 || time.Now().After(deadline) {
			return diff
		}
	}
}

// childrenOf lists the processes whose parent is pid and whose command
// line contains word.
func childrenOf(pid int, word string) []int {
	var out []int
	for _, st := range proc.All() {
		if st.PPID != pid {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/cmdline")
		cmdline = bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})
		if bytes.Contains(cmdline, []byte(word)) {
			out = append(out, st.PID)
		}
	}
	return out
}

// leftovers lists processes whose environment mentions marker: everything
// an experiment starts inherits its PATH, which holds the output directory.
func leftovers(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte(marker)) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		out = append(out, strings.TrimSpace(string(stat)))
	}
	return out
}

// runCgroupFiles lists the freezing controls of the cgroups of the run
// whose orchestrator was orch (run-ORCH-START).
func runCgroupFiles(orch int) []string {
	run := fmt.Sprintf("run-%d-*", orch)
	var out []string
	for _, pattern := range []string{"/sys/fs/cgroup/freezer/slowpoke/" + run + "/*/freezer.state", "/sys/fs/cgroup/unified/slowpoke/" + run + "/*/cgroup.freeze", "/sys/fs/cgroup/slowpoke/" + run + "/*/cgroup.freeze"} {
		files, _ := filepath.Glob(pattern)
		out = append(out, files...)
	}
	return out
}

// frozenCgroups lists the cgroups of the run whose orchestrator was orch
// that are frozen, as "FILE: STATE".
func frozenCgroups(orch int) []string {
	var out []string
	for _, f := range runCgroupFiles(orch) {
		b, _ := os.ReadFile(f)
		if s := strings.TrimSpace(string(b)); s == "FROZEN" || s == "FREEZING" || s == "1" {
			out = append(out, f+": "+s)
		}
	}
	return out
}

// lockedBuffer collects lines from one goroutine and is read by another.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) WriteLine(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	io.WriteString(&b.buf, s+"\n")
}

// Write makes it an io.Writer, for a command's output.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startWatching starts cmd and returns once a line of its standard error
// contains marker, with the output collected (and on to its end). The
// error says so when cmd ended first or the marker did not come within
// wait; cmd has then been started all the same: the caller ends it.
func startWatching(cmd *exec.Cmd, marker string, wait time.Duration) (*lockedBuffer, error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	buf := &lockedBuffer{}
	seen := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			buf.WriteLine(sc.Text())
			if !said && strings.Contains(sc.Text(), marker) {
				said = true
				seen <- true
			}
		}
		if !said {
			seen <- false
		}
	}()
	select {
	case ok := <-seen:
		if !ok {
			return buf, fmt.Errorf("ended before %q", marker)
		}
	case <-time.After(wait):
		return buf, fmt.Errorf("no %q after %v", marker, wait)
	}
	return buf, nil
}
