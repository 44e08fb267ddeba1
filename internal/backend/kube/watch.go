package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// watchEvery is how often watch looks at the pods.
const watchEvery = time.Second

// watch fails the deployment when a service's pod goes away or one of its
// containers ends (the service, or its controller, died), until Stop.
func (d *Deployment) watch() {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-d.stopRenew:
			return
		case <-d.failure.Done():
			return
		case <-t.C:
		}
		if d.agent {
			if err := d.checkAgent(); err != nil {
				d.mu.Lock()
				expected := d.stopped
				d.mu.Unlock()
				if !expected {
					d.failure.Fail(err)
					return
				}
			}
			continue
		}
		for _, s := range d.settled() {
			if err := d.check(s); err != nil {
				d.mu.Lock()
				expected := d.stopped || d.replacing[s.Name]
				d.mu.Unlock()
				if !expected {
					d.failure.Fail(err)
					return
				}
			}
		}
	}
}

// check returns how s's pod failed, or nil while it runs.
func (d *Deployment) check(s *service) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ns := d.k.Namespace
	p, err := d.client.CoreV1().Pods(ns).Get(ctx, s.pod, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("service %q: its pod %s/%s was deleted during the run", s.Name, ns, s.pod)
	case err != nil:
		return nil // the API server's trouble is not the service's death
	case p.DeletionTimestamp != nil:
		return fmt.Errorf("service %q: its pod %s/%s is being deleted (evicted, or its node drained?)", s.Name, ns, s.pod)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != s.container {
			continue
		}
		var term *corev1.ContainerStateTerminated
		switch {
		case cs.State.Terminated != nil:
			term = cs.State.Terminated
		case cs.RestartCount > 0 && cs.LastTerminationState.Terminated != nil:
			term = cs.LastTerminationState.Terminated
		case cs.RestartCount > 0:
			term = &corev1.ContainerStateTerminated{Reason: "restarted"}
		}
		if term != nil {
			return fmt.Errorf("service %q died during the run (%s); %s", s.Name, describeTermination(term), d.logTail(ctx, s, cs.State.Terminated == nil))
		}
	}
	return nil
}

func describeTermination(t *corev1.ContainerStateTerminated) string {
	var parts []string
	if t.Reason != "" {
		parts = append(parts, t.Reason)
	}
	if t.Signal != 0 {
		parts = append(parts, fmt.Sprintf("signal %d", t.Signal))
	} else if t.ExitCode != 0 {
		parts = append(parts, fmt.Sprintf("exit status %d", t.ExitCode))
	}
	if len(parts) == 0 {
		return "its container ended"
	}
	return "its container ended: " + strings.Join(parts, ", ")
}

// logTail returns the last lines of s's container's log (of its previous
// instance, after a restart), with the command that shows all of it.
func (d *Deployment) logTail(ctx context.Context, s *service, previous bool) string {
	req := d.client.CoreV1().Pods(d.k.Namespace).GetLogs(s.pod, &corev1.PodLogOptions{Container: s.container, TailLines: ptr.To[int64](20), Previous: previous})
	b, err := req.DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("its log: %s (not readable now: %v)", s.LogPath, err)
	}
	tail := strings.TrimRight(string(b), "\n")
	if tail == "" {
		return "its log (" + s.LogPath + ") is empty"
	}
	return fmt.Sprintf("the last lines of its log (%s):\n%s", s.LogPath, tail)
}

// Watch returns a context that is cancelled, with the failure as its
// cause, when a service's pod fails or goes away during the run.
func (d *Deployment) Watch(parent context.Context) (context.Context, context.CancelFunc) {
	return d.failure.Watch(parent)
}

// Explain returns the failure behind err, waiting a moment longer than
// watch does for it to be seen, or err.
func (d *Deployment) Explain(err error) error {
	return d.failure.Explain(err, 2*watchEvery+time.Second)
}
