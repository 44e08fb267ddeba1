package main

// The Kubernetes manifests checked without a cluster: unit tests, in
// plain go test. The tests against a real cluster are in kube_*_test.go,
// behind the build tag e2e (test/kube/e2e.sh).

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// demoJob runs the orchestrator in the cluster (docs/kubernetes.md).
const demoJob = "../../examples/demo/kubernetes/job.yaml"

// jobManifests are job.yaml's objects.
type jobManifests struct {
	sa      *corev1.ServiceAccount
	binding *rbacv1.RoleBinding
	job     *batchv1.Job
}

func loadJobManifests(t *testing.T) jobManifests {
	t.Helper()
	var m jobManifests
	for _, obj := range decodeManifests(t, demoJob) {
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			m.sa = o
		case *rbacv1.RoleBinding:
			m.binding = o
		case *batchv1.Job:
			m.job = o
		default:
			t.Fatalf("%s: unexpected %T", demoJob, obj)
		}
	}
	if m.sa == nil || m.binding == nil || m.job == nil {
		t.Fatalf("%s: want a ServiceAccount, a RoleBinding and a Job", demoJob)
	}
	return m
}

// TestKubeJobManifest: job.yaml runs the demo's spec, in its namespace,
// with its image, as a ServiceAccount bound to role.yaml's Role and to
// nothing else, and prints results.json to its log.
func TestKubeJobManifest(t *testing.T) {
	s, err := spec.Load(demoKubeSpec)
	if err != nil {
		t.Fatal(err)
	}
	role := decodeManifests(t, demoRole)[0].(*rbacv1.Role)
	m := loadJobManifests(t)
	ns := s.Kubernetes.Namespace
	for _, meta := range []metav1.ObjectMeta{m.sa.ObjectMeta, m.binding.ObjectMeta, m.job.ObjectMeta, role.ObjectMeta} {
		if meta.Namespace != ns {
			t.Errorf("%s is in namespace %q, want the spec's %q", meta.Name, meta.Namespace, ns)
		}
	}
	if want := (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}); m.binding.RoleRef != want {
		t.Errorf("the RoleBinding refers to %+v, want %+v", m.binding.RoleRef, want)
	}
	if want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: m.sa.Name, Namespace: ns}}; !reflect.DeepEqual(m.binding.Subjects, want) {
		t.Errorf("the RoleBinding binds %+v, want %+v", m.binding.Subjects, want)
	}
	pod := m.job.Spec.Template.Spec
	if pod.ServiceAccountName != m.sa.Name || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("the Job's pod runs as %q with restart policy %q, want %q and Never", pod.ServiceAccountName, pod.RestartPolicy, m.sa.Name)
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Image != s.Kubernetes.Image {
		t.Fatalf("the Job's container: want one, with the spec's image %s", s.Kubernetes.Image)
	}
	c := pod.Containers[0]
	if len(c.Command) < 2 || c.Command[0] != "/slowpoke" || c.Command[1] != "predict" || !slices.Contains(c.Command, "--print-json") {
		t.Errorf("the Job runs %q, want /slowpoke predict ... --print-json", c.Command)
	}
	i := slices.Index(c.Command, "-f")
	if i < 0 || i+1 == len(c.Command) || len(c.VolumeMounts) != 1 || filepath.Dir(c.Command[i+1]) != c.VolumeMounts[0].MountPath ||
		len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].Name != c.VolumeMounts[0].Name {
		t.Errorf("the Job's spec (-f) is not read from its ConfigMap's volume: %q, %+v, %+v", c.Command, c.VolumeMounts, pod.Volumes)
	}
}

