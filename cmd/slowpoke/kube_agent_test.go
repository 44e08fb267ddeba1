//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/nodeagent"
	"github.com/slowpoke-dev/slowpoke/internal/podcgroup"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// The node agent's end-to-end tests: the demo with two replicas of the
// target (cart) and of another service (catalog), sharing their host ports
// (EMU_REUSE_PORT), predicted through the node agent.

// agentReplicas scales cart and catalog to two replicas that share their
// ports, waits until every pod is ready, and takes the templates as they
// are now as the originals to compare with.
func (e *kubeEnv) agentReplicas(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns := e.spec.Kubernetes.Namespace
	for _, name := range []string{"cart", "catalog"} {
		dep := e.deployment(t, name)
		dep.Spec.Replicas = ptrTo(int32(2))
		c := &dep.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "EMU_REUSE_PORT", Value: "1"})
		if _, err := e.client.AppsV1().Deployments(ns).Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		ready := true
		for _, sv := range e.spec.Services {
			dep := e.deployment(t, sv.Name)
			want := *dep.Spec.Replicas
			st := dep.Status
			pods := e.pods(t, sv.Name)
			ready = ready && dep.Generation <= st.ObservedGeneration && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want && int32(len(pods)) == want
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the demo with two replicas of cart and catalog did not become ready")
		}
	}
	for _, sv := range e.spec.Services {
		e.originals[sv.Name] = e.deployment(t, sv.Name).Spec.Template.DeepCopy()
	}
}

func ptrTo[T any](v T) *T { return &v }

// pods returns service's pods that are not being deleted.
func (e *kubeEnv) pods(t *testing.T, service string) []corev1.Pod {
	t.Helper()
	list, err := e.client.CoreV1().Pods(e.spec.Kubernetes.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + service})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// podState is every pod of the application, by UID: its restarts.
func (e *kubeEnv) podState(t *testing.T) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, sv := range e.spec.Services {
		for _, p := range e.pods(t, sv.Name) {
			var n int32
			for _, cs := range p.Status.ContainerStatuses {
				n += cs.RestartCount
			}
			out[string(p.UID)] = n
		}
	}
	return out
}

// checkUntouched asserts that the application is as before the run: the
// same pods (UIDs), none restarted, the templates unchanged, no
// DaemonSet, pod or Secret of slowpoke's left, no pod frozen, and the
// entry answers.
func (e *kubeEnv) checkUntouched(t *testing.T, before map[string]int32) {
	t.Helper()
	ctx := context.Background()
	ns := e.spec.Kubernetes.Namespace
	if after := e.podState(t); !mapsEqual(before, after) {
		t.Errorf("the pods changed: before (UID: restarts) %v, after %v", before, after)
	}
	dss, err := e.client.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(dss.Items) != 0 {
		t.Errorf("DaemonSets left: %d, %v", len(dss.Items), err)
	}
	agents, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelAgent})
	if err != nil || len(agents.Items) != 0 {
		t.Errorf("agent pods left: %d, %v", len(agents.Items), err)
	}
	if f := frozenPods(t); len(f) > 0 {
		t.Errorf("pods left frozen: %v", f)
	}
	for _, sv := range e.spec.Services {
		dep := e.deployment(t, sv.Name)
		if !reflect.DeepEqual(&dep.Spec.Template, e.originals[sv.Name]) {
			t.Errorf("%s: the template changed", sv.Name)
		}
		for _, a := range []string{kube.AnnotationOriginal, kube.AnnotationRun} {
			if _, ok := dep.Annotations[a]; ok {
				t.Errorf("%s: annotation %s left", sv.Name, a)
			}
		}
	}
	secrets, err := e.client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRun})
	if err != nil || len(secrets.Items) != 0 {
		t.Errorf("slowpoke's Secrets left: %d, %v", len(secrets.Items), err)
	}
	e.checkAnswers(t)
}

func mapsEqual(a, b map[string]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// frozenPods lists the node's pods' cgroups that are frozen.
func frozenPods(t *testing.T) []string {
	t.Helper()
	n, err := podcgroup.Open("/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	filepath.WalkDir(n.Freezer, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if _, ok := podcgroup.PodDirName(d.Name()); !ok {
			return nil
		}
		file, frozenValue := "freezer.state", "THAWED"
		if n.V2 {
			file, frozenValue = "cgroup.freeze", "0"
		}
		if b, err := os.ReadFile(filepath.Join(p, file)); err == nil && strings.TrimSpace(string(b)) != frozenValue {
			out = append(out, p)
		}
		return filepath.SkipDir
	})
	return out
}

