package kube

import (
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// API is the part of the Kubernetes API that slowpoke calls: the core and
// apps groups. A client-go clientset (kubernetes.Interface) is one; Client
// builds one from these two groups' typed clients only, since the full
// clientset links every API group's client into the binary.
type API interface {
	CoreV1() corev1client.CoreV1Interface
	AppsV1() appsv1client.AppsV1Interface
}

type groups struct {
	core corev1client.CoreV1Interface
	apps appsv1client.AppsV1Interface
}

func (g groups) CoreV1() corev1client.CoreV1Interface { return g.core }
func (g groups) AppsV1() appsv1client.AppsV1Interface { return g.apps }

// Client returns a client for the cluster k names: its kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else the service account of the pod
// slowpoke runs in (client-go's usual loading rules).
func Client(k *spec.Kubernetes) (API, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.Kubeconfig != "" {
		rules.ExplicitPath = k.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: k.Context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: no cluster configuration: %w (set kubernetes.kubeconfig in the spec, or $KUBECONFIG)", err)
	}
	cfg.Timeout = 30 * time.Second
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	core, err := corev1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	apps, err := appsv1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return groups{core: core, apps: apps}, nil
}

// explainAPI says what a failed API call was, naming the verb and the
// resource a missing permission is about.
func explainAPI(err error, verb, resource, ns, name string) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("permission denied: slowpoke may not %s %s in namespace %q (%v); grant it the Role in docs/kubernetes.md", verb, resource, ns, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the cluster refused slowpoke's credentials to %s %s: %v", verb, resource, err)
	case apierrors.IsNotFound(err) && resource == "deployments":
		return fmt.Errorf("no Deployment %q in namespace %q (name it with deployment: in the spec)", name, ns)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %q not found in namespace %q", resource, name, ns)
	}
	return fmt.Errorf("%s %s %s/%s: %w", verb, resource, ns, name, err)
}

// describeRun words a Deployment's AnnotationRun for an error.
// runOf is the id of the run an annotation records ("" if none).
func runOf(annotation string) string {
	var r runRecord
	if json.Unmarshal([]byte(annotation), &r) != nil {
		return ""
	}
	return r.ID
}

func describeRun(annotation string) string {
	var r runRecord
	if json.Unmarshal([]byte(annotation), &r) != nil || r.ID == "" {
		return "by an unknown run"
	}
	return fmt.Sprintf("run %s, started %s by process %d on %s", r.ID, r.Started.Format(time.RFC3339), r.PID, r.Host)
}
