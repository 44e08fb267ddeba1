//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// The Kubernetes end-to-end tests run against a real cluster, such as the
// one test/kube/e2e.sh starts: $SLOWPOKE_TEST_KUBECONFIG is its admin's
// kubeconfig, and $SLOWPOKE_TEST_KUBECONFIG_LIMITED, if set, one of a user
// without rights. Without them the tests skip, unless
// $SLOWPOKE_REQUIRE_KUBE is set (in CI), when they fail. They build on the
// end-to-end tier (build tag e2e): test/kube/e2e.sh runs them with
// -tags e2e -run TestKube.
type kubeEnv struct {
	manifests  string
	kubeconfig string
	client     kubernetes.Interface
	spec       *spec.Spec
	bin        string
	originals  map[string]*corev1.PodTemplateSpec
}

func setupKube(t *testing.T) *kubeEnv { return setupKubeApp(t, demoManifests, demoKubeSpec) }

// setupKubeApp applies manifests on the cluster and loads the spec of the
// application they deploy; the namespace is deleted when the test ends.
func setupKubeApp(t *testing.T, manifests, specPath string) *kubeEnv {
	t.Helper()
	kc := os.Getenv("SLOWPOKE_TEST_KUBECONFIG")
	if kc == "" {
		if os.Getenv("SLOWPOKE_REQUIRE_KUBE") != "" {
			t.Fatal("SLOWPOKE_REQUIRE_KUBE is set but SLOWPOKE_TEST_KUBECONFIG is not: run test/kube/e2e.sh")
		}
		t.Skip("no cluster: set SLOWPOKE_TEST_KUBECONFIG (test/kube/e2e.sh does)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(specPath)
	if err != nil {
		t.Fatal(err)
	}
	e := &kubeEnv{manifests: manifests, kubeconfig: kc, client: c, spec: s, bin: buildSlowpoke(t), originals: map[string]*corev1.PodTemplateSpec{}}
	e.apply(t)
	for _, sv := range s.Services {
		dep := e.deployment(t, sv.Name)
		e.originals[sv.Name] = dep.Spec.Template.DeepCopy()
	}
	t.Cleanup(func() {
		// Whatever a failed test left: restored, and the namespace gone.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		kube.Restore(ctx, s, c, t.Logf)
		c.CoreV1().Namespaces().Delete(ctx, s.Kubernetes.Namespace, metav1.DeleteOptions{})
	})
	return e
}

// apply creates the demo's namespace and Deployments (replacing any left
// from an earlier run) and waits until every pod is ready.
func (e *kubeEnv) apply(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range decodeManifests(t, e.manifests) {
		var err error
		switch o := obj.(type) {
		case *corev1.Namespace:
			// One an earlier test deleted may still be terminating; one
			// that lives (applied again) is kept.
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
				cur, err := e.client.CoreV1().Namespaces().Get(ctx, o.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) || (err == nil && cur.DeletionTimestamp == nil) || time.Now().After(deadline) {
					break
				}
			}
			_, err = e.client.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			e.client.CoreV1().ConfigMaps(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
			_, err = e.client.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			e.client.AppsV1().Deployments(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
			_, err = e.client.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			// One left from an earlier run is kept (as it is); a fixed
			// ClusterIP may be held a moment after its Service is gone.
			// (A Service of that name asks for its IP again: the API
			// server says "already allocated", not "already exists".)
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
				if _, err = e.client.CoreV1().Services(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{}); err == nil {
					break
				}
				_, err = e.client.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				if err == nil || !apierrors.IsInvalid(err) || time.Now().After(deadline) {
					break
				}
			}
		default:
			t.Fatalf("%s: unexpected %T", e.manifests, obj)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	e.waitReady(t, nil)
}

func (e *kubeEnv) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	dep, err := e.client.AppsV1().Deployments(e.spec.Kubernetes.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// waitReady waits until every Deployment has rolled out with its replicas
// ready (and no other pod) for which ok holds (nil: any).
func (e *kubeEnv) waitReady(t *testing.T, ok func(*corev1.Pod) bool) {
	t.Helper()
	ns := e.spec.Kubernetes.Namespace
	deadline := time.Now().Add(2 * time.Minute)
	for _, sv := range e.spec.Services {
		want := 1
		if r := e.deployment(t, sv.Name).Spec.Replicas; r != nil {
			want = int(*r)
		}
		for {
			pods, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + sv.Name})
			ready := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && (ok == nil || ok(&p)) && isReady(&p) {
					ready++
				}
			}
			if err == nil && ready == want && len(pods.Items) == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not ready: %v, %d pods", sv.Name, err, len(pods.Items))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func containerCommands(tpl *corev1.PodTemplateSpec) [][]string {
	var out [][]string
	for _, c := range tpl.Spec.Containers {
		out = append(out, c.Command)
	}
	return out
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkUnderRun asserts that every Deployment is under slowpoke and that
// the run's Secret is there.
func (e *kubeEnv) checkUnderRun(t *testing.T) {
	t.Helper()
	ns := e.spec.Kubernetes.Namespace
	for _, sv := range e.spec.Services {
		if _, ok := e.deployment(t, sv.Name).Annotations[kube.AnnotationOriginal]; !ok {
			t.Errorf("Deployment %s is no longer under slowpoke", sv.Name)
		}
	}
	secrets, err := e.client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelRun})
	if err != nil || len(secrets.Items) != 1 {
		t.Errorf("the run's Secret: %v (%d found)", err, len(secrets.Items))
	}
}

// checkRestored asserts that every Deployment has its original template
// and none of slowpoke's annotations, that no Secret of slowpoke's is
// left, and that the application answers.
func (e *kubeEnv) checkRestored(t *testing.T) {
	t.Helper()
	for _, sv := range e.spec.Services {
		dep := e.deployment(t, sv.Name)
		if !reflect.DeepEqual(&dep.Spec.Template, e.originals[sv.Name]) {
			t.Errorf("%s: the template differs from the original: its containers run %v, want %v", sv.Name, containerCommands(&dep.Spec.Template), containerCommands(e.originals[sv.Name]))
		}
		for _, a := range []string{kube.AnnotationOriginal, kube.AnnotationRun} {
			if _, ok := dep.Annotations[a]; ok {
				t.Errorf("%s: annotation %s left", sv.Name, a)
			}
		}
	}
	secrets, err := e.client.CoreV1().Secrets(e.spec.Kubernetes.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelRun})
	if err != nil || len(secrets.Items) != 0 {
		t.Errorf("slowpoke's Secrets left: %d, %v", len(secrets.Items), err)
	}
	e.waitReady(t, func(p *corev1.Pod) bool { return p.Annotations[kube.AnnotationRun] == "" })
	e.checkAnswers(t)
}

// checkAnswers asserts that the entry answers, and that no process of the
// cluster's pods on this node is stopped.
func (e *kubeEnv) checkAnswers(t *testing.T) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var c net.Conn
		if c, err = net.DialTimeout("tcp", strings.TrimPrefix(e.spec.Entry, "http://"), time.Second); err == nil {
			c.Close()
			break
		}
	}
	if err != nil {
		t.Errorf("the entry does not answer: %v", err)
	}
	for i := 0; i < 10; i++ {
		if s := stoppedPodProcesses(); len(s) > 0 && i == 9 {
			t.Errorf("pod processes stopped for a second: %v", s)
		} else if len(s) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stoppedPodProcesses lists the processes of the node's pods (in kubepods
// cgroups) that are stopped.
func stoppedPodProcesses() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cg, err := os.ReadFile("/proc/" + e.Name() + "/cgroup")
		if err != nil || !bytes.Contains(cg, []byte("kubepods")) {
			continue
		}
		if st := procState(e.Name()); st == "T" || st == "t" {
			out = append(out, e.Name())
		}
	}
	return out
}

