//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
)

// The multi-node tests run on the cluster test/kube/multinode.sh starts
// (test/kube/multinode-e2e.sh runs them): $SLOWPOKE_TEST_MULTINODE is its
// directory (DIR/kubeconfig, DIR/nodes). Without it they skip, unless
// $SLOWPOKE_REQUIRE_MULTINODE is set, when they fail. They are apart from
// $SLOWPOKE_TEST_KUBECONFIG's single-node cluster: test/kube/e2e.sh's
// -run TestKube selects them too, and they skip there.

// mnNode is one node of the multi-node cluster, as DIR/nodes lists it.
type mnNode struct {
	name, netns, ip, podCIDR, containerd string
}

type mnEnv struct {
	dir    string
	client kubernetes.Interface
	nodes  []mnNode
}

func setupMultiNode(t *testing.T) *mnEnv {
	t.Helper()
	dir := os.Getenv("SLOWPOKE_TEST_MULTINODE")
	if dir == "" {
		if os.Getenv("SLOWPOKE_REQUIRE_MULTINODE") != "" {
			t.Fatal("SLOWPOKE_REQUIRE_MULTINODE is set but SLOWPOKE_TEST_MULTINODE is not: run test/kube/multinode-e2e.sh")
		}
		t.Skip("no multi-node cluster: set SLOWPOKE_TEST_MULTINODE (test/kube/multinode-e2e.sh does)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "nodes"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := &mnEnv{dir: dir, client: c}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		w := strings.Fields(sc.Text())
		if len(w) != 5 {
			t.Fatalf("%s/nodes: bad line %q", dir, sc.Text())
		}
		e.nodes = append(e.nodes, mnNode{w[0], w[1], w[2], w[3], w[4]})
	}
	if len(e.nodes) < 2 {
		t.Fatalf("%s/nodes lists %d nodes, want at least 2", dir, len(e.nodes))
	}
	return e
}

// namespace makes a namespace for the test, deleted (and waited for) when
// it ends.
func (e *mnEnv) namespace(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(300 * time.Millisecond) {
		_, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsAlreadyExists(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		e.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		for ctx.Err() == nil {
			if _, err := e.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
		t.Errorf("namespace %s not gone after 2 minutes", name)
	})
}

// whoami deploys n replicas of test/kube/whoami spread over the nodes
// (one more on a node than on another at most) and a ClusterIP Service
// in front of them, and returns the running pods once all are ready.
func (e *mnEnv) whoami(t *testing.T, ns string, n int32) ([]corev1.Pod, *corev1.Service) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "whoami"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "whoami", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
				TerminationGracePeriodSeconds: ptrTo(int64(1)),
				Containers: []corev1.Container{{Name: "whoami", Image: "slowpoke.local/pause:dev", ImagePullPolicy: corev1.PullNever,
					Command: []string{"/whoami", ":8080"}, Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}}},
			}}},
	}
	if _, err := e.client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "whoami", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	svc, err := e.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		list, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=whoami"})
		if err != nil {
			t.Fatal(err)
		}
		var ready []corev1.Pod
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) && p.Status.PodIP != "" {
				ready = append(ready, p)
			}
		}
		if int32(len(ready)) == n {
			return ready, svc
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d whoami pods ready after 2 minutes", len(ready), n)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podCgroup is the pod's freezer cgroup under its node's kubelet cgroup
// root (/slowpoke-n<i>), or fails: each node's pods are under its own.
func (e *mnEnv) podCgroup(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	for i, n := range e.nodes {
		root := fmt.Sprintf("/sys/fs/cgroup/freezer/slowpoke-n%d/kubepods", i+1)
		var found string
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "pod"+string(p.UID) {
				found = path
				return filepath.SkipAll
			}
			return nil
		})
		if found == "" {
			continue
		}
		if n.name != p.Spec.NodeName {
			t.Fatalf("pod %s runs on %s but its cgroup is under %s's root: %s", p.Name, p.Spec.NodeName, n.name, found)
		}
		return found
	}
	t.Fatalf("pod %s (%s, on %s): no cgroup under any node's cgroup root", p.Name, p.UID, p.Spec.NodeName)
	return ""
}

