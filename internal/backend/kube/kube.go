package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Defaults.
const (
	// DefaultLease is how long the controllers keep a slowdown after the
	// orchestrator's last renewal.
	DefaultLease = 10 * time.Second
	// DefaultRolloutTimeout bounds each wait for a rollout.
	DefaultRolloutTimeout = 3 * time.Minute
)

// Options configure Start.
type Options struct {
	backend.Options               // MaxPause's default: controller.DefaultMaxPause
	Lease           time.Duration // default DefaultLease
	RolloutTimeout  time.Duration // default DefaultRolloutTimeout
	// Client is the cluster's client; nil: made from the spec's
	// kubernetes section (Client).
	Client API
	// Mode is how the run reaches the pods (ModeAuto: chosen, with a
	// message where it is the template).
	Mode Mode
	// Restarts says that the command restarts the target (a ground
	// truth): the node agent cannot yet.
	Restarts bool
	// Pause is the pause method asked for, which ModeAuto heeds.
	Pause pause.Method
	// ControlHost, when set, replaces the pods' IPs in the controllers'
	// addresses (for a cluster whose pod network this machine cannot
	// reach but through, e.g., a node's address with host networking).
	ControlHost string
}

// Deployment is an application on a cluster, its services running under
// slowpoke controllers.
type Deployment struct {
	spec   *spec.Spec
	k      *spec.Kubernetes
	opts   Options
	client API
	run    runRecord
	secret []byte
	// originals are the Deployments' pod templates as found, by service.
	originals map[string]*corev1.PodTemplateSpec

	mu       sync.Mutex
	services map[string]*service
	target   string
	restarts map[string]int
	// replacing marks the services whose pods Restart replaces: their
	// old pods' ends are no failure.
	replacing map[string]bool
	// limitWarned marks the services whose CPU limit has been warned of.
	limitWarned map[string]bool
	stopped     bool
	// agent says that the run reaches the pods through node agents
	// (ModeAgent); pods are every service's pods as found, agents the
	// agents' pods; dsMade says that their DaemonSet exists.
	agent  bool
	pods   map[string][]podRef
	agents []corev1.Pod
	dsMade bool
	// nodeIPs are the nodes' addresses that the pods' status gives, by
	// node: where a run that spans nodes finds their agents.
	nodeIPs map[string]string
	// secretMade says that the run's Secret exists (Stop deletes it).
	secretMade bool

	stopRenew chan struct{}
	renewDone chan struct{}
	// stopBeat ends the Secret's renewals (heartbeat), once, before the
	// Secret is deleted.
	stopBeat       chan struct{}
	stopBeatOnce   sync.Once
	beatDone       chan struct{}
	failure        backend.Failure
	uninstrumented backend.Uninstrumented
}

// service is one service's Deployment and current pod.
type service struct {
	backend.Service
	deployment string
	container  string
	pod        string
	index      int // in the spec: its control port is ControlPort+index
	// pods are the UIDs of its pods where a node agent freezes them by
	// UID (ModeAgent); nil otherwise.
	pods []string
}

// Start puts every service of s, an application deployed on the cluster
// that s.Kubernetes names, under a slowpoke controller, and waits until
// all run. On error every Deployment it changed is restored.
func Start(ctx context.Context, s *spec.Spec, opts Options) (*Deployment, error) {
	if s.Kubernetes == nil {
		return nil, errors.New("kube: the spec has no kubernetes section")
	}
	opts.Options = opts.Options.WithDefaults()
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.RolloutTimeout <= 0 {
		opts.RolloutTimeout = DefaultRolloutTimeout
	}
	if opts.Client == nil {
		c, err := Client(s.Kubernetes)
		if err != nil {
			return nil, err
		}
		opts.Client = c
	}
	id := make([]byte, 4)
	secret := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	d := &Deployment{
		spec: s, k: s.Kubernetes, opts: opts, client: opts.Client, secret: secret,
		run:       runRecord{ID: hex.EncodeToString(id), Host: host, PID: os.Getpid(), Started: time.Now().UTC()},
		originals: map[string]*corev1.PodTemplateSpec{}, services: map[string]*service{}, target: opts.Target,
		restarts: map[string]int{}, replacing: map[string]bool{}, limitWarned: map[string]bool{},
		stopRenew: make(chan struct{}), renewDone: make(chan struct{}),
		stopBeat: make(chan struct{}), beatDone: make(chan struct{}),
	}
	mode, err := d.chooseMode(ctx)
	if err != nil {
		return nil, err
	}
	d.agent = mode == ModeAgent
	start, undo := d.start, d.restoreAll
	if d.agent {
		start, undo = d.startAgent, d.stopAgent
	}
	if err := start(ctx); err != nil {
		if rerr := undo(); rerr != nil {
			err = fmt.Errorf("%w (and undoing what the run made: %v)", err, rerr)
		}
		close(d.renewDone)
		return nil, err
	}
	go d.renew()
	go d.watch()
	return d, nil
}

