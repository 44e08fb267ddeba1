package attach

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// useRuntimes points ByContainer at rts until the test ends.
func useRuntimes(t *testing.T, rts ...containerRuntime) {
	t.Helper()
	saved := runtimes
	runtimes = rts
	t.Cleanup(func() { runtimes = saved })
}

// script writes an executable shell script, a runtime CLI's stand-in.
func script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// ByContainer asks each runtime in turn and takes the first that has the
// container running; where none has, it says what each said. The runtimes
// here are scripts that answer as the real CLIs do.
func TestByContainerRuntimes(t *testing.T) {
	t.Setenv("CONTAINERD_NAMESPACE", "")
	saved := cliTimeout
	cliTimeout = 500 * time.Millisecond
	t.Cleanup(func() { cliTimeout = saved })

	echo := func(out string) string { return script(t, "cli", "echo "+out) }
	missing := containerRuntime{"docker", "slowpoke-no-such-cli", inspectPID}
	failing := containerRuntime{"podman", script(t, "podman", `echo "Error: no such container cart" >&2; echo more >&2; exit 125`), inspectPID}
	ctr := func(body string) containerRuntime { return containerRuntime{"ctr", script(t, "ctr", body), ctrTaskPID} }
	// A ctr with two namespaces, and in k8s.io a table of tasks.
	const ctrTasks = `case "$*" in
"namespaces ls -q") printf 'default\nk8s.io\n' ;;
"--namespace default task ls") printf 'TASK    PID    STATUS\n' ;;
"--namespace k8s.io task ls") printf 'TASK    PID    STATUS\nweb    77    RUNNING\ncart    0    STOPPED\n' ;;
*) echo "unexpected: $*" >&2; exit 1 ;;
esac`

	tests := []struct {
		name    string
		rts     []containerRuntime
		want    []int
		wantErr string
	}{
		{"none has it", []containerRuntime{missing, failing, ctr(ctrTasks)}, nil,
			`attach: container "cart": docker: not installed; podman: Error: no such container cart; ctr: task "cart" is stopped in namespace k8s.io`},
		{"not running", []containerRuntime{{"docker", echo("0"), inspectPID}}, nil, `docker: container "cart" is not running`},
		{"not a pid", []containerRuntime{{"docker", echo("'<no value>'"), inspectPID}}, nil, `docker: inspect gave "<no value>", not a PID`},
		{"failing without a word", []containerRuntime{{"docker", script(t, "docker", "exit 3"), inspectPID}}, nil, "docker: exit status 3"},
		{"no answer", []containerRuntime{{"docker", script(t, "docker", "exec sleep 30"), inspectPID}}, nil, "docker: no answer in 500ms"},
		{"no task", []containerRuntime{ctr(strings.Replace(ctrTasks, `cart    0    STOPPED\n`, "", 1))}, nil,
			`ctr: no running task "cart" in namespaces default, k8s.io`},
		{"ctr cannot connect", []containerRuntime{ctr(`echo "ctr: failed to dial \"/run/containerd/containerd.sock\": connection error" >&2; exit 1`)}, nil,
			`ctr: failed to dial "/run/containerd/containerd.sock": connection error`},
		{"a running task in the root cgroup", []containerRuntime{{"docker", echo("1"), inspectPID}}, nil, "root cgroup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.wantErr == "root cgroup" {
				if cgs, _ := proc.Cgroups(1); cgs["freezer"] != "/" {
					t.Skipf("PID 1 is in freezer cgroup %q here, not the root", cgs["freezer"])
				}
			}
			useRuntimes(t, tt.rts...)
			got, err := ByContainer("cart")
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("ByContainer = %v, %v; want an error containing %q", got, err, tt.wantErr)
			case tt.wantErr == "" && (err != nil || !slices.Equal(got, tt.want)):
				t.Errorf("ByContainer = %v, %v; want %v", got, err, tt.want)
			}
		})
	}

	t.Run("found", func(t *testing.T) {
		h := startHelper(t)
		cg := testCgroup(t, "container")
		if err := os.WriteFile(filepath.Join(cg.Path, "cgroup.procs"), []byte(strconv.Itoa(h.pid())), 0); err != nil {
			t.Fatal(err)
		}
		want := []int{h.pid(), h.fork(t)} // the child is born in the cgroup
		slices.Sort(want)
		useRuntimes(t, missing, failing, containerRuntime{"nerdctl", echo(strconv.Itoa(h.pid())), inspectPID})
		if got, err := ByContainer("cart"); err != nil || !slices.Equal(got, want) {
			t.Errorf("ByContainer = %v, %v; want %v", got, err, want)
		}
	})
	t.Run("namespace named", func(t *testing.T) {
		// CONTAINERD_NAMESPACE: that namespace only (ctr reads it).
		t.Setenv("CONTAINERD_NAMESPACE", "default")
		useRuntimes(t, ctr(ctrTasks))
		if _, err := ByContainer("cart"); err == nil || !strings.HasSuffix(err.Error(), `ctr: no running task "cart" in namespaces default`) {
			t.Errorf("ByContainer = %v", err)
		}
	})
	t.Run("not a name", func(t *testing.T) {
		useRuntimes(t, failing)
		if _, err := Find(&spec.Attach{Container: "--help"}); err == nil || !strings.Contains(err.Error(), "not a container name") {
			t.Errorf("Find = %v", err)
		}
	})
}
