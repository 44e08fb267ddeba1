package podcgroup

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

func TestUIDAndPodDirName(t *testing.T) {
	const uid = "0c2e8a7d-5b1f-4c3e-9a2b-7d6e5f4a3b21"
	for _, tc := range []struct {
		name string
		uid  string // "" for none
	}{
		{"pod" + uid, uid},
		{"kubepods-besteffort-pod0c2e8a7d_5b1f_4c3e_9a2b_7d6e5f4a3b21.slice", uid},
		{"kubepods-pod0c2e8a7d_5b1f_4c3e_9a2b_7d6e5f4a3b21.slice", uid},
		{"pod" + strings.ToUpper(uid), ""},
		{"pod../../x", ""},
		{"besteffort", ""},
		{"kubepods-besteffort.slice", ""},
		{"cri-containerd-" + uid + ".scope", ""},
	} {
		got, ok := PodDirName(tc.name)
		if ok != (tc.uid != "") || got != tc.uid {
			t.Errorf("PodDirName(%q) = %q, %v; want %q", tc.name, got, ok, tc.uid)
		}
		if tc.uid != "" && !isPodDir(tc.name, tc.uid) {
			t.Errorf("isPodDir(%q, %q) = false", tc.name, tc.uid)
		}
	}
	for _, bad := range []string{"", uid + "0", strings.ReplaceAll(uid, "-", "_"), "../" + uid[3:]} {
		if ValidUID(bad) {
			t.Errorf("ValidUID(%q) = true", bad)
		}
	}
}

func newUID(t *testing.T) string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// hierarchy is a node's cgroup file system to lay pods out in: its
// mount, and the hierarchies under it the pods' cgroups are made in.
type hierarchy struct {
	name  string
	root  string
	trees []string // where each pod's cgroup is made (freezer and cpuacct, or the unified one)
}

func hierarchies(t *testing.T) []hierarchy {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups")
	}
	var out []hierarchy
	if n, err := Open("/sys/fs/cgroup"); err == nil {
		h := hierarchy{name: "v1", root: "/sys/fs/cgroup", trees: []string{n.Freezer, n.CPU}}
		if n.V2 {
			h.name, h.trees = "v2", []string{n.Freezer}
		}
		out = append(out, h)
	}
	// A hybrid host mounts the unified hierarchy beside the v1 ones.
	if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
		out = append(out, hierarchy{name: "v2-unified", root: "/sys/fs/cgroup/unified", trees: []string{"/sys/fs/cgroup/unified"}})
	}
	if len(out) == 0 {
		t.Skip("no cgroup v1 freezer or cgroup2 hierarchy")
	}
	return out
}