func procState(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func (e *kubeEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig)
	return cmd
}

// TestKubeValidate: validate (which predicts too) three points of the demo
// on the cluster; the Deployments are as before afterwards. Where a user
// without rights is given, it runs as that user, granted only the Role
// that docs/kubernetes.md documents.
func TestKubeValidate(t *testing.T) {
	e := setupKube(t)
	out := t.TempDir()
	cmd := e.command("validate", "-f", demoKubeSpec, "--target", "cart", "--reduce", "0,40,80%",
		"--reps", "1", "--max-reps", "1", "--duration", "2s", "--warmup", "500ms", "--out", out)
	if limited := os.Getenv("SLOWPOKE_TEST_KUBECONFIG_LIMITED"); limited != "" {
		e.grantRole(t, "slowpoke-limited")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+limited)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := runWithTimeout(cmd, 8*time.Minute); err != nil {
		t.Fatalf("validate: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("validate of 3 points took %v\n%s", time.Since(start).Round(time.Second), stdout.String())
	points := validatedPoints(t, out, "cart", 3)
	// Generous: the truth at 80% is well above the baseline (cart is the
	// bottleneck), and so must the prediction be.
	if last := points[len(points)-1]; last.Predicted < 1.2*points[0].Predicted {
		t.Errorf("predicted %.0f req/s at 80%% against %.0f at 0%%: no gain predicted", last.Predicted, points[0].Predicted)
	}
	if !strings.Contains(stderr.String(), "restored 4 Deployments") {
		t.Errorf("no restore reported:\n%s", stderr.String())
	}
	e.checkRestored(t)
}

// TestKubeCPUTrigger: rounds that follow the target's CPU time work in a
// pod as on this machine: the controller in cart's pod reads the CPU of
// the processes it started there, and the prediction shows cart's gain.
func TestKubeCPUTrigger(t *testing.T) {
	e := setupKube(t)
	out := t.TempDir()
	cmd := e.command("predict", "-f", demoKubeSpec, "--target", "cart", "--kube-mode", "template", "--reduce", "0,80%", "--trigger", "cpu",
		// Two runs a point: one 2 s run disturbed by a neighbour moved a
		// point by more than the true gain (an 80% point once came out
		// below the 0% one), and the test asks for the direction only.
		"--reps", "2", "--max-reps", "2", "--duration", "2s", "--warmup", "500ms", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runWithTimeout(cmd, 8*time.Minute); err != nil {
		t.Fatalf("predict: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var res struct {
		Trigger string `json:"trigger"`
		Points  []struct {
			Predicted float64 `json:"predicted_rps"`
		} `json:"points"`
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Points) != 2 {
		t.Fatalf("results (%v): want 2 points\n%s", err, b)
	}
	if res.Trigger != "cpu" {
		t.Errorf("trigger %q, want cpu", res.Trigger)
	}
	if res.Points[1].Predicted < 1.2*res.Points[0].Predicted {
		t.Errorf("predicted %.0f req/s at 80%% against %.0f at 0%%: no gain predicted\n%s", res.Points[1].Predicted, res.Points[0].Predicted, stderr.String())
	}
	e.checkRestored(t)
}

type validatedPoint struct {
	Predicted float64  `json:"predicted_rps"`
	True      *float64 `json:"true_rps"`
}

// validatedPoints reads the results.json of a validate of target in dir
// and checks that it has n points, each with a prediction and a truth.
func validatedPoints(t *testing.T, dir, target string, n int) []validatedPoint {
	t.Helper()
	var res struct {
		Target string           `json:"target"`
		Points []validatedPoint `json:"points"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Target != target || len(res.Points) != n {
		t.Fatalf("results (%v): want %d points for %s\n%s", err, n, target, b)
	}
	for _, p := range res.Points {
		if p.Predicted <= 0 || p.True == nil || *p.True <= 0 {
			t.Errorf("point %+v: want a prediction and a truth", p)
		}
	}
	return res.Points
}

// TestKubePodNetwork: validate a service on the pod network, whose
// controller is reached at its pod's IP, a new one after every rollout
// (slowpoke's own, and each ground truth's).
func TestKubePodNetwork(t *testing.T) {
	const dir = "testdata/kube-podnet"
	e := setupKubeApp(t, filepath.Join(dir, "deployments.yaml"), filepath.Join(dir, "app.yaml"))
	before, err := e.client.CoreV1().Pods(e.spec.Kubernetes.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=solo"})
	if err != nil || len(before.Items) != 1 || before.Items[0].Spec.HostNetwork || before.Items[0].Status.PodIP == "" {
		t.Fatalf("want one pod on the pod network: %v", err)
	}
	out := t.TempDir()
	cmd := e.command("validate", "-f", filepath.Join(dir, "app.yaml"), "--target", "solo", "--reduce", "0,50%",
		"--reps", "1", "--max-reps", "1", "--duration", "1s", "--warmup", "500ms", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runWithTimeout(cmd, 5*time.Minute); err != nil {
		t.Fatalf("validate: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("pod IP %s before the run\n%s", before.Items[0].Status.PodIP, stdout.String())
	validatedPoints(t, out, "solo", 2)
	e.checkRestored(t)
}

// TestKubeFaults: the orchestrator SIGKILLed mid-slowdown leaves no pod
// paused past the lease, and `slowpoke restore` puts the Deployments back;
// Ctrl-C and a pod deleted mid-run end the run restored, the latter naming
// the service; a user without rights gets an error naming what is missing.
func TestKubeFaults(t *testing.T) {
	e := setupKube(t)
	t.Run("sigkill", func(t *testing.T) {
		cmd, stderr, ctls := e.startPredict(t)
		// Wait for a slowdown to be under way (the first window has no
		// slowdown), then kill.
		waitUntil(t, "a slowdown", 2*time.Minute, func() bool {
			for _, c := range ctls {
				if st, err := c.Stats(); err == nil && st.Active {
					return true
				}
			}
			return false
		}, stderr)
		cmd.Process.Signal(syscall.SIGKILL)
		killed := time.Now()
		cmd.Wait()
		waitUntil(t, "every controller to end its slowdown", kube.DefaultLease+10*time.Second, func() bool {
			for _, c := range ctls {
				if st, err := c.Stats(); err != nil || st.Active {
					return false
				}
			}
			return true
		}, stderr)
		t.Logf("SIGKILL: every slowdown ended %v after the kill (lease %v)", time.Since(killed).Round(time.Millisecond), kube.DefaultLease)
		e.checkAnswers(t)
		// A new run refuses the Deployments and says how to restore.
		out, err := e.command("predict", "-f", demoKubeSpec, "--target", "cart", "--kube-mode", "template", "--reduce", "50%", "--out", t.TempDir()).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "slowpoke restore") {
			t.Errorf("a run over a killed run's Deployments: %v\n%s", err, out)
		}
		start := time.Now()
		if out, err := e.command("restore", "-f", demoKubeSpec).CombinedOutput(); err != nil {
			t.Fatalf("restore: %v\n%s", err, out)
		}
		t.Logf("SIGKILL: slowpoke restore took %v", time.Since(start).Round(time.Millisecond))
		e.checkRestored(t)
	})
	t.Run("interrupt", func(t *testing.T) {
		cmd, stderr, ctls := e.startPredict(t)
		// `slowpoke restore` beside a live run leaves it alone and says
		// so; the run goes on.
		out, err := e.command("restore", "-f", demoKubeSpec).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "still runs") {
			t.Errorf("restore beside a live run: %v\n%s", err, out)
		}
		e.checkUnderRun(t)
		if _, err := ctls[0].Stats(); err != nil {
			t.Errorf("the run's controller after restore beside it: %v\n%s", err, stderr.String())
		}
		cmd.Process.Signal(os.Interrupt)
		start := time.Now()
		if err := waitExit(cmd, 3*time.Minute); err == nil || !strings.Contains(stderr.String(), "restored 4 Deployments") {
			t.Errorf("interrupted: %v\n%s", err, stderr.String())
		}
		t.Logf("Ctrl-C: restored and exited %v after the signal", time.Since(start).Round(time.Millisecond))
		e.checkRestored(t)
	})
	t.Run("pod-deleted", func(t *testing.T) {
		cmd, stderr, _ := e.startPredict(t)
		ns := e.spec.Kubernetes.Namespace
		pods, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=catalog"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("catalog's pod: %v", err)
		}
		for _, p := range pods.Items {
			e.client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{})
		}
		start := time.Now()
		if err := waitExit(cmd, 3*time.Minute); err == nil || !strings.Contains(stderr.String(), `service "catalog"`) {
			t.Errorf("a deleted pod: %v\n%s", err, stderr.String())
		}
		t.Logf("pod deleted: the run ended, restored, %v after", time.Since(start).Round(time.Millisecond))
		e.checkRestored(t)
	})
	t.Run("no-permission", func(t *testing.T) {
		limited := os.Getenv("SLOWPOKE_TEST_KUBECONFIG_LIMITED")
		if limited == "" {
			t.Skip("no SLOWPOKE_TEST_KUBECONFIG_LIMITED")
		}
		cmd := exec.Command(e.bin, "predict", "-f", demoKubeSpec, "--target", "cart", "--reduce", "50%")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+limited)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "permission denied") || !strings.Contains(string(out), "get deployments") {
			t.Errorf("without rights: %v\n%s", err, out)
		}
		e.checkRestored(t)
	})
}

// grantRole creates the documented Role and binds it to user until the
// test ends.
func (e *kubeEnv) grantRole(t *testing.T, user string) {
	t.Helper()
	role := decodeManifests(t, demoRole)[0].(*rbacv1.Role)
	ctx := context.Background()
	ns := e.spec.Kubernetes.Namespace
	if _, err := e.client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "slowpoke-test"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := e.client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.client.RbacV1().RoleBindings(ns).Delete(context.Background(), rb.Name, metav1.DeleteOptions{})
		e.client.RbacV1().Roles(ns).Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
}

// startUntilEnd starts cmd with its stderr in the buffer it returns, and
// kills it when the test ends if it has not ended before.
func startUntilEnd(t *testing.T, cmd *exec.Cmd) *lockedBuffer {
	t.Helper()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return stderr
}

// startPredict starts a long predict of the demo on the cluster, waits
// until its services are under their controllers, and returns it, its
// standard error and clients for the controllers. The run is killed when
// the test ends, if it has not ended before.
func (e *kubeEnv) startPredict(t *testing.T) (*exec.Cmd, *lockedBuffer, []*controller.Client) {
	t.Helper()
	// The template mode's faults: the node agent's are TestKubeAgentFaults.
	cmd := e.command("predict", "-f", demoKubeSpec, "--target", "cart", "--kube-mode", "template", "--reduce", "0,50%", "--duration", "30s", "--reps", "1", "--max-reps", "1", "--out", t.TempDir())
	stderr := startUntilEnd(t, cmd)
	return cmd, stderr, e.waitControllers(t, 2*time.Minute, stderr)
}

// waitControllers waits until the run's services are under their
// controllers, then returns clients for the run's controllers, found through its Secret.
func (e *kubeEnv) waitControllers(t *testing.T, timeout time.Duration, log *lockedBuffer) []*controller.Client {
	t.Helper()
	// Logged once every service runs under its controller.
	waitUntil(t, "the run to start", timeout, func() bool { return strings.Contains(log.String(), "placement:") }, log)
	ns := e.spec.Kubernetes.Namespace
	secrets, err := e.client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelRun})
	if err != nil || len(secrets.Items) != 1 {
		t.Fatalf("the run's Secret: %v (%d found)", err, len(secrets.Items))
	}
	secret, err := hex.DecodeString(string(secrets.Items[0].Data["secret"]))
	if err != nil {
		t.Fatal(err)
	}
	var out []*controller.Client
	for i := range e.spec.Services {
		// The demo's pods use the host's network: the node's address.
		out = append(out, controller.NewClient(fmt.Sprintf("10.255.255.1:%d", e.spec.Kubernetes.ControlPort+i), secret))
	}
	return out
}

func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool, log *lockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, log.String())
		}
	}
}