// inPod runs curl in the pod's network namespace (that of any of its
// processes) and returns what it printed.
func (e *mnEnv) inPod(t *testing.T, p *corev1.Pod, url string) (string, error) {
	t.Helper()
	cg := e.podCgroup(t, p)
	var pid string
	filepath.WalkDir(cg, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "cgroup.procs" {
			return nil
		}
		if b, _ := os.ReadFile(path); len(strings.Fields(string(b))) > 0 {
			pid = strings.Fields(string(b))[0]
			return filepath.SkipAll
		}
		return nil
	})
	if pid == "" {
		t.Fatalf("pod %s: no process in %s", p.Name, cg)
	}
	out, err := exec.Command("nsenter", "--net=/proc/"+pid+"/ns/net", "curl", "-sS", "-m", "3", url).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestKubeMultiNode checks the multi-node cluster itself: replicas land
// on every node, each node's pods in its own kubelet cgroup root, a pod
// reaches a pod of every other node by its IP, and a ClusterIP Service
// (kube-proxy on every node) spreads calls over replicas on every node.
func TestKubeMultiNode(t *testing.T) {
	e := setupMultiNode(t)
	const ns = "slowpoke-multinode"
	e.namespace(t, ns)
	replicas := int32(2 * len(e.nodes))
	pods, svc := e.whoami(t, ns, replicas)
	byNode := map[string][]corev1.Pod{}
	nodeOf := map[string]string{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		nodeOf[p.Name] = p.Spec.NodeName
		e.podCgroup(t, &p)
	}
	for _, n := range e.nodes {
		if len(byNode[n.name]) == 0 {
			t.Fatalf("no whoami pod on node %s: %v", n.name, nodeOf)
		}
	}
	// Pod to pod by IP, across every pair of nodes.
	for _, a := range e.nodes {
		for _, b := range e.nodes {
			if a.name == b.name {
				continue
			}
			from, to := byNode[a.name][0], byNode[b.name][0]
			start := time.Now()
			out, err := e.inPod(t, &from, "http://"+to.Status.PodIP+":8080/")
			if err != nil || out != to.Name {
				t.Fatalf("pod %s on %s calling pod %s on %s at %s: %q, %v", from.Name, a.name, to.Name, b.name, to.Status.PodIP, out, err)
			}
			t.Logf("pod %s (%s, %s) -> pod %s (%s, %s): answered in %v", from.Name, a.name, from.Status.PodIP, to.Name, b.name, to.Status.PodIP, time.Since(start).Round(time.Millisecond))
		}
	}
	// The Service, from a pod of each node: kube-proxy may need a moment
	// to program the Service after its endpoints are ready.
	url := fmt.Sprintf("http://%s:80/", svc.Spec.ClusterIP)
	for _, n := range e.nodes {
		from := byNode[n.name][0]
		answered := map[string]int{}
		for deadline := time.Now().Add(30 * time.Second); len(answered) < len(pods); {
			out, err := e.inPod(t, &from, url)
			if err == nil {
				if _, ok := nodeOf[out]; !ok {
					t.Fatalf("the Service answered %q, not a whoami pod's name", out)
				}
				answered[out]++
			}
			if time.Now().After(deadline) {
				break
			}
		}
		nodes := map[string]bool{}
		for name := range answered {
			nodes[nodeOf[name]] = true
		}
		t.Logf("from %s on %s, Service %s: calls answered by %v", from.Name, n.name, url, answered)
		if len(nodes) != len(e.nodes) {
			t.Fatalf("from %s on %s, Service %s answered only from nodes %v: %v", from.Name, n.name, url, nodes, answered)
		}
	}
}

