package attach

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/image"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// containerdProgram is what the test's container runs: its init starts a
// child, and both sleep until killed.
const containerdProgram = `package main

import (
	"os"
	"os/exec"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		time.Sleep(time.Hour)
		return
	}
	if err := exec.Command("/proc/self/exe", "child").Start(); err != nil {
		os.Exit(1)
	}
	time.Sleep(time.Hour)
}
`

// containerd is a containerd of the test's own: its root, state and socket
// under a temporary directory.
type containerd struct {
	dir, sock string
	cmd       *exec.Cmd
}

// needContainerd skips the test where containerd cannot run, or fails it
// where SLOWPOKE_REQUIRE_CONTAINERD=1 says it must.
func needContainerd(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, c := range []string{"containerd", "ctr", "runc", "go"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("needs %s (apt-get install containerd runc, and run as root)", strings.Join(missing, ", "))
	if os.Getenv("SLOWPOKE_REQUIRE_CONTAINERD") == "1" {
		t.Fatal(msg + "; SLOWPOKE_REQUIRE_CONTAINERD=1 says it must run")
	}
	t.Skip(msg)
}

// startContainerd starts a containerd without the CRI plugin, stopped
// when the test ends with everything it left: shims, mounts, cgroups.
func startContainerd(t *testing.T) *containerd {
	t.Helper()
	dir := t.TempDir()
	c := &containerd{dir: dir, sock: filepath.Join(dir, "c.sock")}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.sock)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	c.cmd.Stdout, c.cmd.Stderr = log, log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.stop(t); log.Close() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := c.ctr("", "version"); err == nil {
			return c
		} else if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("containerd did not come up: %v\n%s", err, b)
		}
	}
}

// ctr runs ctr on the test's containerd, in namespace ns ("" for none).
func (c *containerd) ctr(ns string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ns != "" {
		args = append([]string{"--namespace", ns}, args...)
	}
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.sock}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// stop ends containerd by its PID, and unmounts what is left mounted under
// its directory.
func (c *containerd) stop(t *testing.T) {
	c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var mounts []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], c.dir+"/") {
			mounts = append(mounts, f[4])
		}
	}
	slices.Reverse(mounts) // the last mounted first
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", m, err)
		}
	}
}

// runContainer builds an image holding containerdProgram, imports it into
// namespace ns and runs it as container id; the container, its task and
// its shim are gone when the test ends, and so are the namespace's
// cgroups and runc state, where empty.
func (c *containerd) runContainer(t *testing.T, ns, id string) {
	t.Helper()
	src := filepath.Join(c.dir, "program")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module program\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte(containerdProgram), 0o644)
	bin := filepath.Join(c.dir, "program.bin")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	img, err := image.Build(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	const tag = "slowpoke.local/attach-test:1"
	archive := filepath.Join(c.dir, "image.tar")
	if err := image.WriteArchive(archive, tag, img); err != nil {
		t.Fatal(err)
	}
	// The native snapshotter, which works where overlayfs cannot mount
	// (a temporary directory on overlayfs itself).
	if _, err := c.ctr(ns, "images", "import", "--snapshotter", "native", archive); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.removeContainer(t, ns, id) })
	if _, err := c.ctr(ns, "run", "-d", "--snapshotter", "native", tag, id); err != nil {
		t.Fatal(err)
	}
}

// removeContainer kills a container's task and deletes it and the
// container; then the shim (by the PID that the task's init had as its
// parent) and the namespace's empty cgroups and runc state.
func (c *containerd) removeContainer(t *testing.T, ns, id string) {
	var shim proc.Stat
	if out, err := c.ctr(ns, "task", "ls"); err == nil {
		if pid, _, ok := findTask(out, id); ok && pid > 0 {
			if st, ok := proc.Read(pid); ok {
				shim, _ = proc.Read(st.PPID)
			}
		}
	}
	c.ctr(ns, "task", "kill", "--signal", "SIGKILL", id)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := c.ctr(ns, "task", "delete", id); err == nil || !strings.Contains(err.Error(), "running") {
			break
		}
	}
	if _, err := c.ctr(ns, "container", "delete", id); err != nil && !strings.Contains(err.Error(), "not found") {
		t.Errorf("cleanup: %v", err)
	}
	// The shim exits once its task is deleted; one that did not is ended
	// here, if it is still the same process.
	for deadline := time.Now().Add(5 * time.Second); shim.PID > 0; time.Sleep(50 * time.Millisecond) {
		st, ok := proc.Read(shim.PID)
		if !ok || st.Ended() || st.Start != shim.Start {
			break
		}
		if time.Now().After(deadline) {
			unix.Kill(shim.PID, unix.SIGKILL)
			break
		}
	}
	mounts, _ := cgroupMounts()
	for _, m := range mounts {
		unix.Rmdir(filepath.Join(m, ns, id))
		unix.Rmdir(filepath.Join(m, ns))
	}
	os.Remove(filepath.Join("/run/containerd/runc", ns))
}