// nonTargetPods are the UIDs of the pods of every service but the target.
func (e *kubeEnv) nonTargetPods(t *testing.T, target string) []string {
	var out []string
	for _, sv := range e.spec.Services {
		if sv.Name != target {
			for _, p := range e.pods(t, sv.Name) {
				out = append(out, string(p.UID))
			}
		}
	}
	return out
}

// TestKubeAgent: predict the demo, two replicas of the target and of
// another service, through the node agent: it predicts a gain for the
// bottleneck, and the application is left exactly as it was (no pod
// restarted or replaced, every pod thawed, nothing of slowpoke's left).
func TestKubeAgent(t *testing.T) {
	e := setupKube(t)
	e.agentReplicas(t)
	before := e.podState(t)
	out := t.TempDir()
	cmd := e.command("predict", "-f", demoKubeSpec, "--target", "cart", "--kube-mode", "agent", "--reduce", "0,60%",
		"--reps", "1", "--max-reps", "1", "--duration", "2s", "--warmup", "500ms", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := runWithTimeout(cmd, 6*time.Minute); err != nil {
		t.Fatalf("predict: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("predict of 2 points through the node agent took %v\n%s\n%s", time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	if !strings.Contains(stderr.String(), "node agent: DaemonSet") || !strings.Contains(stderr.String(), "for 6 pods of 4 services") {
		t.Errorf("the run did not go through the node agent with every replica:\n%s", stderr.String())
	}
	pts := predictedPoints(t, out, 2)
	if pts[1] < 1.1*pts[0] {
		t.Errorf("predicted %.0f req/s at 60%% against %.0f at 0%%: no gain predicted for the bottleneck", pts[1], pts[0])
	}
	e.checkUntouched(t, before)
}

// predictedPoints reads a predict's results.json: n points' predictions.
func predictedPoints(t *testing.T, dir string, n int) []float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Points []validatedPoint `json:"points"`
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Points) != n {
		t.Fatalf("results (%v): want %d points\n%s", err, n, b)
	}
	var out []float64
	for _, p := range res.Points {
		out = append(out, p.Predicted)
	}
	return out
}

// startAgentPredict starts a long predict through the node agent and
// waits until a slowdown is under way with every other pod in the
// agent's ledger (recorded before its first freeze); it returns the run,
// its stderr and its controllers.
func (e *kubeEnv) startAgentPredict(t *testing.T) (*exec.Cmd, *lockedBuffer, []*controller.Client) {
	t.Helper()
	cmd := e.command("predict", "-f", demoKubeSpec, "--target", "cart", "--kube-mode", "agent", "--reduce", "0,50%", "--duration", "30s", "--reps", "1", "--max-reps", "1", "--out", t.TempDir())
	stderr := startUntilEnd(t, cmd)
	ctls := e.waitControllers(t, 2*time.Minute, stderr)
	waitUntil(t, "a slowdown", 2*time.Minute, func() bool {
		st, err := ctls[1].Stats() // cart's
		return err == nil && st.Active && st.Pauses > 0
	}, stderr)
	ledgers, _ := filepath.Glob("/var/lib/slowpoke/slowpoke-ledger-*")
	var all []byte
	for _, l := range ledgers {
		b, _ := os.ReadFile(l)
		all = append(all, b...)
	}
	for _, uid := range e.nonTargetPods(t, "cart") {
		if !bytes.Contains(all, []byte("pod"+uid)) {
			t.Errorf("pod %s is not in the agent's ledger (%s): not every replica is frozen", uid, all)
		}
	}
	return cmd, stderr, ctls
}

// TestKubeAgentFaults: the orchestrator SIGKILLed mid-pause, the agent's
// pod deleted mid-pause, and the agent's process SIGKILLed mid-pause,
// $SLOWPOKE_KUBE_TRIALS times each (1 by default, in CI; issue 36's
// benchmark runs 10; $SLOWPOKE_KUBE_FAULTS may name some of sigkill,
// agent-deleted and agent-killed), in turn, each when a pod is frozen:
// after each, every pod thawed within the lease (the agent killed: within
// a second, by the agent pod's watchdog; the lease
// lapses a lease after the orchestrator's last message, before the kill;
// 1 s of slack for the polling here), nothing left frozen, `slowpoke
// restore` leaves the namespace as it was (Deployments unchanged, no
// DaemonSet, agent pod or Secret left), and no pod of the application
// restarted or replaced (the same UIDs and restart counts as before the
// first trial). It logs a table of the trials.
func TestKubeAgentFaults(t *testing.T) {
	trials := kubeEnvInt(t, "SLOWPOKE_KUBE_TRIALS", 1)
	faults := strings.Split(kubeEnvString("SLOWPOKE_KUBE_FAULTS", "sigkill,agent-deleted,agent-killed"), ",")
	for _, f := range faults {
		if f != "sigkill" && f != "agent-deleted" && f != "agent-killed" {
			t.Fatalf("$SLOWPOKE_KUBE_FAULTS: unknown fault %q: want some of sigkill, agent-deleted and agent-killed", f)
		}
	}
	e := setupKube(t)
	e.agentReplicas(t)
	before := e.podState(t)
	var rows []agentFaultTrial
	for i := 1; i <= trials; i++ {
		for _, fault := range faults {
			row := agentFaultTrial{trial: i, fault: fault}
			ok := t.Run(fmt.Sprintf("%s-%d", fault, i), func(t *testing.T) {
				switch fault {
				case "sigkill":
					e.agentSigkillTrial(t, before, &row)
				case "agent-deleted":
					e.agentDeletedTrial(t, before, &row)
				default:
					e.agentKilledTrial(t, before, &row)
				}
			})
			row.ok = ok
			rows = append(rows, row)
			if !ok {
				// Whatever the failed trial left, for the next one.
				out, err := e.command("restore", "-f", demoKubeSpec).CombinedOutput()
				t.Logf("restore after the failed trial: %v\n%s", err, out)
			}
		}
	}
	t.Logf("\n%s", agentFaultTable(rows))
}

