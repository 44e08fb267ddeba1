package kube

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// Annotations and names slowpoke puts on the objects it changes.
const (
	// AnnotationOriginal, on a Deployment, is its pod template before
	// slowpoke changed it (JSON); its presence marks a Deployment under
	// slowpoke.
	AnnotationOriginal = "slowpoke.dev/original-template"
	// AnnotationRun, on a Deployment, says which run changed it (JSON
	// runRecord); on a pod template, the run's id.
	AnnotationRun = "slowpoke.dev/run"
	// AnnotationRestart, on a pod template, counts the run's restarts of
	// the service (ground truths), so that the new pod can be told from
	// the old.
	AnnotationRestart = "slowpoke.dev/restart"
	// LabelRun marks the run's Secret; its value is the run's id.
	LabelRun = "slowpoke.dev/run"
	// AnnotationRenewed, on a run's Secret, changes every
	// AnnotationRenewEvery while the run's orchestrator lives (its value
	// is the orchestrator's clock; that it changes is what counts), so
	// that `slowpoke restore` leaves a live run alone.
	AnnotationRenewed    = "slowpoke.dev/renewed"
	AnnotationRenewEvery = "slowpoke.dev/renew-every"

	binVolume   = "slowpoke-bin"
	binDir      = "/opt/slowpoke"
	installName = "slowpoke-install"
	secretKey   = "secret"
)

// runRecord says who changed a Deployment, for the error a later run gives.
type runRecord struct {
	ID      string    `json:"id"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// injection is what inject needs besides the template.
type injection struct {
	svc         *spec.Service
	image       string
	controlPort int
	runID       string
	secretName  string
	lease       time.Duration
	maxPause    time.Duration
	restart     int
	env         map[string]string // over the container's and the spec's
}

// findContainer returns the index of the service's container in pod: the
// one named in the spec, else the only one, else the one named as the
// service.
func findContainer(pod *corev1.PodSpec, svc *spec.Service) (int, error) {
	names := make([]string, len(pod.Containers))
	for i, c := range pod.Containers {
		names[i] = c.Name
	}
	want := svc.Container
	switch {
	case want == "" && len(pod.Containers) == 1:
		return 0, nil
	case want == "":
		want = svc.Name
		if i := slices.Index(names, want); i >= 0 {
			return i, nil
		}
		return -1, fmt.Errorf("the pod has containers %s: name the service's with container:", strings.Join(names, ", "))
	}
	if i := slices.Index(names, want); i >= 0 {
		return i, nil
	}
	return -1, fmt.Errorf("no container %q in the pod (it has %s)", want, strings.Join(names, ", "))
}

// inject returns a copy of tpl whose service container runs under a
// slowpoke controller; tpl is the original template, never one already
// injected.
func inject(tpl *corev1.PodTemplateSpec, in injection) (*corev1.PodTemplateSpec, error) {
	out := tpl.DeepCopy()
	pod := &out.Spec
	ci, err := findContainer(pod, in.svc)
	if err != nil {
		return nil, err
	}
	c := &pod.Containers[ci]
	cmdline := append(slices.Clone(c.Command), c.Args...)
	if len(c.Command) == 0 {
		if in.svc.Command == "" {
			return nil, fmt.Errorf("container %q gives no command (its image's entrypoint runs, which slowpoke cannot see): give it in the spec's command and args", c.Name)
		}
		args := in.svc.Args
		if len(args) == 0 {
			args = c.Args
		}
		cmdline = append([]string{in.svc.Command}, args...)
	}
	for _, v := range pod.Volumes {
		if v.Name == binVolume {
			return nil, fmt.Errorf("the pod already has a volume %q: is this template already under slowpoke?", binVolume)
		}
	}
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: binVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	mount := corev1.VolumeMount{Name: binVolume, MountPath: binDir}
	pod.InitContainers = append(pod.InitContainers, corev1.Container{
		Name:         installName,
		Image:        in.image,
		Command:      []string{"/slowpoke", "install", binDir + "/slowpoke"},
		VolumeMounts: []corev1.VolumeMount{mount},
	})
	c.Command = append([]string{binDir + "/slowpoke", "controller",
		"--name", in.svc.Name,
		"--listen", ":" + strconv.Itoa(in.controlPort),
		"--lease", in.lease.String(),
		"--max-pause", in.maxPause.String(),
		"--"}, cmdline...)
	c.Args = nil
	c.VolumeMounts = append(c.VolumeMounts, mount)
	env := map[string]string{}
	for k, v := range in.svc.Env {
		env[k] = v
	}
	for k, v := range in.env {
		env[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		setEnv(c, corev1.EnvVar{Name: k, Value: env[k]})
	}
	setEnv(c, corev1.EnvVar{Name: controller.EnvSecret, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: in.secretName}, Key: secretKey}}})
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnotationRun] = in.runID
	out.Annotations[AnnotationRestart] = strconv.Itoa(in.restart)
	return out, nil
}

// setEnv sets one variable of c, replacing any of that name.
func setEnv(c *corev1.Container, v corev1.EnvVar) {
	for i := range c.Env {
		if c.Env[i].Name == v.Name {
			c.Env[i] = v
			return
		}
	}
	c.Env = append(c.Env, v)
}

// encodeTemplate and decodeTemplate keep a template in AnnotationOriginal.
func encodeTemplate(tpl *corev1.PodTemplateSpec) (string, error) {
	b, err := json.Marshal(tpl)
	return string(b), err
}

func decodeTemplate(s string) (*corev1.PodTemplateSpec, error) {
	var tpl corev1.PodTemplateSpec
	if err := json.Unmarshal([]byte(s), &tpl); err != nil {
		return nil, fmt.Errorf("annotation %s is not a pod template: %v", AnnotationOriginal, err)
	}
	return &tpl, nil
}