// TestKubeMultiNodeAgent: predict an application whose services run on
// two nodes (testdata/kube-multinode) through the node agents: the
// target's (cart, on slowpoke-n2) freezes catalog on its node and has
// slowpoke-n1's agent freeze frontend, at every round; the run reports the
// skew between the nodes' freezes and leaves the application as it was.
// Then the same application with every service on slowpoke-n1: one agent,
// no rounds across nodes, as on a single-node cluster.
func TestKubeMultiNodeAgent(t *testing.T) {
	m := setupMultiNode(t)
	t.Setenv("SLOWPOKE_TEST_KUBECONFIG", filepath.Join(m.dir, "kubeconfig"))
	var spread, one []float64
	t.Run("spread", func(t *testing.T) {
		stderr, pts := m.agentPredict(t, false)
		spread = pts
		if !strings.Contains(stderr, "run on 2 nodes (slowpoke-n1, slowpoke-n2)") {
			t.Errorf("the run does not say it spans both nodes")
		}
		// Every round froze frontend on slowpoke-n1 through its agent,
		// which reported when: the skew is logged.
		sk := regexp.MustCompile(`round skew across nodes, cart as the target, node slowpoke-n1: (\d+) rounds \((\d+) unreported, (\d+) ended by the node's cap\); freeze start p50 (\S+), p99 (\S+), max (\S+);`).FindStringSubmatch(stderr)
		if sk == nil {
			t.Fatalf("no skew across nodes reported for slowpoke-n1")
		}
		rounds, _ := strconv.Atoi(sk[1])
		unreported, _ := strconv.Atoi(sk[2])
		if rounds < 10 || unreported > rounds/10 {
			t.Errorf("slowpoke-n1 reported %d rounds, %d not: want at least 10, and at most a tenth unreported", rounds, unreported)
		}
		p50, _ := time.ParseDuration(sk[4])
		t.Logf("skew across nodes: %d rounds, freeze start p50 %s, p99 %s, max %s", rounds, sk[4], sk[5], sk[6])
		if p50 > 5*time.Millisecond {
			t.Errorf("freeze start skew p50 %v: above 5 ms", p50)
		}
	})
	t.Run("one node", func(t *testing.T) {
		stderr, pts := m.agentPredict(t, true)
		one = pts
		if !strings.Contains(stderr, "DaemonSet slowpoke-multinode-app/slowpoke-agent-") || strings.Contains(stderr, "nodes (") || strings.Contains(stderr, "round skew") {
			t.Errorf("the run on one node went otherwise than through one agent")
		}
	})
	// How far the two placements' predictions are apart is step 3's
	// question (issue 44); logged here.
	t.Logf("predicted req/s at 0%% and 50%%: spread over two nodes %.0f; on one node %.0f", spread, one)
}

