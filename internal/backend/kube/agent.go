package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/nodeagent"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// Mode is how a run reaches the services' pods.
type Mode string

// Modes.
const (
	// ModeAuto is ModeAgent where the cluster admits the agent's
	// privileged pod and the command restarts no service, ModeTemplate
	// otherwise (with a message saying why).
	ModeAuto Mode = "auto"
	// ModeAgent runs a node agent on every node that holds a service's
	// pods (a DaemonSet made for the run): no pod template changes,
	// nothing rolls out, every replica is paused or counted.
	ModeAgent Mode = "agent"
	// ModeTemplate rolls each Deployment out with its service under a
	// controller, one replica each, and back at the end.
	ModeTemplate Mode = "template"
)

// Modes lists the modes, for flags and errors.
var Modes = []Mode{ModeAuto, ModeAgent, ModeTemplate}

// ParseMode checks a mode given by name ("" is ModeAuto).
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeAuto, nil
	}
	if m := Mode(s); slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("unknown Kubernetes mode %q: want one of %v", s, Modes)
}

// CheckPause refuses, before anything starts, a pause method that mode
// cannot make: the controllers in the pods (template mode) signal their
// services; the node agent freezes the pods; ModeAuto chooses by the
// method (signal: the template, cgroup: the agent).
func CheckPause(mode Mode, m pause.Method) error {
	switch mode {
	case ModeTemplate:
		_, err := PauseMethod(m)
		return err
	case ModeAgent:
		if m == pause.MethodSignal || m == pause.MethodCores {
			return agentFreezes(m)
		}
		return nil
	}
	if m == pause.MethodCores {
		return &backend.SettingError{Setting: backend.SettingPauseMethod, Value: string(m),
			Err: errors.New("not available on Kubernetes yet (neither the controllers in the pods nor the node agent hold cores)"),
			Use: []backend.Setting{{Name: backend.SettingPauseMethod, Value: string(pause.MethodCgroup)}, {Name: backend.SettingPauseMethod, Value: string(pause.MethodSignal)}}}
	}
	return nil
}

// agentFreezes is the error for a pause method m other than cgroup in
// agent mode.
func agentFreezes(m pause.Method) error {
	return &backend.SettingError{Setting: backend.SettingPauseMethod, Value: string(m),
		Err: errors.New("the node agent freezes the pods (cgroup)"),
		Use: []backend.Setting{{Name: backend.SettingKubeMode, Value: string(ModeTemplate)}}}
}

// Agent pods' names and places.
const (
	// LabelAgent marks the agents' pods (and the restore's thaw pods);
	// its value is the run's id.
	LabelAgent     = "slowpoke.dev/agent"
	agentCgroup    = "/host/cgroup"
	agentStateDir  = nodeagent.DefaultStateDir
	agentContainer = "agent"
	agentWatchdog  = "watchdog"
	// agentGrace is the agent pod's termination grace: it thaws at once
	// on SIGTERM, and is killed after.
	agentGrace = 10
)

// envNode carries the agent's node's name into its --node.
const envNode = "SLOWPOKE_NODE"

// peerPort is where the agents of a run that spans nodes listen for each
// other: the port after the services' controllers'.
func (d *Deployment) peerPort() int { return d.k.ControlPort + len(d.spec.Services) }

// podRef is one pod of a service, as found when the run started.
type podRef struct {
	name, uid, node, hostIP string
	restarts                int32
}

func (d *Deployment) daemonSetName() string { return "slowpoke-agent-" + d.run.ID }