func (d *Deployment) secretName() string { return "slowpoke-" + d.run.ID }

func (d *Deployment) start(ctx context.Context) error {
	ns := d.k.Namespace
	// Every Deployment is checked before anything changes.
	found := map[string]*appsv1.Deployment{}
	for i := range d.spec.Services {
		sv := &d.spec.Services[i]
		dep, err := d.client.AppsV1().Deployments(ns).Get(ctx, deploymentName(sv), metav1.GetOptions{})
		if err != nil {
			return serviceErr(sv.Name, explainAPI(err, "get", "deployments", ns, deploymentName(sv)))
		}
		if _, ok := dep.Annotations[AnnotationOriginal]; ok {
			return fmt.Errorf("service %q: Deployment %s/%s is already under slowpoke (%s); if that run is over, `slowpoke restore -f SPEC` puts it back",
				sv.Name, ns, dep.Name, describeRun(dep.Annotations[AnnotationRun]))
		}
		if r := dep.Spec.Replicas; r != nil && *r != 1 {
			return fmt.Errorf("service %q: Deployment %s/%s has %d replicas; slowpoke needs exactly 1 per service (scale it to 1 for the experiment)", sv.Name, ns, dep.Name, *r)
		}
		if _, err := inject(&dep.Spec.Template, d.injection(sv, i, nil)); err != nil {
			return fmt.Errorf("service %q: Deployment %s/%s: %w", sv.Name, ns, dep.Name, err)
		}
		found[sv.Name] = dep
	}
	if err := d.makeSecret(ctx); err != nil {
		return err
	}
	d.opts.Logf("putting %d Deployments in namespace %q under slowpoke controllers (run %s)", len(found), ns, d.run.ID)
	for i := range d.spec.Services {
		sv := &d.spec.Services[i]
		if err := d.patch(ctx, sv, i, found[sv.Name], nil); err != nil {
			return err
		}
	}
	for i := range d.spec.Services {
		if err := d.await(ctx, &d.spec.Services[i], i); err != nil {
			return err
		}
	}
	for _, sv := range d.spec.Services {
		if sv.Pool == nil {
			continue
		}
		if err := d.Service(sv.Name).Control.SetPool(wire.Pool{Limit: int64(*sv.Pool)}); err != nil {
			return fmt.Errorf("set the pool of %s to %d: %w", sv.Name, *sv.Pool, err)
		}
	}
	return nil
}

// makeSecret makes the run's Secret, which holds its secret and says, by
// its renewals, that the run lives.
func (d *Deployment) makeSecret(ctx context.Context) error {
	ns := d.k.Namespace
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: d.secretName(), Labels: map[string]string{LabelRun: d.run.ID},
			Annotations: map[string]string{AnnotationRenewEvery: RenewSecretEvery.String()}},
		Data: map[string][]byte{secretKey: []byte(hex.EncodeToString(d.secret))},
	}
	if _, err := d.client.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return explainAPI(err, "create", "secrets", ns, sec.Name)
	}
	d.secretMade = true
	// The first renewal before anything changes: without the right to
	// patch Secrets, the run stops here.
	if err := d.renewSecret(ctx); err != nil {
		close(d.beatDone)
		return explainAPI(err, "patch", "secrets", ns, sec.Name)
	}
	go d.heartbeat()
	return nil
}

func deploymentName(sv *spec.Service) string {
	if sv.Deployment != "" {
		return sv.Deployment
	}
	return sv.Name
}

func (d *Deployment) injection(sv *spec.Service, i int, env map[string]string) injection {
	return injection{svc: sv, image: d.k.Image, controlPort: d.k.ControlPort + i, runID: d.run.ID, secretName: d.secretName(),
		lease: d.opts.Lease, maxPause: d.opts.MaxPause, restart: d.restarts[sv.Name], env: env}
}

