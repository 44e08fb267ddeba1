package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// stuck are the container states that no wait will cure.
var stuck = []string{"ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff", "RunContainerError"}

// waitRollout waits, as `kubectl rollout status` does, until Deployment
// ns/name has rolled out completely, and returns its one running, ready pod
// for which isNew holds. A new pod stuck (an image that cannot be had, a
// crash loop) ends the wait at once with what its status says.
func waitRollout(ctx context.Context, c API, ns, name string, isNew func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var last string
	for {
		dep, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, explainAPI(err, "get", "deployments", ns, name)
		}
		for _, cond := range dep.Status.Conditions {
			if cond.Type == appsv1.DeploymentProgressing && cond.Reason == "ProgressDeadlineExceeded" {
				return nil, fmt.Errorf("Deployment %s/%s exceeded its progress deadline: %s", ns, name, cond.Message)
			}
		}
		sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("Deployment %s/%s: selector: %w", ns, name, err)
		}
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, explainAPI(err, "list", "pods", ns, "")
		}
		var ready *corev1.Pod
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil || !isNew(p) {
				continue
			}
			if why := stuckReason(p); why != "" {
				return nil, fmt.Errorf("pod %s/%s cannot start: %s (kubectl describe pod -n %s %s)", ns, p.Name, why, ns, p.Name)
			}
			if p.Status.Phase == corev1.PodRunning && podReady(p) && p.Status.PodIP != "" {
				ready = p
			}
		}
		want := int32(1)
		if dep.Spec.Replicas != nil {
			want = *dep.Spec.Replicas
		}
		st := dep.Status
		done := dep.Generation <= st.ObservedGeneration && st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want
		if done && ready != nil {
			return ready, nil
		}
		last = fmt.Sprintf("%d of %d updated, %d available, %d in all", st.UpdatedReplicas, want, st.AvailableReplicas, st.Replicas)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("Deployment %s/%s did not roll out (%s): %w", ns, name, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
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

// unschedulableFor is how long a pod may stay unschedulable before the
// wait gives up: long enough for resources to free up, too short for a
// deadlock (a rolling update of a pod on a host port) to pass unseen.
const unschedulableFor = 30 * time.Second

// stuckReason says why a pod cannot start, or "".
func stuckReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			time.Since(c.LastTransitionTime.Time) > unschedulableFor {
			return fmt.Sprintf("unschedulable for %v: %s (a pod on a host port or the host network needs strategy: Recreate)", unschedulableFor, c.Message)
		}
	}
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && slices.Contains(stuck, w.Reason) {
			msg := strings.TrimSpace(w.Message)
			if msg == "" {
				msg = "no message"
			}
			return fmt.Sprintf("container %q: %s: %s", cs.Name, w.Reason, msg)
		}
	}
	return ""
}

// restoreDeployment puts back ns/name's original template, if slowpoke
// changed it (run runID only, unless runID is ""), and removes slowpoke's
// annotations; it reports whether there was anything to restore.
func restoreDeployment(ctx context.Context, c API, ns, name, runID string) (bool, error) {
	restored := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return explainAPI(err, "get", "deployments", ns, name)
		}
		enc, ok := cur.Annotations[AnnotationOriginal]
		if !ok {
			return nil
		}
		if runID != "" && runOf(cur.Annotations[AnnotationRun]) != runID {
			return nil // another run's
		}
		orig, err := decodeTemplate(enc)
		if err != nil {
			return fmt.Errorf("Deployment %s/%s: %w", ns, name, err)
		}
		cur.Spec.Template = *orig
		delete(cur.Annotations, AnnotationOriginal)
		delete(cur.Annotations, AnnotationRun)
		if _, err := c.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return explainAPI(err, "update", "deployments", ns, name)
		}
		restored = true
		return nil
	})
	return restored, err
}

// Restore puts back every Deployment of s that a slowpoke run changed and
// left (its orchestrator killed), deletes the Secrets such runs made, and
// waits for the rollouts. A run that still lives (its Secret is renewed
// while Restore looks) is left alone, its Deployments and its Secret, and
// Restore then returns an error that names it. It reports what it does
// with logf.
func Restore(ctx context.Context, s *spec.Spec, c API, logf func(string, ...any)) error {
	if s.Kubernetes == nil {
		return errors.New("the spec has no kubernetes section: there is nothing on a cluster to restore")
	}
	if c == nil {
		var err error
		if c, err = Client(s.Kubernetes); err != nil {
			return err
		}
	}
	ns := s.Kubernetes.Namespace
	// Which runs live is known before anything changes: without it, a
	// live run's Deployments and Secret would go from under it.
	secrets, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRun})
	if err != nil {
		return explainAPI(err, "list", "secrets", ns, "")
	}
	live, err := liveRuns(ctx, c, ns, secrets.Items, logf)
	if err != nil {
		return err
	}
	r := &restoration{c: c, ns: ns, live: live, logf: logf, kept: map[string][]string{}}
	agents, err := restoreAgents(ctx, c, ns, live, logf)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	for i := range s.Services {
		r.restoreService(ctx, &s.Services[i])
	}
	r.deleteSecrets(ctx, secrets.Items)
	r.waitRollouts(ctx)
	r.reportKept()
	if len(r.rolled) == 0 && len(agents) == 0 && len(r.errs) == 0 {
		logf("nothing to restore in namespace %q: no Deployment of %q is under slowpoke", ns, s.Name)
	}
	return errors.Join(r.errs...)
}