// chooseMode decides between the agent and the template (ModeAuto), and
// says why when it falls back to the template.
func (d *Deployment) chooseMode(ctx context.Context) (Mode, error) {
	switch d.opts.Mode {
	case "", ModeTemplate: // "": commands that do not offer the choice
		return ModeTemplate, nil
	case ModeAgent:
		if d.opts.Restarts {
			return "", &backend.SettingError{Setting: backend.SettingKubeMode, Value: string(ModeAgent),
				Err: errors.New("the run restarts the target (its ground truth), which the node agent cannot do yet"),
				Use: []backend.Setting{{Name: backend.SettingKubeMode, Value: string(ModeTemplate)}}}
		}
		return ModeAgent, d.agentAdmitted(ctx)
	}
	if d.opts.Restarts {
		d.opts.Logf("Kubernetes: template mode (its ground truth restarts the target, which the node agent cannot do yet); the Deployments roll out under controllers and back")
		return ModeTemplate, nil
	}
	if m := d.opts.Pause; m == pause.MethodSignal {
		d.opts.Logf("Kubernetes: template mode (the signal pause method is made by controllers in the pods)")
		return ModeTemplate, nil
	}
	if err := d.agentAdmitted(ctx); err != nil {
		if d.opts.Pause == pause.MethodCgroup {
			return "", &backend.SettingError{Setting: backend.SettingPauseMethod, Value: string(pause.MethodCgroup),
				Err: fmt.Errorf("only the node agent makes it: %w", err)}
		}
		d.opts.Logf("Kubernetes: template mode, which rolls every Deployment out under a controller: %v (docs/kubernetes.md says what the node agent needs; the Kubernetes mode chooses)", err)
		return ModeTemplate, nil
	}
	return ModeAgent, nil
}

// agentAdmitted asks the API server, without making anything (a dry
// run), whether it admits the agent's pod in the namespace: a cluster's
// pod security (privileged, the host's PID namespace, network and cgroup
// file system) or slowpoke's rights may refuse it.
func (d *Deployment) agentAdmitted(ctx context.Context) error {
	tpl := d.agentTemplate(nil, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: d.daemonSetName() + "-check", Labels: tpl.Labels}, Spec: tpl.Spec}
	_, err := d.client.CoreV1().Pods(d.k.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return fmt.Errorf("the cluster does not admit the node agent's privileged pod: %w", explainAPI(err, "create", "pods", d.k.Namespace, pod.Name))
	}
	return nil
}

// agentTemplate is the agents' pod template: on nodes, privileged, in the
// host's PID namespace and network, with the node's cgroup file system
// and its state directory.
func (d *Deployment) agentTemplate(services []nodeagent.Service, nodes []string) corev1.PodTemplateSpec {
	args := []string{"/slowpoke", "agent", "--run", d.run.ID, "--cgroup-root", agentCgroup, "--state-dir", agentStateDir,
		"--lease", d.opts.Lease.String(), "--max-pause", d.opts.MaxPause.String(), "--node", "$(" + envNode + ")"}
	for _, sv := range services {
		args = append(args, "--service", sv.String())
	}
	if len(nodes) > 1 {
		// Rounds cross nodes: every agent listens for the others on
		// the port after the services', on its node's address.
		port := strconv.Itoa(d.peerPort())
		args = append(args, "--peer-listen", ":"+port)
		for _, n := range nodes {
			args = append(args, "--peer", n+"="+net.JoinHostPort(d.nodeIPs[n], port))
		}
	}
	mounts := []corev1.VolumeMount{{Name: "cgroup", MountPath: agentCgroup}, {Name: "state", MountPath: agentStateDir}}
	spec := corev1.PodSpec{
		HostPID: true, HostNetwork: true, DNSPolicy: corev1.DNSClusterFirstWithHostNet,
		// The agent calls no API: its privileged pod holds no token.
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](agentGrace),
		Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{
			Name: agentContainer, Image: d.k.Image, Command: args,
			Env: []corev1.EnvVar{{Name: controller.EnvSecret, ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: d.secretName()}, Key: secretKey}}},
				{Name: envNode, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			VolumeMounts:    mounts,
		}, {
			// Thaws a killed agent's pods at once (nodeagent.Watch):
			// the kubelet restarts a killed container only after a
			// back-off of up to five minutes.
			Name: agentWatchdog, Image: d.k.Image,
			Command:         []string{"/slowpoke", "agent", "--watch", "--cgroup-root", agentCgroup, "--state-dir", agentStateDir},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			VolumeMounts:    mounts,
		}},
		Volumes: []corev1.Volume{
			{Name: "cgroup", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sys/fs/cgroup", Type: ptr.To(corev1.HostPathDirectory)}}},
			{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: agentStateDir, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
		},
	}
	if len(nodes) > 0 {
		// A node field selector takes one value: one term per node (the
		// terms are ORed).
		var terms []corev1.NodeSelectorTerm
		for _, n := range nodes {
			terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}})
		}
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelAgent: d.run.ID},
		// kubectl logs shows the agent's, not its watchdog's.
		Annotations: map[string]string{"kubectl.kubernetes.io/default-container": agentContainer}}, Spec: spec}
}

