//go:build e2e

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/attach"
)

// The demo's pods, which run on this machine (the cluster's only node,
// host network), attached locally as containers: a predict whose spec
// gives every service by its pod's container ID (attach: {container: ID};
// ctr finds it in containerd's k8s.io namespace) runs without asking
// Kubernetes for anything, and leaves the pods as they were: none
// restarted or replaced, every container's process the same, back in its
// own cgroup, on its own cores, with its nice value, not stopped or frozen.
func TestKubeAttachContainers(t *testing.T) {
	sock := os.Getenv("SLOWPOKE_TEST_CONTAINERD")
	if sock == "" && os.Getenv("SLOWPOKE_REQUIRE_KUBE") != "" {
		t.Fatal("SLOWPOKE_REQUIRE_KUBE is set but SLOWPOKE_TEST_CONTAINERD, the cluster's containerd socket, is not: run test/kube/e2e.sh")
	}
	e := setupKube(t)
	if sock == "" {
		t.Skip("SLOWPOKE_TEST_CONTAINERD (the cluster's containerd socket) is not set")
	}
	t.Setenv("CONTAINERD_ADDRESS", sock)
	before := e.podState(t)
	ids := map[string]string{}
	var services []string
	for _, sv := range e.spec.Services {
		pods := e.pods(t, sv.Name)
		if len(pods) != 1 || len(pods[0].Status.ContainerStatuses) != 1 {
			t.Fatalf("%s: want one pod of one container, have %d pods", sv.Name, len(pods))
		}
		id, ok := strings.CutPrefix(pods[0].Status.ContainerStatuses[0].ContainerID, "containerd://")
		if !ok {
			t.Fatalf("%s: container %q is not containerd's", sv.Name, pods[0].Status.ContainerStatuses[0].ContainerID)
		}
		ids[sv.Name] = id
		protocol := ""
		if sv.Protocol != "" {
			protocol = ", protocol: " + string(sv.Protocol)
		}
		services = append(services, fmt.Sprintf("  - {name: %s, port: %d%s, attach: {container: %s}}", sv.Name, sv.Port, protocol, id))
	}
	// Each container runs one process, its service: checked as the
	// demo started by a script is (attachedDemo).
	procs := &attachedDemo{pids: containerPIDs(t, ids)}
	procs.before = procs.state()
	specPath := filepath.Join(t.TempDir(), "attached.yaml")
	spec := "name: demo-containers\nservices:\n" + strings.Join(services, "\n") + "\n" + demoEntryAndWorkload
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(e.bin, "predict", "-f", specPath, "--target", "cart", "--reduce", "0,60%", "--reps", "1", "--max-reps", "1", "--out", out)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("predict attached to the pods' containers: %v\n%s", err, b)
	}
	t.Logf("predict attached to the pods' containers took %v\n%s", time.Since(start).Round(time.Second), b)
	for _, want := range []string{`attaching to 4 services of "demo-containers"`, "cart: attached to {container: " + ids["cart"] + "}", "rounds followed cart's CPU time"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	if pts := predictedPoints(t, out, 2); pts[1] <= pts[0] {
		t.Errorf("predicted %.0f req/s at 60%% against %.0f at 0%%: no gain predicted for the bottleneck", pts[1], pts[0])
	}
	e.checkUntouched(t, before)
	checkNoFrozenCgroups(t, cmd.Process.Pid)
	for _, d := range procs.waitAsBefore(20 * time.Second) {
		t.Errorf("after predict: %s", d)
	}
}

// containerPIDs finds the one process of each service's container.
func containerPIDs(t *testing.T, ids map[string]string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for name, id := range ids {
		pids, err := attach.ByContainer(id)
		if err != nil || len(pids) != 1 {
			t.Fatalf("%s: container %s: processes %v, %v", name, id, pids, err)
		}
		out[name] = pids[0]
	}
	return out
}