// restoration is what one Restore works with in namespace ns, and what it
// has done so far.
type restoration struct {
	c    API
	ns   string
	live map[string]bool // the runs that still live, by id
	logf func(string, ...any)

	errs   []error
	rolled []string            // the Deployments put back, rolling out
	kept   map[string][]string // a live run's description: its Deployments
}

// restoreService puts back sv's Deployment if a run that no longer lives
// left it under slowpoke; a live run's is kept.
func (r *restoration) restoreService(ctx context.Context, sv *spec.Service) {
	name := deploymentName(sv)
	dep, err := r.c.AppsV1().Deployments(r.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		r.errs = append(r.errs, serviceErr(sv.Name, explainAPI(err, "get", "deployments", r.ns, name)))
		return
	}
	if _, ok := dep.Annotations[AnnotationOriginal]; !ok {
		return
	}
	id := runOf(dep.Annotations[AnnotationRun])
	if id != "" && r.live[id] {
		run := describeRun(dep.Annotations[AnnotationRun])
		r.kept[run] = append(r.kept[run], name)
		return
	}
	start := time.Now()
	ok, err := restoreDeployment(ctx, r.c, r.ns, name, id)
	if err != nil {
		r.errs = append(r.errs, serviceErr(sv.Name, err))
		return
	}
	if ok {
		r.rolled = append(r.rolled, name)
		r.logf("restored Deployment %s/%s (%s)", r.ns, name, time.Since(start).Round(time.Millisecond))
	}
}

// deleteSecrets deletes the Secrets of the runs that no longer live.
func (r *restoration) deleteSecrets(ctx context.Context, secrets []corev1.Secret) {
	for _, sec := range secrets {
		if r.live[sec.Labels[LabelRun]] {
			continue
		}
		if err := r.c.CoreV1().Secrets(r.ns).Delete(ctx, sec.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			r.errs = append(r.errs, explainAPI(err, "delete", "secrets", r.ns, sec.Name))
		} else {
			r.logf("deleted Secret %s/%s", r.ns, sec.Name)
		}
	}
}

// waitRollouts waits until every Deployment put back has rolled out.
func (r *restoration) waitRollouts(ctx context.Context) {
	for _, name := range r.rolled {
		if _, err := waitRollout(ctx, r.c, r.ns, name, func(p *corev1.Pod) bool { return p.Annotations[AnnotationRun] == "" }); err != nil {
			r.errs = append(r.errs, err)
		}
	}
}

// reportKept adds an error for each live run whose Deployments were kept
// under slowpoke, in the order of the runs' descriptions.
func (r *restoration) reportKept() {
	for _, run := range slices.Sorted(maps.Keys(r.kept)) {
		names := r.kept[run]
		r.errs = append(r.errs, fmt.Errorf("left Deployments %s in namespace %q under slowpoke: %s still runs (its Secret was renewed meanwhile) and puts them back when it ends; stop that run, or run `slowpoke restore` again once it is gone",
			strings.Join(names, ", "), r.ns, run))
	}
}

// maxLiveWait bounds how long Restore watches for renewals.
const maxLiveWait = 30 * time.Second

// liveRuns says which of the runs whose Secrets are given still live, by
// their ids: a run renews its Secret every AnnotationRenewEvery while its
// orchestrator lives, so a Secret that changes within twice that and a
// second more is a live run's. A Secret without the annotation (made by an
// older slowpoke) is taken to be renewed every RenewSecretEvery.
func liveRuns(ctx context.Context, c API, ns string, secrets []corev1.Secret, logf func(string, ...any)) (map[string]bool, error) {
	live := map[string]bool{}
	if len(secrets) == 0 {
		return live, nil
	}
	seen := map[string]string{} // name: resourceVersion
	var wait time.Duration
	for _, sec := range secrets {
		every, err := time.ParseDuration(sec.Annotations[AnnotationRenewEvery])
		if err != nil || every <= 0 {
			every = RenewSecretEvery
		}
		wait = max(wait, 2*every+time.Second)
		seen[sec.Name] = sec.ResourceVersion
	}
	wait = min(wait, maxLiveWait)
	logf("looking whether the runs of %d slowpoke Secrets in namespace %q still run (up to %v)", len(secrets), ns, wait)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for deadline := time.Now().Add(wait); time.Now().Before(deadline) && len(live) < len(seen); {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		list, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRun})
		if err != nil {
			return nil, explainAPI(err, "list", "secrets", ns, "")
		}
		for _, sec := range list.Items {
			if rv, ok := seen[sec.Name]; ok && rv != sec.ResourceVersion {
				live[sec.Labels[LabelRun]] = true
			}
		}
	}
	return live, nil
}