// startAgent finds every replica of every service, makes the run's Secret
// and its agents' DaemonSet, waits for the agents and connects to their
// controllers. Nothing of the application changes.
func (d *Deployment) startAgent(ctx context.Context) error {
	services, nodes, err := d.findReplicas(ctx)
	if err != nil {
		return err
	}
	for _, n := range sortedKeys(nodes) {
		if len(nodes) > 1 && d.nodeIPs[n] == "" {
			return fmt.Errorf("node %s: its pods' status gives no host IP, where the other nodes' agents would reach its agent", n)
		}
	}
	if err := d.makeSecret(ctx); err != nil {
		return err
	}
	if err := d.makeAgents(ctx, services, nodes); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, d.opts.RolloutTimeout)
	defer cancel()
	agents, err := waitAgents(wctx, d.client, d.k.Namespace, d.run.ID, sortedKeys(nodes))
	if err != nil {
		return err
	}
	d.agents = agents
	if len(nodes) > 1 {
		d.opts.Logf("node agent: the services' pods run on %d nodes (%s): the target's agent freezes the pods of the others through theirs, and a service's CPU time is summed over its replicas' nodes (port %d)",
			len(nodes), strings.Join(sortedKeys(nodes), ", "), d.peerPort())
	}
	return d.connectAgent(ctx, agents)
}

// findReplicas finds every service's Deployment and its running pods
// (into d.pods), refusing a Deployment already under slowpoke. It returns
// the services as the agent is told of them and the nodes their pods run
// on.
func (d *Deployment) findReplicas(ctx context.Context) ([]nodeagent.Service, map[string]bool, error) {
	ns := d.k.Namespace
	d.pods = map[string][]podRef{}
	d.nodeIPs = map[string]string{}
	var services []nodeagent.Service
	nodes := map[string]bool{}
	for i := range d.spec.Services {
		sv := &d.spec.Services[i]
		dep, err := d.client.AppsV1().Deployments(ns).Get(ctx, deploymentName(sv), metav1.GetOptions{})
		if err != nil {
			return nil, nil, serviceErr(sv.Name, explainAPI(err, "get", "deployments", ns, deploymentName(sv)))
		}
		if _, ok := dep.Annotations[AnnotationOriginal]; ok {
			return nil, nil, fmt.Errorf("service %q: Deployment %s/%s is under slowpoke (%s); if that run is over, `slowpoke restore -f SPEC` puts it back",
				sv.Name, ns, dep.Name, describeRun(dep.Annotations[AnnotationRun]))
		}
		pods, err := runningPods(ctx, d.client, dep)
		if err != nil {
			return nil, nil, serviceErr(sv.Name, err)
		}
		agentSv := nodeagent.Service{Name: sv.Name, Port: d.k.ControlPort + i}
		for _, p := range pods {
			agentSv.Pods = append(agentSv.Pods, p.uid)
			nodes[p.node] = true
			if p.hostIP != "" {
				d.nodeIPs[p.node] = p.hostIP
			}
		}
		d.pods[sv.Name] = pods
		services = append(services, agentSv)
	}
	return services, nodes, nil
}

