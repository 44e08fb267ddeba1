package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// cliTimeout bounds each call of a container runtime's CLI (a test may
// shorten it).
var cliTimeout = 5 * time.Second

// containerRuntime is a container runtime's CLI and how to ask it for the
// init process of a running container.
type containerRuntime struct {
	// name is how errors name the runtime; cli is the command run.
	name, cli string
	// initPID returns the container's init process (as this machine's
	// PID namespace numbers it), or why it has none.
	initPID func(cli, container string) (int, error)
}

// runtimes are the container runtimes ByContainer asks, in order; a test
// may point them at other commands.
var runtimes = []containerRuntime{
	{"docker", "docker", inspectPID},
	{"podman", "podman", inspectPID},
	{"nerdctl", "nerdctl", inspectPID},
	{"ctr", "ctr", ctrTaskPID},
}

// errNotInstalled is a runtime whose CLI is not on PATH.
var errNotInstalled = errors.New("not installed")

// ByContainer lists the processes of a running container of this
// machine's container runtime, by its name or ID: those of the cgroup its
// init process is in, and of the cgroups below it (ByCgroup). The first
// runtime of docker, podman, nerdctl and containerd's ctr that has the
// container running names its init process; where none does, the error
// says what each said.
func ByContainer(name string) ([]int, error) {
	if !spec.ContainerName(name) {
		return nil, fmt.Errorf("attach: %q is not a container name or ID", name)
	}
	var tried []string
	for _, rt := range runtimes {
		pid, err := rt.initPID(rt.cli, name)
		if err != nil {
			tried = append(tried, rt.name+": "+err.Error())
			continue
		}
		pids, err := containerProcs(pid)
		if err != nil {
			return nil, fmt.Errorf("attach: container %q (%s, init process %d): %w", name, rt.name, pid, err)
		}
		return pids, nil
	}
	return nil, fmt.Errorf("attach: container %q: %s", name, strings.Join(tried, "; "))
}

// containerProcs lists the processes of the cgroup that process pid, a
// container's init, is in: its v1 freezer cgroup where that hierarchy is
// mounted (what slowpoke freezes), else its unified (v2) one. A process
// in a root cgroup is refused: that would be every process there is.
func containerProcs(pid int) ([]int, error) {
	cgs, err := proc.Cgroups(pid)
	if err != nil {
		return nil, fmt.Errorf("its cgroups: %w", err)
	}
	mounts, err := proc.CgroupMounts("freezer")
	if err != nil {
		return nil, fmt.Errorf("cgroup mounts: %w", err)
	}
	var dir string
	switch {
	case mounts[false] != "" && cgs["freezer"] != "":
		dir = filepath.Join(mounts[false], cgs["freezer"])
	case mounts[true] != "" && cgs[""] != "":
		dir = filepath.Join(mounts[true], cgs[""])
	default:
		return nil, errors.New("it is in no cgroup slowpoke can read (no freezer or unified hierarchy)")
	}
	if dir == mounts[false] || dir == mounts[true] {
		return nil, fmt.Errorf("it is in the root cgroup %s, with every other process: attach by pid_file instead", dir)
	}
	pids, err := ByCgroup(dir)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "attach: "))
	}
	return pids, nil
}

// inspectPID asks a Docker-like CLI (docker, podman, nerdctl) for the PID
// of a container's init process: 0 while it does not run.
func inspectPID(cli, container string) (int, error) {
	out, err := runCLI(cli, "container", "inspect", "--format", "{{.State.Pid}}", container)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	switch {
	case err != nil:
		return 0, fmt.Errorf("inspect gave %.60q, not a PID", strings.TrimSpace(out))
	case pid <= 0:
		return 0, fmt.Errorf("container %q is not running", container)
	}
	return pid, nil
}

// ctrTaskPID asks containerd's ctr for the PID of a container's running
// task: in the namespace CONTAINERD_NAMESPACE names, or where that is
// unset, in every namespace (a Kubernetes node's containers are in
// k8s.io). ctr itself reads CONTAINERD_ADDRESS.
func ctrTaskPID(cli, container string) (int, error) {
	namespaces := []string{os.Getenv("CONTAINERD_NAMESPACE")}
	if namespaces[0] == "" {
		out, err := runCLI(cli, "namespaces", "ls", "-q")
		if err != nil {
			return 0, err
		}
		namespaces = strings.Fields(out)
	}
	var stopped []string
	for _, ns := range namespaces {
		out, err := runCLI(cli, "--namespace", ns, "task", "ls")
		if err != nil {
			return 0, fmt.Errorf("namespace %s: %w", ns, err)
		}
		pid, status, ok := findTask(out, container)
		switch {
		case ok && status == "RUNNING":
			return pid, nil
		case ok:
			stopped = append(stopped, fmt.Sprintf("%s in namespace %s", strings.ToLower(status), ns))
		}
	}
	if len(stopped) > 0 {
		return 0, fmt.Errorf("task %q is %s", container, strings.Join(stopped, ", "))
	}
	if len(namespaces) == 0 {
		return 0, errors.New("no namespaces")
	}
	return 0, fmt.Errorf("no running task %q in namespaces %s", container, strings.Join(namespaces, ", "))
}

// findTask finds a task in `ctr task ls`'s table (TASK PID STATUS).
func findTask(table, id string) (pid int, status string, ok bool) {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != id {
			continue
		}
		if pid, err := strconv.Atoi(f[1]); err == nil {
			return pid, f[2], true
		}
	}
	return 0, "", false
}

// runCLI runs a runtime's CLI for its standard output, within cliTimeout.
// Its errors are short: errNotInstalled, the first line of what it wrote
// on standard error, or how it failed.
func runCLI(cli string, args ...string) (string, error) {
	if _, err := exec.LookPath(cli); err != nil {
		return "", errNotInstalled
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second // what it left running may hold the pipes
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("no answer in %v", cliTimeout)
	case err != nil:
		line, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if line == "" {
			return "", err
		}
		// ctr begins its errors with "ctr: ", which the caller says.
		return "", errors.New(strings.TrimPrefix(strings.TrimSpace(line), filepath.Base(cli)+": "))
	}
	return stdout.String(), nil
}