// agentPredict applies testdata/kube-multinode (every service moved to
// slowpoke-n1 if oneNode), predicts cart's 0 and 50% through the node
// agents, checks the application is left as it was, and returns predict's
// stderr and its two predictions.
func (m *mnEnv) agentPredict(t *testing.T, oneNode bool) (string, []float64) {
	t.Helper()
	const dir = "testdata/kube-multinode"
	tmp := t.TempDir()
	for _, f := range []string{"app.yaml", "deployments.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if oneNode {
			b = []byte(strings.NewReplacer("slowpoke-n2", "slowpoke-n1", "10.255.0.12", "10.255.0.11").Replace(string(b)))
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := filepath.Join(tmp, "app.yaml")
	e := setupKubeApp(t, filepath.Join(tmp, "deployments.yaml"), spec)
	before := e.podState(t)
	out := t.TempDir()
	cmd := e.command("predict", "-f", spec, "--target", "cart", "--kube-mode", "agent", "--reduce", "0,50%",
		"--reps", "1", "--max-reps", "1", "--duration", "3s", "--warmup", "500ms", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := runWithTimeout(cmd, 6*time.Minute); err != nil {
		t.Fatalf("predict: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("predict of 2 points took %v\n%s\n%s", time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	pts := predictedPoints(t, out, 2)
	e.checkUntouched(t, before)
	return stderr.String(), pts
}

// TestKubeMultiNodeAgentPartition: the network between the nodes cut
// mid-pause (slowpoke-n1's veth to the bridge set down): frontend, frozen
// on slowpoke-n1 by its agent for cart's rounds on slowpoke-n2, thaws
// within the cap (its agent's own timer) and is not frozen again; the run
// ends with an error; once the network is back, restore finds nothing to
// change and no pod of the application restarted. $SLOWPOKE_MULTINODE_FAULT_TRIALS
// trials (1 by default), subtests trial-i, as TestKubeMultiNodeFaults.
func TestKubeMultiNodeAgentPartition(t *testing.T) {
	m := setupMultiNode(t)
	t.Setenv("SLOWPOKE_TEST_KUBECONFIG", filepath.Join(m.dir, "kubeconfig"))
	const dir = "testdata/kube-multinode"
	spec := filepath.Join(dir, "app.yaml")
	e := setupKubeApp(t, filepath.Join(dir, "deployments.yaml"), spec)
	trials := faultTrials(t)
	flog := newFaultLog(t)
	for i := 1; i <= trials; i++ {
		t.Run(fmt.Sprintf("trial-%d", i), func(t *testing.T) {
			r := flog.trial(t, "partition", i)
			before := e.podState(t)
			list, err := e.client.CoreV1().Pods("slowpoke-multinode-app").List(context.Background(), metav1.ListOptions{LabelSelector: "app=frontend"})
			if err != nil || len(list.Items) != 1 {
				t.Fatalf("frontend's pods: %v, %v", list, err)
			}
			state := filepath.Join(m.podCgroup(t, &list.Items[0]), "freezer.state")
			frozen := func() bool { b, _ := os.ReadFile(state); return strings.TrimSpace(string(b)) != "THAWED" }

			const maxPause = 300 * time.Millisecond
			cmd := e.command("predict", "-f", spec, "--target", "cart", "--kube-mode", "agent", "--reduce", "50%",
				"--duration", "60s", "--reps", "1", "--max-reps", "1", "--max-pause", maxPause.String(), "--out", t.TempDir())
			stderr := &lockedBuffer{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var runErr error
			exited := make(chan struct{})
			go func() { runErr = cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				select {
				case <-exited:
				default:
					cmd.Process.Kill()
					<-exited
				}
			})
			waitUntil(t, "frontend frozen on slowpoke-n1 by cart's rounds", 2*time.Minute, frozen, stderr)
			r.Frozen, r.BoundS = 1, maxPause.Seconds()
			link := "spmn-v1"
			if out, err := exec.Command("ip", "link", "set", link, "down").CombinedOutput(); err != nil {
				t.Fatalf("ip link set %s down: %v %s", link, err, out)
			}
			cut := time.Now()
			up := func() { exec.Command("ip", "link", "set", link, "up").Run() }
			t.Cleanup(up)
			waitUntil(t, "frontend thawed after the cut", 5*time.Second, func() bool { return !frozen() }, stderr)
			thawed := time.Since(cut)
			r.ThawedS, r.Within = thawed.Seconds(), thawed <= maxPause+200*time.Millisecond
			t.Logf("network cut mid-pause: frontend thawed %v after the cut (cap %v)", thawed.Round(time.Millisecond), maxPause)
			if thawed > maxPause+200*time.Millisecond {
				t.Errorf("frontend thawed %v after the cut: over its cap %v", thawed, maxPause)
			}
			for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if frozen() {
					t.Fatal("frontend frozen again with the network cut")
				}
			}
			// The partition lasts past the lease (10 s), then heals: the target's
			// agent has lost slowpoke-n1's by then, and the run ends with an
			// error once it can tear down (slowpoke-n1's kubelet must reach the
			// API server for its agent's pod to go).
			time.Sleep(15 * time.Second)
			up()
			select {
			case <-exited:
			case <-time.After(3 * time.Minute):
				t.Fatalf("predict still runs 3 minutes after the network came back\n%s", stderr.String())
			}
			ended := time.Since(cut)
			if runErr == nil {
				t.Errorf("predict succeeded with the network cut\n%s", stderr.String())
			}
			last := strings.TrimSpace(stderr.String())
			if i := strings.LastIndex(last, "\n"); i >= 0 {
				last = last[i+1:]
			}
			r.RunError, r.NamesNode = last, strings.Contains(last, "slowpoke-n1")
			t.Logf("the run ended %v after the cut: %s", ended.Round(time.Second), last)
			if !r.NamesNode {
				t.Errorf("the run's error does not name the node slowpoke-n1:\n%s", stderr.String())
			}
			// The network back: nothing left to restore, nothing frozen, no pod
			// restarted.
			waitUntil(t, "slowpoke-n1 reachable again", time.Minute, func() bool {
				c, err := net.DialTimeout("tcp", "10.255.0.11:10250", time.Second) // its kubelet
				if err == nil {
					c.Close()
				}
				return err == nil
			}, stderr)
			out, err := e.command("restore", "-f", spec).CombinedOutput()
			t.Logf("restore: %v\n%s", err, out)
			r.Restore = restoreSummary(string(out))
			if err != nil {
				t.Errorf("restore after the partition: %v", err)
			}
			if frozen() {
				t.Error("frontend frozen after the run")
			}
			r.Restarted = podsRestarted(before, e.podState(t))
			e.checkUntouched(t, before)

		})
	}
}

// The demo spread over the multi-node cluster (TestKubeMultiNodeDemo and
// test/kube/multinode-pairs.sh).
const (
	mnDemoDir  = "testdata/kube-multinode-demo"
	mnDemoSpec = mnDemoDir + "/app.yaml"
)

// TestKubeMultiNodeDemo: predict the demo with cart, the target, as two
// replicas on both nodes behind a ClusterIP Service, through the node
// agents, nothing rolled out: cart's CPU is summed over both replicas
// (both work, and its CPU per call is not one replica's share), the other
// services' pods are frozen in rounds on both nodes (the other node's
// agent reporting when: the skew), every pod is thawed after, no pod
// restarted, and `slowpoke restore` finds nothing to change. Its
// prediction goes the right way (a faster cart, more requests); how close
// it is, is test/kube/multinode-pairs.sh's question.
func TestKubeMultiNodeDemo(t *testing.T) {
	m := setupMultiNode(t)
	t.Setenv("SLOWPOKE_TEST_KUBECONFIG", filepath.Join(m.dir, "kubeconfig"))
	e := setupKubeApp(t, filepath.Join(mnDemoDir, "deployments.yaml"), mnDemoSpec)
	carts := e.pods(t, "cart")
	if len(carts) != 2 || carts[0].Spec.NodeName == carts[1].Spec.NodeName {
		t.Fatalf("cart's replicas: %d, want 2 on two nodes", len(carts))
	}
	cpu := func(p *corev1.Pod) time.Duration {
		b, err := os.ReadFile(filepath.Join(strings.Replace(m.podCgroup(t, p), "/freezer/", "/cpuacct/", 1), "cpuacct.usage"))
		if err != nil {
			t.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(ns)
	}
	// Every other service's pods, by node: each seen frozen at least once
	// (a poll every 2 ms during the run).
	others := map[string][]string{} // node: freezer.state files
	for _, sv := range []string{"frontend", "catalog", "currency"} {
		for _, p := range e.pods(t, sv) {
			others[p.Spec.NodeName] = append(others[p.Spec.NodeName], filepath.Join(m.podCgroup(t, &p), "freezer.state"))
		}
	}
	if len(others) != 2 {
		t.Fatalf("the other services run on %d nodes, want 2", len(others))
	}
	before := e.podState(t)
	cpu0 := []time.Duration{cpu(&carts[0]), cpu(&carts[1])}

	out := t.TempDir()
	cmd := e.command("predict", "-f", mnDemoSpec, "--target", "cart", "--kube-mode", "agent", "--reduce", "0,50%",
		"--reps", "1", "--max-reps", "1", "--duration", "3s", "--warmup", "500ms", "--out", out)
	var stdout bytes.Buffer
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	frozenOn := map[string]int{}
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			for node, files := range others {
				for _, f := range files {
					if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) != "THAWED" {
						frozenOn[node]++
					}
				}
			}
		}
	}()
	start := time.Now()
	err := runWithTimeout(cmd, 6*time.Minute)
	close(stop)
	<-polled
	if err != nil {
		t.Fatalf("predict: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("predict of 2 points took %v\n%s\n%s", time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	stderrText := stderr.String()

	// Both replicas worked, and cart's CPU is theirs summed.
	used := []time.Duration{cpu(&carts[0]) - cpu0[0], cpu(&carts[1]) - cpu0[1]}
	t.Logf("cart's replicas used %v (%s) and %v (%s) during the run", used[0].Round(time.Millisecond), carts[0].Spec.NodeName, used[1].Round(time.Millisecond), carts[1].Spec.NodeName)
	for i, u := range used {
		if u < (used[0]+used[1])/10 {
			t.Errorf("cart's replica on %s used %v of %v: the Service did not spread the calls", carts[i].Spec.NodeName, u, used[0]+used[1])
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		U1US   float64          `json:"u1_us"`
		Q1     float64          `json:"q1"`
		Points []validatedPoint `json:"points"`
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Points) != 2 {
		t.Fatalf("results (%v): want 2 points\n%s", err, b)
	}
	// cart's work is 1200 µs of CPU a call: one replica's share of it
	// (the other's CPU not summed) would be well under.
	t.Logf("cart: %.0f µs of CPU per call, q1 %.2f cores", res.U1US, res.Q1)
	if res.U1US < 0.75*1200 {
		t.Errorf("cart's CPU per call %.0f µs, under its work (1200 µs): not summed over its replicas?", res.U1US)
	}
	if !strings.Contains(stderrText, "run on 2 nodes (slowpoke-n1, slowpoke-n2)") {
		t.Errorf("the run does not say it spans both nodes")
	}
	// Rounds froze the other services on both nodes; the node of cart's
	// controller's other reported when.
	t.Logf("polls that found another service's pod frozen, by node: %v", frozenOn)
	for node := range others {
		if frozenOn[node] == 0 {
			t.Errorf("no pod seen frozen on %s during the run", node)
		}
	}
	for _, m := range regexp.MustCompile(`round skew across nodes, (\S+) as the target`).FindAllStringSubmatch(stderrText, -1) {
		if m[1] != "cart" {
			t.Errorf("skew reported with %s as the target: cart is", m[1])
		}
	}
	sk := regexp.MustCompile(`round skew across nodes, cart as the target, node (slowpoke-n\d): (\d+) rounds \((\d+) unreported`).FindStringSubmatch(stderrText)
	if sk == nil {
		t.Fatalf("no skew across nodes reported")
	}
	if rounds, _ := strconv.Atoi(sk[2]); rounds < 10 {
		t.Errorf("%s reported %d rounds, want at least 10", sk[1], rounds)
	}
	// Direction only: cart is the bottleneck, so a faster cart serves
	// more requests. (Not by a margin: the spread prediction at 50% is
	// systematically low, about +10-20% here against a truth of +40-60%,
	// docs/notes/multinode.md, and the 0% point itself moved +7% from
	// the baseline in a CI run, so a 10% margin failed on noise.)
	if p0, p50 := res.Points[0].Predicted, res.Points[1].Predicted; p50 <= p0 {
		t.Errorf("predicted %.0f req/s at 50%% against %.0f at 0%%: no gain", p50, p0)
	}
	e.checkUntouched(t, before)
	rout, err := e.command("restore", "-f", mnDemoSpec).CombinedOutput()
	if err != nil || !strings.Contains(string(rout), "nothing to restore") {
		t.Errorf("restore after the run: %v\n%s", err, rout)
	}
}

// TestKubeMultiNodeFaults: faults across nodes on the spread demo,
// $SLOWPOKE_MULTINODE_FAULT_TRIALS trials each (1 by default; subtests
// fault/trial-i, a summary in $SLOWPOKE_MULTINODE_FAULT_OUT: see
// kube_multinode_faultlog_test.go) (issue 44's step 4), each mid-pause, with other services'
// pods frozen on both nodes: slowpoke-n1's agent SIGKILLed (its
// watchdog thaws its node's pods, the target's rounds lose that node);
// the orchestrator SIGKILLed (every agent's lease lapses); a pod of cart,
// the target, deleted (its Deployment makes another, on the node the
// scheduler picks). After each, every pod is thawed within the lease, the
// run (where it lives on) ends with an error naming the node, `slowpoke
// restore` leaves nothing to change (the agents it deletes aside), and no
// pod of the application restarted (the deleted one replaced, no other).
func TestKubeMultiNodeFaults(t *testing.T) {
	m := setupMultiNode(t)
	t.Setenv("SLOWPOKE_TEST_KUBECONFIG", filepath.Join(m.dir, "kubeconfig"))
	e := setupKubeApp(t, filepath.Join(mnDemoDir, "deployments.yaml"), mnDemoSpec)
	ns := e.spec.Kubernetes.Namespace
	lastLine := func(s string) string {
		s = strings.TrimSpace(s)
		return s[strings.LastIndex(s, "\n")+1:]
	}
	restore := func(t *testing.T) string {
		t.Helper()
		out, err := e.command("restore", "-f", mnDemoSpec).CombinedOutput()
		if err != nil {
			t.Errorf("restore: %v\n%s", err, out)
		}
		return string(out)
	}
	trials := faultTrials(t)
	flog := newFaultLog(t)
	// each runs fault's trials, subtests fault/trial-i.
	each := func(fault string, trial func(t *testing.T, r *mnFaultTrial)) {
		t.Run(fault, func(t *testing.T) {
			for i := 1; i <= trials; i++ {
				t.Run(fmt.Sprintf("trial-%d", i), func(t *testing.T) { trial(t, flog.trial(t, fault, i)) })
			}
		})
	}
	each("agent-killed", func(t *testing.T, r *mnFaultTrial) {
		before := e.podState(t)
		cmd, stderr := m.startSpreadPredict(t, e)
		agents, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelAgent, FieldSelector: "spec.nodeName=slowpoke-n1"})
		if err != nil || len(agents.Items) != 1 {
			t.Fatalf("slowpoke-n1's agent pod: %v, %d found", err, len(agents.Items))
		}
		pid := agentProcess(t, string(agents.Items[0].UID))
		frozen := waitFrozen(t)
		r.Frozen, r.BoundS = frozen, kube.DefaultLease.Seconds()
		killed := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL slowpoke-n1's agent (PID %d): %v", pid, err)
		}
		thawed := waitThawed(t, killed, kube.DefaultLease, nil, stderr)
		r.ThawedS, r.Within = thawed.Seconds(), thawed <= kube.DefaultLease
		t.Logf("slowpoke-n1's agent SIGKILLed with %d pods frozen: all thawed %v after", frozen, thawed.Round(time.Millisecond))
		if thawed > kube.DefaultLease {
			t.Errorf("thawed %v after the kill: past the lease (%v)", thawed, kube.DefaultLease)
		}
		if err := waitExit(cmd, 3*time.Minute); err == nil {
			t.Errorf("the run succeeded with slowpoke-n1's agent killed\n%s", stderr.String())
		}
		r.RunError = lastLine(stderr.String())
		r.NamesNode = strings.Contains(r.RunError, "slowpoke-n1")
		t.Logf("the run ended %v after the kill: %s", time.Since(killed).Round(time.Second), r.RunError)
		if !r.NamesNode {
			t.Errorf("the run's error does not name the node slowpoke-n1:\n%s", stderr.String())
		}
		out := restore(t)
		r.Restore = restoreSummary(out)
		t.Logf("restore:\n%s", out)
		r.Restarted = podsRestarted(before, e.podState(t))
		e.checkUntouched(t, before)
	})
	each("orchestrator-killed", func(t *testing.T, r *mnFaultTrial) {
		before := e.podState(t)
		cmd, stderr := m.startSpreadPredict(t, e)
		frozen := waitFrozen(t)
		r.Frozen, r.BoundS = frozen, kube.DefaultLease.Seconds()
		killed := time.Now()
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		thawed := waitThawed(t, killed, kube.DefaultLease+5*time.Second, nil, stderr)
		r.ThawedS, r.Within = thawed.Seconds(), thawed <= kube.DefaultLease+time.Second
		t.Logf("orchestrator SIGKILLed with %d pods frozen: all thawed %v after (lease %v)", frozen, thawed.Round(time.Millisecond), kube.DefaultLease)
		if thawed > kube.DefaultLease+time.Second {
			t.Errorf("thawed %v after the kill: past the lease (%v)", thawed, kube.DefaultLease)
		}
		out := restore(t)
		r.Restore = restoreSummary(out)
		t.Logf("restore:\n%s", out)
		if !strings.Contains(out, "deleted the node agents") {
			t.Errorf("restore did not delete the killed run's agents")
		}
		if out := restore(t); !strings.Contains(out, "nothing to restore") {
			t.Errorf("a second restore found something to change:\n%s", out)
		} else {
			r.Restore += "; a second: " + restoreSummary(out)
		}
		r.Restarted = podsRestarted(before, e.podState(t))
		e.checkUntouched(t, before)
	})
	each("target-pod-deleted", func(t *testing.T, r *mnFaultTrial) {
		before := e.podState(t)
		cmd, stderr := m.startSpreadPredict(t, e)
		var victim corev1.Pod
		for _, p := range e.pods(t, "cart") {
			if p.Spec.NodeName == "slowpoke-n2" {
				victim = p
			}
		}
		if victim.Name == "" {
			t.Fatal("no cart pod on slowpoke-n2")
		}
		frozen := waitFrozen(t)
		r.Frozen, r.BoundS = frozen, kube.DefaultLease.Seconds()
		deleted := time.Now()
		if err := e.client.CoreV1().Pods(ns).Delete(context.Background(), victim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		thawed := waitThawed(t, deleted, kube.DefaultLease, nil, stderr)
		r.ThawedS, r.Within = thawed.Seconds(), thawed <= kube.DefaultLease
		t.Logf("cart's pod on slowpoke-n2 deleted with %d pods frozen: all thawed %v after", frozen, thawed.Round(time.Millisecond))
		if thawed > kube.DefaultLease {
			t.Errorf("thawed %v after the deletion: past the lease (%v)", thawed, kube.DefaultLease)
		}
		if err := waitExit(cmd, 3*time.Minute); err == nil {
			t.Errorf("the run succeeded with a pod of its target deleted\n%s", stderr.String())
		}
		r.RunError = lastLine(stderr.String())
		r.NamesNode = strings.Contains(stderr.String(), "on node slowpoke-n2")
		t.Logf("the run ended %v after the deletion: %s", time.Since(deleted).Round(time.Second), r.RunError)
		if !r.NamesNode {
			t.Errorf("the run's error does not name the node slowpoke-n2:\n%s", stderr.String())
		}
		out := restore(t)
		r.Restore = restoreSummary(out)
		if !strings.Contains(out, "nothing to restore") {
			t.Errorf("restore after the run found something to change:\n%s", out)
		}
		// The deleted pod replaced; every other as it was.
		delete(before, string(victim.UID))
		e.waitReady(t, nil)
		var repl []string
		for _, p := range e.pods(t, "cart") {
			if _, ok := before[string(p.UID)]; !ok {
				before[string(p.UID)] = 0
				repl = append(repl, p.Name+" on "+p.Spec.NodeName)
			}
		}
		t.Logf("cart's deleted pod replaced by %v", repl)
		r.Restarted = podsRestarted(before, e.podState(t))
		e.checkUntouched(t, before)
	})
}

// startSpreadPredict starts a long predict of the spread demo through the
// node agents (50%, 30 s) and waits until its rounds have frozen a pod on
// each node.
func (m *mnEnv) startSpreadPredict(t *testing.T, e *kubeEnv) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := e.command("predict", "-f", mnDemoSpec, "--target", "cart", "--kube-mode", "agent", "--reduce", "50%",
		"--duration", "30s", "--reps", "1", "--max-reps", "1", "--out", t.TempDir())
	stderr := startUntilEnd(t, cmd)
	states := map[string][]string{}
	for _, sv := range []string{"frontend", "catalog", "currency"} {
		for _, p := range e.pods(t, sv) {
			states[p.Spec.NodeName] = append(states[p.Spec.NodeName], filepath.Join(m.podCgroup(t, &p), "freezer.state"))
		}
	}
	seen := map[string]bool{}
	waitUntil(t, "a pod frozen on each node", 3*time.Minute, func() bool {
		for node, files := range states {
			for _, f := range files {
				if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) != "THAWED" {
					seen[node] = true
				}
			}
		}
		return len(seen) == len(states)
	}, stderr)
	return cmd, stderr
}