// makeAgents makes the run's DaemonSet of agents for services on nodes
// (d.dsMade says, from then on, that stopAgent deletes it).
func (d *Deployment) makeAgents(ctx context.Context, services []nodeagent.Service, nodes map[string]bool) error {
	ns := d.k.Namespace
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.daemonSetName(), Labels: map[string]string{LabelRun: d.run.ID}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelAgent: d.run.ID}},
			Template: d.agentTemplate(services, sortedKeys(nodes))},
	}
	if _, err := d.client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return explainAPI(err, "create", "daemonsets", ns, ds.Name)
	}
	d.dsMade = true
	d.opts.Logf("node agent: DaemonSet %s/%s on %s, for %d pods of %d services; nothing of the application changes (run %s)",
		ns, ds.Name, strings.Join(sortedKeys(nodes), ", "), countPods(d.pods), len(services), d.run.ID)
	return nil
}

// connectAgent connects to every service's controller in the agent of
// the node its pods run on (agents: the running agents' pods), waiting
// until each answers, and records the services.
func (d *Deployment) connectAgent(ctx context.Context, agents []corev1.Pod) error {
	ns := d.k.Namespace
	for i, sv := range d.spec.Services {
		agent := &agents[0]
		if refs := d.pods[sv.Name]; len(refs) > 0 {
			for j := range agents {
				if agents[j].Spec.NodeName == refs[0].node {
					agent = &agents[j]
				}
			}
		}
		host := agent.Status.PodIP
		if d.opts.ControlHost != "" {
			host = d.opts.ControlHost
		}
		addr := net.JoinHostPort(host, strconv.Itoa(d.k.ControlPort+i))
		ctl := controller.NewClient(addr, d.secret)
		if err := d.awaitAgentController(ctx, ctl, &sv, addr, agent.Name); err != nil {
			return err
		}
		var uids []string
		for _, p := range d.pods[sv.Name] {
			uids = append(uids, p.uid)
		}
		d.uninstrumented.Note(sv.Name, d.opts.Logf)
		d.mu.Lock()
		d.services[sv.Name] = &service{Service: backend.Service{Name: sv.Name, Port: sv.Port, Control: ctl,
			LogPath: fmt.Sprintf("kubectl logs -n %s %s -c %s", ns, agent.Name, agentContainer)}, pods: uids, deployment: deploymentName(&sv), index: i}
		d.mu.Unlock()
	}
	return nil
}