// patch puts sv's Deployment (dep, as found) under a controller, with env
// over its environment, recording its original template first.
func (d *Deployment) patch(ctx context.Context, sv *spec.Service, i int, dep *appsv1.Deployment, env map[string]string) error {
	ns, name := d.k.Namespace, dep.Name
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := d.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return serviceErr(sv.Name, explainAPI(err, "get", "deployments", ns, name))
		}
		orig := d.originals[sv.Name]
		if orig == nil {
			if _, ok := cur.Annotations[AnnotationOriginal]; ok {
				return fmt.Errorf("service %q: Deployment %s/%s was put under slowpoke meanwhile (%s)", sv.Name, ns, name, describeRun(cur.Annotations[AnnotationRun]))
			}
			orig = cur.Spec.Template.DeepCopy()
		}
		tpl, err := inject(orig, d.injection(sv, i, env))
		if err != nil {
			return serviceErr(sv.Name, err)
		}
		enc, err := encodeTemplate(orig)
		if err != nil {
			return err
		}
		rec, _ := json.Marshal(d.run)
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[AnnotationOriginal] = enc
		cur.Annotations[AnnotationRun] = string(rec)
		cur.Spec.Template = *tpl
		// Recorded before the update: an update that fails on the way
		// back (a timeout) may still have been applied, and the restore
		// must then put it back (it acts only where this run's annotation
		// is found).
		d.mu.Lock()
		d.originals[sv.Name] = orig
		d.mu.Unlock()
		if _, err := d.client.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return serviceErr(sv.Name, explainAPI(err, "update", "deployments", ns, name))
		}
		return nil
	})
}

// await waits for sv's rollout, finds its new pod and connects to its
// controller.
func (d *Deployment) await(ctx context.Context, sv *spec.Service, i int) error {
	ns, name := d.k.Namespace, deploymentName(sv)
	ctx, cancel := context.WithTimeout(ctx, d.opts.RolloutTimeout)
	defer cancel()
	d.mu.Lock()
	gen := strconv.Itoa(d.restarts[sv.Name])
	d.mu.Unlock()
	pod, err := waitRollout(ctx, d.client, ns, name, func(p *corev1.Pod) bool {
		return p.Annotations[AnnotationRun] == d.run.ID && p.Annotations[AnnotationRestart] == gen
	})
	if err != nil {
		return serviceErr(sv.Name, err)
	}
	host := pod.Status.PodIP
	if d.opts.ControlHost != "" {
		host = d.opts.ControlHost
	}
	addr := net.JoinHostPort(host, strconv.Itoa(d.k.ControlPort+i))
	ctl := controller.NewClient(addr, d.secret)
	container := sv.Container
	if ci, err := findContainer(&pod.Spec, sv); err == nil {
		container = pod.Spec.Containers[ci].Name
		d.mu.Lock()
		target := d.target
		d.mu.Unlock()
		if sv.Name != target {
			d.warnCPULimit(sv.Name, pod.Spec.Containers[ci].Resources)
		}
	}
	svc := &service{Service: backend.Service{Name: sv.Name, Port: sv.Port, Control: ctl,
		LogPath: fmt.Sprintf("kubectl logs -n %s %s -c %s", ns, pod.Name, container)},
		deployment: name, container: container, pod: pod.Name, index: i}
	var st *wire.Stats
	for deadline := time.Now().Add(sv.Ready.Timeout.Duration); ; {
		if st, err = ctl.Stats(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("service %q: its controller at %s does not answer: %v\n%s", sv.Name, addr, err, d.logTail(ctx, svc, false))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	for wait := time.Now().Add(3 * time.Second); !st.AgentConnected && time.Now().Before(wait); {
		time.Sleep(50 * time.Millisecond)
		if st, err = ctl.Stats(); err != nil {
			return fmt.Errorf("service %q: controller: %w", sv.Name, err)
		}
	}
	if !st.AgentConnected {
		d.uninstrumented.Note(sv.Name, d.opts.Logf)
	}
	d.mu.Lock()
	if old := d.services[sv.Name]; old != nil && old.Control != nil {
		old.Control.Close()
	}
	d.services[sv.Name] = svc
	d.mu.Unlock()
	return nil
}

// Spec is the application's spec.
func (d *Deployment) Spec() *spec.Spec { return d.spec }

// Placement: the cluster placed the services.
func (d *Deployment) Placement() backend.Placement {
	d.mu.Lock()
	defer d.mu.Unlock()
	return backend.Placement{Target: d.target, Cluster: true}
}

// Services returns the running services in spec order.
func (d *Deployment) Services() []*backend.Service {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*backend.Service
	for _, sv := range d.spec.Services {
		if s := d.services[sv.Name]; s != nil {
			out = append(out, &s.Service)
		}
	}
	return out
}

// Service returns a running service by name, or nil.
func (d *Deployment) Service(name string) *backend.Service {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.services[name]; s != nil {
		return &s.Service
	}
	return nil
}

// PauseMethod resolves m on Kubernetes: in template mode as the function
// PauseMethod does; the node agent freezes the pods (the cgroup method).
func (d *Deployment) PauseMethod(m pause.Method) (pause.Method, error) {
	if !d.agent {
		return PauseMethod(m)
	}
	switch m {
	case "", pause.MethodAuto, pause.MethodCgroup:
		return pause.MethodCgroup, nil
	}
	return "", agentFreezes(m)
}

// PauseMethod resolves m for an application on Kubernetes, deployed or
// not, so that a command can refuse a method before it deploys: the
// controllers in the pods pause their services with signals; freezing
// cgroups or holding cores needs privileges a pod of the user's does not
// have.
func PauseMethod(m pause.Method) (pause.Method, error) {
	switch m {
	case "", pause.MethodAuto, pause.MethodSignal:
		return pause.MethodSignal, nil
	case pause.MethodCgroup, pause.MethodCores:
		return "", &backend.SettingError{Setting: backend.SettingPauseMethod, Value: string(m),
			Err: errors.New("not available on Kubernetes, where the controllers run inside the services' unprivileged containers"),
			Use: []backend.Setting{{Name: backend.SettingPauseMethod, Value: string(pause.MethodSignal)}}}
	}
	return "", fmt.Errorf("unknown pause method %q", m)
}

// Retarget makes another service the target; nothing moves.
func (d *Deployment) Retarget(target string) error {
	if err := backend.CanTarget(d, target); err != nil {
		return err
	}
	d.mu.Lock()
	d.target = target
	d.mu.Unlock()
	return nil
}

// Restart rolls the service's Deployment out again with env over its
// environment (nil: as found) and waits for the new pod's controller.
func (d *Deployment) Restart(ctx context.Context, name string, env map[string]string) error {
	i := -1
	for j := range d.spec.Services {
		if d.spec.Services[j].Name == name {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("unknown service %q", name)
	}
	if d.agent {
		return &backend.SettingError{Setting: backend.SettingKubeMode, Value: string(ModeAgent),
			Err: fmt.Errorf("restart %s: the node agent restarts nothing (a ground truth needs the template mode)", name),
			Use: []backend.Setting{{Name: backend.SettingKubeMode, Value: string(ModeTemplate)}}}
	}
	sv := &d.spec.Services[i]
	d.mu.Lock()
	d.restarts[name]++
	d.replacing[name] = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.replacing, name)
		d.mu.Unlock()
	}()
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: deploymentName(sv)}}
	if err := d.patch(ctx, sv, i, dep, env); err != nil {
		return err
	}
	if err := d.await(ctx, sv, i); err != nil {
		return err
	}
	if sv.Pool != nil {
		return d.Service(name).Control.SetPool(wire.Pool{Limit: int64(*sv.Pool)})
	}
	return nil
}