// fakePod lays out a pod's cgroups as a kubelet with driver would, under a
// test directory of each tree, with one container cgroup running a busy
// process. Everything goes when the test ends.
func fakePod(t *testing.T, h hierarchy, driver, uid string) (podRel string, pid int) {
	t.Helper()
	top := fmt.Sprintf("slowpoke-podtest-%d-%s", os.Getpid(), uid[:8])
	var rel string
	switch driver {
	case "cgroupfs":
		rel = filepath.Join(top, "kubepods", "besteffort", "pod"+uid)
	case "systemd":
		rel = filepath.Join(top, "kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-pod"+strings.ReplaceAll(uid, "-", "_")+".slice")
	}
	ctr := filepath.Join(rel, "cri-containerd-0123abcd.scope")
	for _, tree := range h.trees {
		if err := os.MkdirAll(filepath.Join(tree, ctr), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid = cmd.Process.Pid
	t.Cleanup(func() {
		for _, tree := range h.trees {
			pause.Cgroup{Path: filepath.Join(tree, rel), V2: h.name != "v1"}.Thaw()
		}
		cmd.Process.Kill()
		cmd.Wait()
		for _, tree := range h.trees {
			// Deepest first: rmdir removes empty cgroups only.
			for p := filepath.Join(tree, ctr); strings.HasPrefix(p, filepath.Join(tree, top)); p = filepath.Dir(p) {
				for i := 0; i < 50 && os.Remove(p) != nil; i++ {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
	})
	for _, tree := range h.trees {
		if err := os.WriteFile(filepath.Join(tree, ctr, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	return rel, pid
}

// running says whether pid gets CPU time: it waits up to 2 s for its
// ticks to grow, since a busy machine can leave a runnable process off
// the cores for longer than a tick.
func running(t *testing.T, pid int) bool {
	t.Helper()
	return ranWithin(t, pid, 2*time.Second)
}

// ranWithin says whether pid got CPU time within d.
func ranWithin(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	before := cpuTicks(t, pid)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		if cpuTicks(t, pid) > before {
			return true
		}
	}
	return false
}

// cpuTicks is pid's CPU time (user and system) in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// TestFindFreezeAndCPU: a pod's cgroup is found by UID with either
// driver, in every hierarchy this host has; freezing it stops its
// container's process, thawing lets it run; its CPU time is accounted.
func TestFindFreezeAndCPU(t *testing.T) {
	for _, h := range hierarchies(t) {
		for _, driver := range []string{"cgroupfs", "systemd"} {
			t.Run(h.name+"/"+driver, func(t *testing.T) {
				uid := newUID(t)
				rel, pid := fakePod(t, h, driver, uid)
				fakePod(t, h, driver, newUID(t)) // another pod, never touched
				n, err := Open(h.root)
				if err != nil {
					t.Fatal(err)
				}
				p, err := n.Find(uid)
				if err != nil {
					t.Fatal(err)
				}
				if p.Rel != rel {
					t.Fatalf("found %s, want %s", p.Rel, rel)
				}
				if _, err := n.Find(newUID(t)); err == nil {
					t.Error("found a pod that has no cgroup")
				}
				c0, err := p.CPU()
				if err != nil {
					t.Fatal(err)
				}
				t0 := cpuTicks(t, pid)
				if !running(t, pid) {
					t.Fatal("the pod's process does not run before the freeze")
				}
				if err := p.Freezer().Freeze(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
				if ranWithin(t, pid, 100*time.Millisecond) {
					t.Error("the pod's process runs while its pod is frozen")
				}
				if err := p.Freezer().Thaw(); err != nil {
					t.Fatal(err)
				}
				if !running(t, pid) {
					t.Error("the pod's process does not run after the thaw")
				}
				ran := time.Duration(cpuTicks(t, pid)-t0) * 10 * time.Millisecond
				c1, err := p.CPU()
				if err != nil {
					t.Fatal(err)
				}
				// The pod's CPU time covers its process's, which ran
				// meanwhile (how long depends on what else the machine
				// runs; /proc's ticks, of 10 ms, can run ahead of the
				// cgroup's count by a tick or two).
				if ran <= 0 || c1-c0 < ran-20*time.Millisecond {
					t.Errorf("the pod used %v of CPU while its process used %v", c1-c0, ran)
				}
			})
		}
	}
}

// TestLedgerThawsWhatAKilledAgentLeft: an agent (a real process) records
// a pod, freezes it and is SIGKILLed; the pod stays frozen until
// ThawRecorded, which thaws it and removes the ledger. A live agent's
// ledger is left alone, and Close thaws and removes one's own.
func TestLedgerThawsWhatAKilledAgentLeft(t *testing.T) {
	for _, h := range hierarchies(t) {
		t.Run(h.name, func(t *testing.T) {
			uid := newUID(t)
			_, pid := fakePod(t, h, "cgroupfs", uid)
			dir := t.TempDir()
			agent := exec.Command(os.Args[0], "-test.run=^TestLedgerHelper$")
			agent.Env = append(os.Environ(), "PODCGROUP_HELPER="+strings.Join([]string{dir, h.root, uid}, ","))
			out, _ := agent.StdoutPipe()
			agent.Stderr = os.Stderr
			if err := agent.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				agent.Process.Kill()
				agent.Wait()
			}()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || strings.TrimSpace(line) != "frozen" {
				t.Fatalf("helper: %q, %v", line, err)
			}
			n, _ := Open(h.root)
			// While the agent lives, its ledger is its own.
			if thawed, err := ThawRecorded(dir, n); err != nil || len(thawed) != 0 {
				t.Fatalf("ThawRecorded beside a live agent thawed %v, %v", thawed, err)
			}
			if ranWithin(t, pid, 100*time.Millisecond) {
				t.Fatal("the pod runs while the agent holds it frozen")
			}
			agent.Process.Signal(syscall.SIGKILL)
			agent.Wait()
			if ranWithin(t, pid, 100*time.Millisecond) {
				t.Fatal("the pod ran after its agent was killed, before any thaw: the test proves nothing")
			}
			thawed, err := ThawRecorded(dir, n)
			if err != nil || len(thawed) != 1 {
				t.Fatalf("ThawRecorded: %v, %v", thawed, err)
			}
			if !running(t, pid) {
				t.Error("the pod is still frozen after ThawRecorded")
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("ledgers left: %v", ents)
			}
			// A ledger whose pid now names another process (pid 1, which
			// did not start when the ledger says) is a gone agent's.
			p, _ := n.Find(uid)
			recycled := filepath.Join(dir, LedgerKind+"-1-recycled")
			rel, _ := filepath.Rel(n.Freezer, p.Freezer().Path)
			b, _ := json.Marshal(ledgerFile{Start: "1", V2: n.V2, Cgroups: []string{rel}})
			if err := os.WriteFile(recycled, b, 0o600); err != nil {
				t.Fatal(err)
			}
			p.Freezer().Freeze()
			if thawed, err := ThawRecorded(dir, n); err != nil || len(thawed) != 1 || !running(t, pid) {
				t.Errorf("a ledger of a recycled pid: thawed %v, %v; the pod runs: %v", thawed, err, running(t, pid))
			}
			// One's own ledger: Close thaws and removes it.
			l, err := OpenLedger(dir, "own", n)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Add(p); err != nil {
				t.Fatal(err)
			}
			p.Freezer().Freeze()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if !running(t, pid) {
				t.Error("Close left the pod frozen")
			}
			if _, err := os.Stat(l.Path()); !os.IsNotExist(err) {
				t.Errorf("Close left its ledger: %v", err)
			}
		})
	}
}

// TestLedgerHelper is the agent of TestLedgerThawsWhatAKilledAgentLeft.
func TestLedgerHelper(t *testing.T) {
	args := os.Getenv("PODCGROUP_HELPER")
	if args == "" {
		t.Skip("a helper process")
	}
	f := strings.Split(args, ",")
	n, err := Open(f[1])
	if err != nil {
		t.Fatal(err)
	}
	p, err := n.Find(f[2])
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLedger(f[0], "run", n)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(p); err != nil {
		t.Fatal(err)
	}
	if err := p.Freezer().Freeze(); err != nil {
		t.Fatal(err)
	}
	fmt.Println("frozen")
	time.Sleep(time.Minute)
}