// awaitAgentController waits, up to sv's ready timeout, until ctl, sv's
// controller at addr in the agent's pod agentPod, answers.
func (d *Deployment) awaitAgentController(ctx context.Context, ctl *controller.Client, sv *spec.Service, addr, agentPod string) error {
	for deadline := time.Now().Add(sv.Ready.Timeout.Duration); ; {
		_, err := ctl.Stats()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("service %q: its controller in the node agent at %s does not answer: %v (kubectl logs -n %s %s -c %s)", sv.Name, addr, err, d.k.Namespace, agentPod, agentContainer)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runningPods lists dep's pods that run (not being deleted): every
// replica, at least one, all ready.
func runningPods(ctx context.Context, c API, dep *appsv1.Deployment) ([]podRef, error) {
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("Deployment %s/%s: selector: %w", dep.Namespace, dep.Name, err)
	}
	list, err := c.CoreV1().Pods(dep.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, explainAPI(err, "list", "pods", dep.Namespace, "")
	}
	var out []podRef
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Status.Phase != corev1.PodRunning || !podReady(p) {
			return nil, fmt.Errorf("pod %s/%s of Deployment %s is not running and ready (%s): wait until the application runs", p.Namespace, p.Name, dep.Name, p.Status.Phase)
		}
		out = append(out, podRef{name: p.Name, uid: string(p.UID), node: p.Spec.NodeName, hostIP: p.Status.HostIP, restarts: restarts(p)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("Deployment %s/%s has no running pod", dep.Namespace, dep.Name)
	}
	return out, nil
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// waitAgents waits until the run's agent pods run, one on each node.
func waitAgents(ctx context.Context, c API, ns, runID string, nodes []string) ([]corev1.Pod, error) {
	for {
		list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelAgent + "=" + runID})
		if err != nil {
			return nil, explainAPI(err, "list", "pods", ns, "")
		}
		var ready []corev1.Pod
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			if why := stuckReason(p); why != "" {
				return nil, fmt.Errorf("the node agent's pod %s/%s cannot start: %s (kubectl describe pod -n %s %s)", ns, p.Name, why, ns, p.Name)
			}
			if p.Status.Phase == corev1.PodRunning && podReady(p) && slices.Contains(nodes, p.Spec.NodeName) {
				ready = append(ready, *p)
			}
		}
		if len(ready) == len(nodes) {
			return ready, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the node agents did not start (%d of %d running; kubectl describe daemonset -n %s slowpoke-agent-%s): %w", len(ready), len(nodes), ns, runID, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// deleteAgents deletes a run's DaemonSet and waits until its pods are gone:
// each agent thaws every pod when it is told to end (SIGTERM).
func deleteAgents(ctx context.Context, c API, ns, runID string) error {
	name := "slowpoke-agent-" + runID
	err := c.AppsV1().DaemonSets(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	if err != nil && !apierrors.IsNotFound(err) {
		return explainAPI(err, "delete", "daemonsets", ns, name)
	}
	for {
		list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelAgent + "=" + runID})
		if err == nil && len(list.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the node agents of run %s did not end: %w", runID, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stopAgent ends an agent run: the controllers reset (every pod thawed),
// the agents deleted (they thaw again as they end), the Secret deleted.
func (d *Deployment) stopAgent() error {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.RolloutTimeout)
	defer cancel()
	var errs []error
	ns := d.k.Namespace
	d.logSkews()
	if d.dsMade {
		if err := deleteAgents(ctx, d.client, ns, d.run.ID); err != nil {
			errs = append(errs, err)
		} else {
			d.opts.Logf("deleted the node agents (DaemonSet %s/%s); every pod thawed, none changed", ns, d.daemonSetName())
		}
	}
	if d.secretMade {
		d.stopBeatOnce.Do(func() { close(d.stopBeat) })
		<-d.beatDone
		if err := d.client.CoreV1().Secrets(ns).Delete(ctx, d.secretName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, explainAPI(err, "delete", "secrets", ns, d.secretName()))
		}
	}
	return errors.Join(errs...)
}

// logSkews says, for a run whose pods span nodes, how far apart each
// other node froze and thawed its pods from the target's node, over the
// rounds of the run (the target controller's stats).
func (d *Deployment) logSkews() {
	if len(d.agents) < 2 {
		return
	}
	s := d.targetControlled()
	if s == nil {
		return
	}
	st, err := s.Control.Stats()
	if err != nil {
		return
	}
	for _, k := range st.NodeSkews {
		if k.Rounds == 0 && k.Missing == 0 {
			continue // a run under way, or lost: nothing summarised yet
		}
		d.opts.Logf("round skew across nodes, %s as the target, node %s: %d rounds (%d unreported, %d ended by the node's cap); freeze start p50 %v, p99 %v, max %v; thaw p50 %v, p99 %v, max %v",
			s.Name, k.Node, k.Rounds, k.Missing, k.Capped,
			time.Duration(k.StartP50NS), time.Duration(k.StartP99NS), time.Duration(k.StartMaxNS),
			time.Duration(k.EndP50NS), time.Duration(k.EndP99NS), time.Duration(k.EndMaxNS))
		d.opts.Logf("round lag across nodes, %s as the target, node %s: froze %v, thawed %v later at p50 (signed); its pauses lasted %v longer at p50 (p1 %v, p99 %v); %d ended by its own timer at the length asked, %d frozen again for a late lengthening",
			s.Name, k.Node, time.Duration(k.LateStartP50NS), time.Duration(k.LateEndP50NS),
			time.Duration(k.LongerP50NS), time.Duration(k.LongerP1NS), time.Duration(k.LongerP99NS), k.Timed, k.Refrozen)
		if k.DeliverStartP50NS > 0 {
			d.opts.Logf("round frames across nodes, %s as the target, node %s: sent to read by its agent, freeze p50 %v, p99 %v; thaw p50 %v, p99 %v",
				s.Name, k.Node, time.Duration(k.DeliverStartP50NS), time.Duration(k.DeliverStartP99NS),
				time.Duration(k.DeliverEndP50NS), time.Duration(k.DeliverEndP99NS))
		}
	}
}

// targetControlled is the target's service where its controller is
// reachable, or nil. Its node's agent holds the rounds across nodes: the
// controllers of other services in that agent report the same skews and
// losses (the agent's), which are not theirs.
func (d *Deployment) targetControlled() *service {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.services[d.target]; s != nil && s.Control != nil {
		return s
	}
	return nil
}

// controlled lists, in spec order, the services whose controllers are
// reachable.
func (d *Deployment) controlled() []*service {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ctls []*service
	for _, sv := range d.spec.Services {
		if s := d.services[sv.Name]; s != nil && s.Control != nil {
			ctls = append(ctls, s)
		}
	}
	return ctls
}

// checkPeers returns, in a run whose pods span nodes, how the target's
// agent lost another node's agent mid-slowdown (a cut network, an agent
// killed), or nil.
func (d *Deployment) checkPeers() error {
	if len(d.agents) < 2 {
		return nil
	}
	s := d.targetControlled()
	if s == nil {
		return nil
	}
	// A loss is reported until the next point connects again, even where
	// the slowdown ended meanwhile (its lease lapsed: the orchestrator's
	// renewals may have been held up by the same cut).
	st, err := s.Control.Stats()
	if err != nil {
		return nil
	}
	for _, k := range st.NodeSkews {
		if k.Lost != "" {
			return fmt.Errorf("node %s: the target's (%s) agent lost that node's agent mid-run: %s", k.Node, s.Name, k.Lost)
		}
	}
	return nil
}

// checkAgent returns how a service's pod or the agent failed during an
// agent run, or nil: a pod deleted or restarted (its UID or restart count
// changed), or the agent's pod gone or restarted.
func (d *Deployment) checkAgent() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ns := d.k.Namespace
	for _, a := range d.agents {
		p, err := d.client.CoreV1().Pods(ns).Get(ctx, a.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && p.UID != a.UID):
			return fmt.Errorf("node %s: the node agent's pod %s/%s was deleted during the run (it thawed every pod as it ended)", a.Spec.NodeName, ns, a.Name)
		case err != nil:
			continue
		case p.DeletionTimestamp != nil:
			return fmt.Errorf("node %s: the node agent's pod %s/%s is being deleted (evicted, or its node drained?); it thaws every pod as it ends", a.Spec.NodeName, ns, a.Name)
		case restarts(p) != restarts(&a):
			return fmt.Errorf("node %s: the node agent in pod %s/%s restarted during the run (kubectl logs -n %s %s -c %s --previous); its watchdog thaws what it had frozen", a.Spec.NodeName, ns, a.Name, ns, a.Name, agentContainer)
		}
	}
	if err := d.checkPeers(); err != nil {
		return err
	}
	for _, sv := range d.spec.Services {
		for _, ref := range d.pods[sv.Name] {
			p, err := d.client.CoreV1().Pods(ns).Get(ctx, ref.name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err) || (err == nil && string(p.UID) != ref.uid):
				return fmt.Errorf("service %q: its pod %s/%s on node %s was deleted during the run", sv.Name, ns, ref.name, ref.node)
			case err != nil:
				continue
			case p.DeletionTimestamp != nil:
				return fmt.Errorf("service %q: its pod %s/%s on node %s is being deleted (evicted, or its node drained?)", sv.Name, ns, ref.name, ref.node)
			case restarts(p) != ref.restarts:
				return fmt.Errorf("service %q: a container of its pod %s/%s on node %s restarted during the run (kubectl describe pod -n %s %s)", sv.Name, ns, ref.name, ref.node, ns, ref.name)
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func countPods(m map[string][]podRef) int {
	n := 0
	for _, p := range m {
		n += len(p)
	}
	return n
}

// restoreAgents deletes the agents' DaemonSets of the runs that are not
// live, waiting until their pods are gone (each agent thaws every pod as
// it ends), and then, on each node they ran on, thaws whatever an agent
// killed outright left recorded (a pod running `slowpoke agent
// --thaw-only`, deleted once it succeeded). It returns the DaemonSets it
// deleted.
func restoreAgents(ctx context.Context, c API, ns string, live map[string]bool, logf func(string, ...any)) ([]string, error) {
	list, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRun})
	if err != nil {
		return nil, explainAPI(err, "list", "daemonsets", ns, "")
	}
	var deleted []string
	var errs []error
	for i := range list.Items {
		ds := &list.Items[i]
		id := ds.Labels[LabelRun]
		if live[id] {
			continue
		}
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelAgent + "=" + id})
		if err != nil {
			errs = append(errs, explainAPI(err, "list", "pods", ns, ""))
			continue
		}
		nodes := map[string]bool{}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				nodes[p.Spec.NodeName] = true
			}
		}
		if err := deleteAgents(ctx, c, ns, id); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, ds.Name)
		logf("deleted the node agents of run %s (DaemonSet %s/%s); they thawed every pod as they ended", id, ns, ds.Name)
		tpl := ds.Spec.Template.DeepCopy()
		for _, node := range sortedKeys(nodes) {
			if err := thawNode(ctx, c, ns, id, node, tpl); err != nil {
				errs = append(errs, err)
			} else {
				logf("node %s: nothing left frozen", node)
			}
		}
	}
	return deleted, errors.Join(errs...)
}