// Stop ends every slowdown, restores every Deployment it changed, deletes
// the run's Secret and waits for the rollouts back.
func (d *Deployment) Stop() error {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return nil
	}
	d.stopped = true
	svcs := make([]*service, 0, len(d.services))
	for _, s := range d.services {
		svcs = append(svcs, s)
	}
	d.mu.Unlock()
	close(d.stopRenew)
	<-d.renewDone
	for _, s := range svcs {
		s.Control.Reset()
		s.Control.Close()
	}
	if d.agent {
		return d.stopAgent()
	}
	return d.restoreAll()
}

// restoreAll puts back every template recorded so far and deletes the
// run's Secret, then waits for the rollouts.
func (d *Deployment) restoreAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.RolloutTimeout)
	defer cancel()
	var errs []error
	d.mu.Lock()
	names := map[string]string{}
	for _, sv := range d.spec.Services {
		if d.originals[sv.Name] != nil {
			names[sv.Name] = deploymentName(&sv)
		}
	}
	d.mu.Unlock()
	ns := d.k.Namespace
	for svc, name := range names {
		if _, err := restoreDeployment(ctx, d.client, ns, name, d.run.ID); err != nil {
			errs = append(errs, serviceErr(svc, err))
		}
	}
	if d.secretMade {
		d.stopBeatOnce.Do(func() { close(d.stopBeat) })
		<-d.beatDone
		if err := d.client.CoreV1().Secrets(ns).Delete(ctx, d.secretName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, explainAPI(err, "delete", "secrets", ns, d.secretName()))
		}
	}
	for svc, name := range names {
		if _, err := waitRollout(ctx, d.client, ns, name, func(p *corev1.Pod) bool { return p.Annotations[AnnotationRun] == "" }); err != nil {
			errs = append(errs, serviceErr(svc, fmt.Errorf("restored, but its rollout: %w", err)))
		}
	}
	if len(names) > 0 && len(errs) == 0 {
		d.opts.Logf("restored %d Deployments in namespace %q", len(names), ns)
	}
	return errors.Join(errs...)
}

