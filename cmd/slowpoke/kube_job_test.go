//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
)

// checkPrintedJSON checks that stdout holds, on its --print-json line, the
// results.json written to path.
func checkPrintedJSON(t *testing.T, stdout, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, printJSONPrefix); ok {
			if rest != want.String() {
				t.Errorf("--print-json printed\n%s\nwant %s compacted:\n%s", rest, path, want.String())
			}
			return
		}
	}
	t.Errorf("--print-json: no line starting %q on stdout:\n%s", printJSONPrefix, stdout)
}

// resultsFromLog takes results.json out of a log that --print-json wrote.
func resultsFromLog(t *testing.T, log string) []validatedPoint {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if rest, ok := strings.CutPrefix(line, printJSONPrefix); ok {
			var res struct {
				Points []validatedPoint `json:"points"`
			}
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				t.Fatalf("results.json in the log: %v\n%s", err, rest)
			}
			return res.Points
		}
	}
	t.Fatalf("no results.json in the log:\n%s", log)
	return nil
}

// TestKubeJob: the orchestrator as a Job in the cluster (job.yaml), as a
// ServiceAccount bound to exactly the shipped Role, on the demo with two
// replicas of cart and catalog. The Job chooses the node agent by itself
// (the Role lets it ask whether the cluster admits the agent), completes,
// and its log holds the table and results.json; the application is left
// as it was.
func TestKubeJob(t *testing.T) {
	e := setupKube(t)
	e.agentReplicas(t)
	before := e.podState(t)
	ctx := context.Background()
	ns := e.spec.Kubernetes.Namespace
	role := decodeManifests(t, demoRole)[0].(*rbacv1.Role)
	if _, err := e.client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// As `kubectl create configmap slowpoke-spec --from-file=app.yaml=...` makes it.
	specYAML, err := os.ReadFile(demoKubeSpec)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slowpoke-spec", Namespace: ns}, Data: map[string]string{"app.yaml": string(specYAML)}}
	if _, err := e.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := loadJobManifests(t)
	if _, err := e.client.CoreV1().ServiceAccounts(ns).Create(ctx, m.sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := e.client.RbacV1().RoleBindings(ns).Create(ctx, m.binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := m.job.DeepCopy()
	c := &job.Spec.Template.Spec.Containers[0]
	// Shorter than the shipped run: one repetition of shorter windows.
	c.Command = append(c.Command, "--reps", "1", "--max-reps", "1", "--duration", "2s", "--warmup", "500ms")
	// The test cluster has no kube-proxy: the API server's Service
	// address leads nowhere. The Job's pod, in the node's network, reaches
	// the API server where it listens; the in-cluster configuration
	// (the ServiceAccount's token) takes its address from these.
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	api, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: api.Hostname()}, corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: api.Port()})
	start := time.Now()
	if _, err := e.client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var done *batchv1.Job
	for deadline := time.Now().Add(8 * time.Minute); done == nil; time.Sleep(time.Second) {
		j, err := e.client.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		switch {
		case err == nil && (j.Status.Succeeded > 0 || j.Status.Failed > 0):
			done = j
		case time.Now().After(deadline):
			t.Fatalf("the Job did not end in 8 minutes (%v)\n%s", err, e.jobLog(t, job.Name))
		}
	}
	log := e.jobLog(t, job.Name)
	if done.Status.Succeeded == 0 {
		t.Fatalf("the Job failed:\n%s", log)
	}
	t.Logf("the Job predicted 3 points in %v; its log:\n%s", time.Since(start).Round(time.Second), log)
	if !strings.Contains(log, "node agent: DaemonSet") || !strings.Contains(log, "for 6 pods of 4 services") {
		t.Errorf("the Job did not choose the node agent with every replica")
	}
	if !strings.Contains(log, "predicted req/s") {
		t.Errorf("no table in the Job's log")
	}
	pts := resultsFromLog(t, log)
	if len(pts) != 3 {
		t.Fatalf("results.json in the log has %d points, want 3", len(pts))
	}
	if pts[2].Predicted < 1.1*pts[0].Predicted {
		t.Errorf("predicted %.0f req/s at 80%% against %.0f at 0%%: no gain predicted for the bottleneck", pts[2].Predicted, pts[0].Predicted)
	}
	e.checkUntouched(t, before)
}

// jobLog returns the log of the pods of Job name.
func (e *kubeEnv) jobLog(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	ns := e.spec.Kubernetes.Namespace
	pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil {
		return "(its pods: " + err.Error() + ")"
	}
	var out strings.Builder
	for _, p := range pods.Items {
		b, err := e.client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			out.WriteString("(pod " + p.Name + " " + string(p.Status.Phase) + ": " + err.Error() + ")\n")
			continue
		}
		out.Write(b)
	}
	return out.String()
}

// TestKubeRoleAgent: the shipped Role is enough for the node agent and
// for cleaning up after it: as a user holding only that Role, predict
// through the node agent, SIGKILL it mid-pause, and `slowpoke restore`
// deletes the agents and runs the pod that thaws their node; the
// application is left as it was. (TestKubeValidate runs the template mode
// with the Role, TestKubeJob the node agent's normal end.)
func TestKubeRoleAgent(t *testing.T) {
	limited := os.Getenv("SLOWPOKE_TEST_KUBECONFIG_LIMITED")
	if limited == "" {
		if os.Getenv("SLOWPOKE_REQUIRE_KUBE") != "" {
			t.Fatal("SLOWPOKE_REQUIRE_KUBE is set but SLOWPOKE_TEST_KUBECONFIG_LIMITED is not: run test/kube/e2e.sh")
		}
		t.Skip("no user without rights: set SLOWPOKE_TEST_KUBECONFIG_LIMITED (test/kube/e2e.sh does)")
	}
	e := setupKube(t)
	e.agentReplicas(t)
	before := e.podState(t)
	e.grantRole(t, "slowpoke-limited")
	e.kubeconfig = limited // slowpoke runs as that user from here on; the checks as the admin
	cmd, stderr, ctls := e.startAgentPredict(t)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitUntil(t, "every agent controller to end its slowdown and no pod frozen", kube.DefaultLease+5*time.Second, func() bool {
		for _, c := range ctls {
			if st, err := c.Stats(); err != nil || st.Active {
				return false
			}
		}
		return len(frozenPods(t)) == 0
	}, stderr)
	out, err := e.command("restore", "-f", demoKubeSpec).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "deleted the node agents") || !strings.Contains(string(out), "nothing left frozen") {
		t.Fatalf("restore with the Role: %v\n%s", err, out)
	}
	t.Logf("restore with the Role:\n%s", out)
	e.checkUntouched(t, before)
}