// thawNode runs `slowpoke agent --thaw-only` on node, in a pod like the
// agents' (tpl), and waits until it succeeded.
func thawNode(ctx context.Context, c API, ns, runID, node string, tpl *corev1.PodTemplateSpec) error {
	spec := tpl.Spec.DeepCopy()
	spec.NodeName, spec.Affinity, spec.RestartPolicy = node, nil, corev1.RestartPolicyNever
	spec.Containers = spec.Containers[:1] // the agent's, without the watchdog
	ctr := &spec.Containers[0]
	ctr.Command = []string{"/slowpoke", "agent", "--thaw-only", "--cgroup-root", agentCgroup, "--state-dir", agentStateDir}
	ctr.Env = nil
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "slowpoke-thaw-" + runID + "-", Labels: map[string]string{LabelAgent + "-thaw": runID}}, Spec: *spec}
	made, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", node, explainAPI(err, "create", "pods", ns, pod.GenerateName))
	}
	defer c.CoreV1().Pods(ns).Delete(context.Background(), made.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	for deadline := time.Now().Add(time.Minute); ; {
		p, err := c.CoreV1().Pods(ns).Get(ctx, made.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			return fmt.Errorf("node %s: %w", node, explainAPI(err, "get", "pods", ns, made.Name))
		case p.Status.Phase == corev1.PodSucceeded:
			return nil
		case p.Status.Phase == corev1.PodFailed || stuckReason(p) != "":
			return fmt.Errorf("node %s: the pod that thaws what agents left failed (%s %s; kubectl logs -n %s %s)", node, p.Status.Phase, stuckReason(p), ns, p.Name)
		case time.Now().After(deadline):
			return fmt.Errorf("node %s: the pod that thaws what agents left did not finish in a minute (kubectl describe pod -n %s %s)", node, ns, p.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