// agentFaultTrial is one fault trial's outcome.
type agentFaultTrial struct {
	trial        int
	fault        string
	frozenAtKill int           // pod cgroups frozen at the fault
	thawed       time.Duration // from the fault until every pod thawed and stays so
	runEnded     time.Duration // agent deleted: until the run had ended, restored
	restore      time.Duration // slowpoke restore afterwards
	ok           bool
}

func agentFaultTable(rows []agentFaultTrial) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| trial | fault | frozen pods at the fault | all thawed after | within the lease (%v) | run ended after | slowpoke restore | outcome |\n|---|---|---|---|---|---|---|---|\n", kube.DefaultLease)
	for _, r := range rows {
		ended := "-"
		if r.runEnded > 0 {
			ended = fmt.Sprintf("%.1f s", r.runEnded.Seconds())
		}
		outcome := "ok"
		if !r.ok {
			outcome = "FAILED"
		}
		within := "yes"
		if r.thawed > kube.DefaultLease {
			within = "no"
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %.2f s | %s | %s | %.1f s | %s |\n", r.trial, r.fault, r.frozenAtKill, r.thawed.Seconds(), within, ended, r.restore.Seconds(), outcome)
	}
	return b.String()
}

// agentSigkillTrial: the orchestrator SIGKILLed mid-pause; its agent's
// controllers end their slowdown and thaw every pod when the lease
// lapses; `slowpoke restore` then deletes the agents.
func (e *kubeEnv) agentSigkillTrial(t *testing.T, before map[string]int32, row *agentFaultTrial) {
	cmd, stderr, ctls := e.startAgentPredict(t)
	row.frozenAtKill = waitFrozen(t)
	killed := time.Now()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	row.thawed = waitThawed(t, killed, kube.DefaultLease+5*time.Second, ctls, stderr)
	t.Logf("SIGKILL: every pod thawed %v after the kill (lease %v)", row.thawed.Round(time.Millisecond), kube.DefaultLease)
	if row.thawed > kube.DefaultLease+time.Second {
		t.Errorf("the pods thawed %v after the kill, past the lease of %v", row.thawed.Round(time.Millisecond), kube.DefaultLease)
	}
	start := time.Now()
	out, err := e.command("restore", "-f", demoKubeSpec).CombinedOutput()
	row.restore = time.Since(start)
	if err != nil || !strings.Contains(string(out), "deleted the node agents") {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	t.Logf("SIGKILL: slowpoke restore took %v:\n%s", row.restore.Round(time.Millisecond), out)
	e.checkUntouched(t, before)
}

// agentDeletedTrial: the agent's pod deleted mid-pause thaws every pod as
// it ends; the run ends naming it, having deleted the agents; `slowpoke
// restore` afterwards finds nothing to change.
func (e *kubeEnv) agentDeletedTrial(t *testing.T, before map[string]int32, row *agentFaultTrial) {
	cmd, stderr, _ := e.startAgentPredict(t)
	ns := e.spec.Kubernetes.Namespace
	agents, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelAgent})
	if err != nil || len(agents.Items) != 1 {
		t.Fatalf("the agent's pod: %v, %d found", err, len(agents.Items))
	}
	row.frozenAtKill = waitFrozen(t)
	deleted := time.Now()
	if err := e.client.CoreV1().Pods(ns).Delete(context.Background(), agents.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	row.thawed = waitThawed(t, deleted, kube.DefaultLease, nil, stderr)
	t.Logf("agent deleted: no pod frozen %v after", row.thawed.Round(time.Millisecond))
	if err := waitExit(cmd, 3*time.Minute); err == nil || !strings.Contains(stderr.String(), "node agent's pod") || !strings.Contains(stderr.String(), "deleted the node agents") {
		t.Errorf("the run after its agent was deleted: %v\n%s", err, stderr.String())
	}
	row.runEnded = time.Since(deleted)
	start := time.Now()
	out, err := e.command("restore", "-f", demoKubeSpec).CombinedOutput()
	row.restore = time.Since(start)
	if err != nil {
		t.Errorf("restore after the run: %v\n%s", err, out)
	}
	t.Logf("agent deleted: the run ended %v after; slowpoke restore then took %v:\n%s", row.runEnded.Round(time.Millisecond), row.restore.Round(time.Millisecond), out)
	e.checkUntouched(t, before)
}