// RenewSecretEvery is how often a run renews its Secret (AnnotationRenewed).
const RenewSecretEvery = 2 * time.Second

// renewSecret renews the run's Secret, to say that the run lives.
func (d *Deployment) renewSecret(ctx context.Context) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationRenewed, time.Now().UTC().Format(time.RFC3339Nano))
	_, err := d.client.CoreV1().Secrets(d.k.Namespace).Patch(ctx, d.secretName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// heartbeat renews the run's Secret every RenewSecretEvery until stopBeat
// is closed, so that `slowpoke restore` can tell that the run lives.
func (d *Deployment) heartbeat() {
	defer close(d.beatDone)
	t := time.NewTicker(RenewSecretEvery)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-d.stopBeat:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), RenewSecretEvery)
		err := d.renewSecret(ctx)
		cancel()
		if err != nil && !warned {
			warned = true
			d.opts.Logf("warning: renewing the run's Secret %s/%s (which tells `slowpoke restore` that this run lives): %v", d.k.Namespace, d.secretName(), err)
		}
	}
}

// renew renews every controller's lease a few times per lease, each on
// its own: a controller that does not answer (its node cut off) holds up
// only its own renewal, which is not sent again while it is under way,
// never the others' (renewed one after the other, a call timing out on
// the cut node let the target's lease on a healthy node lapse, ending
// its slowdown mid-window).
func (d *Deployment) renew() {
	defer close(d.renewDone)
	t := time.NewTicker(d.opts.Lease / 5)
	defer t.Stop()
	var mu sync.Mutex
	warned, busy := map[string]bool{}, map[string]bool{}
	// The renewals under way end before renew does (each within its
	// call's timeout, as one renewal did before), so that none runs, or
	// logs, after the renewals have stopped.
	var wg sync.WaitGroup
	defer wg.Wait()
	stopped := func() bool {
		select {
		case <-d.stopRenew:
			return true
		default:
			return false
		}
	}
	for {
		select {
		case <-d.stopRenew:
			return
		case <-t.C:
		}
		for _, s := range d.settled() {
			mu.Lock()
			if busy[s.Name] {
				mu.Unlock()
				continue
			}
			busy[s.Name] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if !stopped() {
					err = s.Control.Renew()
				}
				mu.Lock()
				defer mu.Unlock()
				busy[s.Name] = false
				if err != nil && !warned[s.Name] && !stopped() {
					warned[s.Name] = true
					d.opts.Logf("warning: renewing the lease of %s's controller: %v", s.Name, err)
				}
			}()
		}
	}
}

// settled returns the services whose pods are not being replaced by
// Restart (the old pod is going, the new one not yet found).
func (d *Deployment) settled() []*service {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*service, 0, len(d.services))
	for _, s := range d.services {
		if !d.replacing[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

func serviceErr(name string, err error) error { return fmt.Errorf("service %q: %w", name, err) }

var _ backend.Backend = (*Deployment)(nil)

// warnCPULimit warns, once per service, of a CPU limit on the container
// of a service that is not the target: the kernel throttles such a
// process by stopping it, and a pause that lands while it is throttled
// takes nothing from it, so that predictions come out too high. (The
// target's own limit is its capacity, the spec's cpus, as
// docs/kubernetes.md asks.)
func (d *Deployment) warnCPULimit(name string, res corev1.ResourceRequirements) {
	lim, ok := res.Limits[corev1.ResourceCPU]
	if !ok || lim.IsZero() {
		return
	}
	d.mu.Lock()
	warned := d.limitWarned[name]
	d.limitWarned[name] = true
	d.mu.Unlock()
	if !warned {
		d.opts.Logf("warning: service %q runs under a CPU limit of %s cores: while it is paused (every service but the target), a pause that lands when the kernel throttles it takes nothing from it, and the predictions come out too high; for the experiment, leave limits to the target (docs/kubernetes.md)", name, lim.String())
	}
}