// TestRoleDocumented: the Role that docs/kubernetes.md shows is role.yaml's.
func TestRoleDocumented(t *testing.T) {
	doc := readDoc(t, "docs/kubernetes.md")
	block := regexp.MustCompile("(?s)```yaml\n(apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n.*?)```").FindStringSubmatch(doc)
	if block == nil {
		t.Fatal("docs/kubernetes.md shows no Role")
	}
	path := filepath.Join(t.TempDir(), "role.yaml")
	if err := os.WriteFile(path, []byte(block[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	shown := decodeManifests(t, path)[0].(*rbacv1.Role)
	role := decodeManifests(t, demoRole)[0].(*rbacv1.Role)
	if !reflect.DeepEqual(shown.Rules, role.Rules) {
		t.Errorf("docs/kubernetes.md's Role grants\n%+v\nrole.yaml's\n%+v", shown.Rules, role.Rules)
	}
}

// TestPrintResultsJSON: --print-json prints the results file compacted on
// one line after its prefix, which sed takes out again.
func TestPrintResultsJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, []byte("{\n  \"points\": [\n    {\"predicted_rps\": 1.5}\n  ]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printResultsJSON(&out, path); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "results.json: {\"points\":[{\"predicted_rps\":1.5}]}\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	os.WriteFile(path, []byte("{"), 0o644)
	if err := printResultsJSON(&out, path); err == nil {
		t.Error("a broken results file was printed")
	}
}

// The demo's Kubernetes manifests, its spec and its Role.
const (
	demoManifests = "../../examples/demo/kubernetes/deployments.yaml"
	demoKubeSpec  = "../../examples/demo/kubernetes/app.yaml"
	demoRole      = "../../examples/demo/kubernetes/role.yaml"
)

// decodeManifests decodes every object of a multi-document YAML file.
func decodeManifests(t *testing.T, path string) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []runtime.Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, obj)
	}
}

// TestKubeManifests: the Kubernetes form of the demo and of each benchmark
// application loads, and its Deployments run what the local spec runs,
// one replica each, in the spec's namespace, replaced (not rolled) because
// they use the host's ports.
func TestKubeManifests(t *testing.T) {
	for _, dir := range []string{"../../examples/demo", "../../examples/pools", "../../apps/boutique", "../../apps/hotel", "../../apps/movie", "../../apps/social"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			local, err := spec.Load(filepath.Join(dir, "app.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			ks, err := spec.Load(filepath.Join(dir, "kubernetes", "app.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if ks.Kubernetes == nil || ks.Entry != local.Entry || !reflect.DeepEqual(ks.Workload, local.Workload) {
				t.Fatalf("the Kubernetes spec's entry or workload differs from the local one's")
			}
			deps := map[string]*appsv1.Deployment{}
			for _, obj := range decodeManifests(t, filepath.Join(dir, "kubernetes", "deployments.yaml")) {
				if d, ok := obj.(*appsv1.Deployment); ok {
					deps[d.Name] = d
				}
			}
			for i, sv := range local.Services {
				d := deps[sv.Name]
				if d == nil {
					t.Errorf("no Deployment for %s", sv.Name)
					continue
				}
				c := d.Spec.Template.Spec.Containers[0]
				want := append([]string{"/apps/bin/" + filepath.Base(sv.Command)}, sv.Args...)
				if sv.Command == "slowpoke-emu" {
					want = []string{"/slowpoke-emu", "-topology", "/apps/" + filepath.Base(dir) + "/topology.yaml", "-service", sv.Name}
				}
				if !reflect.DeepEqual(c.Command, want) {
					t.Errorf("%s runs %q, want %q", sv.Name, c.Command, want)
				}
				for k, v := range sv.Env {
					found := false
					for _, e := range c.Env {
						found = found || (e.Name == k && e.Value == v)
					}
					if !found {
						t.Errorf("%s: env %s=%s missing", sv.Name, k, v)
					}
				}
				if d.Namespace != ks.Kubernetes.Namespace || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 ||
					d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || !d.Spec.Template.Spec.HostNetwork {
					t.Errorf("%s: namespace %q, replicas %v, strategy %q, host network %v", sv.Name, d.Namespace, d.Spec.Replicas, d.Spec.Strategy.Type, d.Spec.Template.Spec.HostNetwork)
				}
				if ksv := ks.Services[i]; ksv.Name != sv.Name || !reflect.DeepEqual(ksv.GroundTruth, sv.GroundTruth) || ksv.Protocol != sv.Protocol {
					t.Errorf("service %d: %+v, want it as the local spec's %+v", i, ksv, sv)
				}
			}
			if len(deps) != len(local.Services) {
				t.Errorf("%d Deployments for %d services", len(deps), len(local.Services))
			}
		})
	}
}

// TestKubeMultiNodeDemoManifests: the demo spread over the multi-node
// test cluster (testdata/kube-multinode-demo) runs the demo's services
// with the demo's work and calls; every service the others call is
// reached at its Service's ClusterIP, which selects its pods, where it
// listens on every address; the frontend holds several connections to
// cart, the target, which has two replicas spread over the nodes.
func TestKubeMultiNodeDemoManifests(t *testing.T) {
	const dir = "testdata/kube-multinode-demo"
	demo, err := emulator.LoadTopology("../../examples/demo/topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := spec.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]*appsv1.Deployment{}
	svcs := map[string]*corev1.Service{}
	var topo *emulator.Topology
	for _, obj := range decodeManifests(t, filepath.Join(dir, "deployments.yaml")) {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			deps[o.Name] = o
		case *corev1.Service:
			svcs[o.Name] = o
		case *corev1.ConfigMap:
			if topo, err = emulator.ParseTopology([]byte(o.Data["topology.yaml"])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if topo == nil {
		t.Fatal("no topology ConfigMap")
	}
	if len(topo.Services) != len(demo.Services) || topo.Entry != demo.Entry {
		t.Fatalf("services %d, entry %q: want the demo's %d and %q", len(topo.Services), topo.Entry, len(demo.Services), demo.Entry)
	}
	for name, want := range demo.Services {
		got := topo.Services[name]
		if got.Port != want.Port || got.Protocol != want.Protocol || !reflect.DeepEqual(got.Endpoints, want.Endpoints) {
			t.Errorf("%s: %+v, want the demo's %+v (but its host)", name, got, want)
		}
		d := deps[name]
		if d == nil {
			t.Errorf("no Deployment for %s", name)
			continue
		}
		env := map[string]string{}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if name == topo.Entry {
			if !d.Spec.Template.Spec.HostNetwork || ks.Entry != "http://"+got.Addr() {
				t.Errorf("the entry %s: host network %v, at %s; the spec's entry is %s", name, d.Spec.Template.Spec.HostNetwork, got.Addr(), ks.Entry)
			}
			if env["EMU_GRPC_CONNS"] == "" || env["EMU_GRPC_CONNS"] == "1" {
				t.Errorf("%s: one gRPC connection to cart: kube-proxy would send every call to one replica", name)
			}
			continue
		}
		s := svcs[name]
		if s == nil || s.Spec.ClusterIP != got.Host || !reflect.DeepEqual(s.Spec.Selector, d.Spec.Selector.MatchLabels) ||
			len(s.Spec.Ports) != 1 || int(s.Spec.Ports[0].Port) != got.Port || s.Spec.Ports[0].TargetPort.IntValue() != got.Port {
			t.Errorf("%s is called at %s: want a Service with that ClusterIP and port selecting its pods, got %+v", name, got.Addr(), s)
		}
		if d.Spec.Template.Spec.HostNetwork || env["EMU_LISTEN_HOST"] != "0.0.0.0" {
			t.Errorf("%s: host network %v, EMU_LISTEN_HOST %q: want its pod's network, every address", name, d.Spec.Template.Spec.HostNetwork, env["EMU_LISTEN_HOST"])
		}
	}
	if cart := deps["cart"]; cart == nil || cart.Spec.Replicas == nil || *cart.Spec.Replicas != 2 || len(cart.Spec.Template.Spec.TopologySpreadConstraints) != 1 {
		t.Errorf("cart: want two replicas spread over the nodes")
	}
}