// agentKilledTrial: the agent's process SIGKILLed mid-pause (as the OOM
// killer would) cannot thaw, and its freezes' caps die with it: its pod's
// watchdog thaws every pod within a second, long before the lease and the
// kubelet's restart of the agent; the run ends with an error; `slowpoke
// restore` then deletes the agents.
func (e *kubeEnv) agentKilledTrial(t *testing.T, before map[string]int32, row *agentFaultTrial) {
	cmd, stderr, _ := e.startAgentPredict(t)
	ns := e.spec.Kubernetes.Namespace
	agents, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelAgent})
	if err != nil || len(agents.Items) != 1 {
		t.Fatalf("the agent's pod: %v, %d found", err, len(agents.Items))
	}
	pid := agentProcess(t, string(agents.Items[0].UID))
	row.frozenAtKill = waitFrozen(t)
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL the agent (PID %d): %v", pid, err)
	}
	row.thawed = waitThawed(t, killed, kube.DefaultLease, nil, stderr)
	t.Logf("agent killed: every pod thawed %v after the kill", row.thawed.Round(time.Millisecond))
	if row.thawed > time.Second {
		t.Errorf("the pods thawed %v after the agent's SIGKILL: the watchdog should have within %v", row.thawed.Round(time.Millisecond), nodeagent.WatchEvery)
	}
	if err := waitExit(cmd, 3*time.Minute); err == nil {
		t.Errorf("the run whose agent was killed succeeded:\n%s", stderr.String())
	}
	row.runEnded = time.Since(killed)
	start := time.Now()
	out, err := e.command("restore", "-f", demoKubeSpec).CombinedOutput()
	row.restore = time.Since(start)
	if err != nil {
		t.Errorf("restore after the run: %v\n%s", err, out)
	}
	t.Logf("agent killed: the run ended %v after; slowpoke restore then took %v:\n%s", row.runEnded.Round(time.Millisecond), row.restore.Round(time.Millisecond), out)
	e.checkUntouched(t, before)
}

// agentProcess is the PID of the node agent (not its watchdog) in the
// agent's pod with UID uid: a process of this host (the agent shares the
// host's PID namespace) in that pod's cgroup, running `slowpoke agent
// --run`.
func agentProcess(t *testing.T, uid string) int {
	t.Helper()
	var found []int
	for deadline := time.Now().Add(30 * time.Second); len(found) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, st := range proc.All() {
			pid := st.PID
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			if bytes.HasPrefix(cmdline, []byte("/slowpoke\x00agent\x00--run\x00")) && bytes.Contains(cg, []byte(uid)) {
				found = append(found, pid)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("the agent process of pod %s: found %v, want one", uid, found)
	}
	return found[0]
}

// waitFrozen waits, up to 5 s, until a pod is frozen (the fault then
// comes mid-pause) and returns how many were.
func waitFrozen(t *testing.T) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if n := len(frozenPods(t)); n > 0 {
			return n
		}
		time.Sleep(time.Millisecond)
	}
	return 0
}

// waitThawed waits until no pod is frozen and every controller in ctls
// (if any) has ended its slowdown, and that holds for a second (a
// controller still pausing would freeze again); it returns how long after
// since that took.
func waitThawed(t *testing.T, since time.Time, timeout time.Duration, ctls []*controller.Client, log *lockedBuffer) time.Duration {
	t.Helper()
	thawed := func() bool {
		for _, c := range ctls {
			if st, err := c.Stats(); err != nil || st.Active {
				return false
			}
		}
		return len(frozenPods(t)) == 0
	}
	var at time.Time
	waitUntil(t, "every pod thawed, every slowdown ended", timeout+time.Second, func() bool {
		if !thawed() {
			at = time.Time{}
			return false
		}
		if at.IsZero() {
			at = time.Now()
		}
		return time.Since(at) >= time.Second
	}, log)
	return at.Sub(since)
}