// ByContainer finds a container that containerd's ctr runs, by its ID,
// with its every process: with CONTAINERD_NAMESPACE naming its namespace,
// and without, in every namespace. What no runtime has is an error that
// says what each runtime said. Attached, paused and resumed through a Set
// and given back, its processes run as before, in its cgroup.
func TestByContainerContainerd(t *testing.T) {
	needContainerd(t)
	c := startContainerd(t)
	// A namespace of the test's own (runc keeps its state by namespace),
	// and an empty one before it, to be looked in too.
	ns, empty := fmt.Sprintf("slowpoke-attach-test-%d", os.Getpid()), "a-empty"
	if _, err := c.ctr("", "namespaces", "create", empty); err != nil {
		t.Fatal(err)
	}
	c.runContainer(t, ns, "cart")
	t.Setenv("CONTAINERD_ADDRESS", c.sock)
	t.Setenv("CONTAINERD_NAMESPACE", "")
	os.Unsetenv("CONTAINERD_NAMESPACE")

	// The init, once it has started its child.
	out, err := c.ctr(ns, "task", "ls")
	if err != nil {
		t.Fatal(err)
	}
	root, status, ok := findTask(out, "cart")
	if !ok || status != "RUNNING" {
		t.Fatalf("ctr task ls:\n%s", out)
	}
	var want []int
	for deadline := time.Now().Add(10 * time.Second); len(want) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the container's init %d started no child", root)
		}
		want = Tree([]int{root})
	}

	got, err := ByContainer("cart")
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("in every namespace: ByContainer = %v, %v; want %v", got, err, want)
	}
	t.Setenv("CONTAINERD_NAMESPACE", ns)
	got, err = Find(&spec.Attach{Container: "cart"})
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("with CONTAINERD_NAMESPACE=%s: Find = %v, %v; want %v", ns, got, err, want)
	}
	t.Setenv("CONTAINERD_NAMESPACE", empty)
	if _, err := ByContainer("cart"); err == nil || !strings.Contains(err.Error(), `ctr: no running task "cart" in namespaces a-empty`) {
		t.Errorf("with CONTAINERD_NAMESPACE=%s: %v", empty, err)
	}
	os.Unsetenv("CONTAINERD_NAMESPACE")
	_, err = ByContainer("nope")
	for _, w := range []string{`attach: container "nope": docker: `, "; podman: ", "; nerdctl: ",
		fmt.Sprintf(`; ctr: no running task "nope" in namespaces a-empty, %s`, ns)} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("an unknown container: %v; want an error containing %q", err, w)
		}
	}

	checkLentAndGivenBack(t, want)
}

// checkLentAndGivenBack attaches to a container's processes as a run
// does: captured, pinned, stopped and continued through a Set, and given
// back; they run on, in the cgroup they were in.
func checkLentAndGivenBack(t *testing.T, pids []int) {
	t.Helper()
	before := map[int]snapshot{}
	for _, pid := range pids {
		before[pid] = snap(t, pid)
	}
	s, err := Capture("cart", pids)
	if err != nil {
		t.Fatal(err)
	}
	// Moved into a freezer cgroup of slowpoke's, where there are v1 ones,
	// as a run moves them, out of the container's.
	var cg *pause.Cgroup
	if h, err := pause.FindHierarchy(); err == nil && !h.V2 {
		c := testCgroup(t, "container")
		cg, s.Cgroup = &c, c.Path
	}
	avail, _ := currentCPUs()
	if err := s.Apply(avail[:1], cg); err != nil {
		t.Fatal(err)
	}
	if cg != nil {
		if in, _ := cg.Procs(); len(in) != len(pids) {
			t.Errorf("slowpoke's cgroup holds %v, want %v", in, pids)
		}
	}
	set := s.Open()
	defer set.Close()
	if err := set.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		waitState(t, pid, 'T')
	}
	if err := set.Signal(unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if problems := s.Restore(); len(problems) > 0 {
		t.Errorf("Restore: %v", problems)
	}
	for _, pid := range pids {
		if st, ok := proc.Read(pid); !ok || st.Ended() || st.State == 'T' {
			t.Errorf("process %d after the run: state %c (there: %v), want it running", pid, st.State, ok)
		}
		same(t, pid, before[pid], snap(t, pid))
	}
	if got, err := ByContainer("cart"); err != nil || !slices.Equal(got, pids) {
		t.Errorf("after the run: ByContainer = %v, %v; want %v", got, err, pids)
	}
}
