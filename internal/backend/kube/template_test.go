package kube

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

func template(containers ...corev1.Container) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: containers}}
}

func TestInject(t *testing.T) {
	app := corev1.Container{Name: "cart", Image: "shop/cart:1", Command: []string{"/cart"}, Args: []string{"-port", "8081"},
		Env: []corev1.EnvVar{{Name: "WORK", Value: "100"}}}
	sidecar := corev1.Container{Name: "proxy", Image: "proxy:1", Command: []string{"/proxy"}}
	noCommand := corev1.Container{Name: "cart", Image: "shop/cart:1", Args: []string{"-v"}}
	tests := []struct {
		name      string
		tpl       *corev1.PodTemplateSpec
		svc       spec.Service
		env       map[string]string
		wantIndex int
		wantCmd   []string // after the controller's "--"
		wantEnv   map[string]string
		wantErr   string
	}{
		{name: "only container", tpl: template(app), svc: spec.Service{Name: "cart"},
			wantCmd: []string{"/cart", "-port", "8081"}, wantEnv: map[string]string{"WORK": "100"}},
		{name: "named by the service", tpl: template(sidecar, app), svc: spec.Service{Name: "cart"}, wantIndex: 1,
			wantCmd: []string{"/cart", "-port", "8081"}},
		{name: "named in the spec", tpl: template(app, sidecar), svc: spec.Service{Name: "cart", Container: "proxy"}, wantIndex: 1,
			wantCmd: []string{"/proxy"}},
		{name: "ground truth and spec env over the container's", tpl: template(app),
			svc: spec.Service{Name: "cart", Env: map[string]string{"A": "1", "WORK": "90"}}, env: map[string]string{"WORK": "40"},
			wantCmd: []string{"/cart", "-port", "8081"}, wantEnv: map[string]string{"WORK": "40", "A": "1"}},
		{name: "entrypoint from the spec", tpl: template(noCommand), svc: spec.Service{Name: "cart", Command: "/bin/cart"},
			wantCmd: []string{"/bin/cart", "-v"}},
		{name: "entrypoint and args from the spec", tpl: template(noCommand), svc: spec.Service{Name: "cart", Command: "/bin/cart", Args: []string{"-x"}},
			wantCmd: []string{"/bin/cart", "-x"}},
		{name: "no command anywhere", tpl: template(noCommand), svc: spec.Service{Name: "cart"}, wantErr: "gives no command"},
		{name: "ambiguous", tpl: template(sidecar, corev1.Container{Name: "other"}), svc: spec.Service{Name: "cart"}, wantErr: "name the service's with container:"},
		{name: "missing container", tpl: template(app), svc: spec.Service{Name: "cart", Container: "nope"}, wantErr: `no container "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := tt.tpl.DeepCopy()
			in := injection{svc: &tt.svc, image: "slowpoke:dev", controlPort: 7072, runID: "abcd", secretName: "slowpoke-abcd",
				lease: 10 * time.Second, maxPause: time.Second, restart: 2, env: tt.env}
			got, err := inject(tt.tpl, in)
			if !reflect.DeepEqual(tt.tpl, orig) {
				t.Fatal("inject changed the template it was given")
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := got.Spec.Containers[tt.wantIndex]
			dash := -1
			for i, a := range c.Command {
				if a == "--" {
					dash = i
					break
				}
			}
			if dash < 0 || c.Command[0] != binDir+"/slowpoke" || c.Command[1] != "controller" || len(c.Args) != 0 {
				t.Fatalf("command %q args %q: want the controller wrapping the service", c.Command, c.Args)
			}
			ctl := strings.Join(c.Command[:dash], " ")
			for _, want := range []string{"--listen :7072", "--lease 10s", "--max-pause 1s", "--name " + tt.svc.Name} {
				if !strings.Contains(ctl, want) {
					t.Errorf("controller %q lacks %q", ctl, want)
				}
			}
			if !reflect.DeepEqual(c.Command[dash+1:], tt.wantCmd) {
				t.Errorf("service command %q, want %q", c.Command[dash+1:], tt.wantCmd)
			}
			env := map[string]corev1.EnvVar{}
			for _, v := range c.Env {
				if _, dup := env[v.Name]; dup {
					t.Errorf("env %s set twice", v.Name)
				}
				env[v.Name] = v
			}
			for k, v := range tt.wantEnv {
				if env[k].Value != v {
					t.Errorf("env %s = %q, want %q", k, env[k].Value, v)
				}
			}
			if ref := env[controller.EnvSecret].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "slowpoke-abcd" {
				t.Errorf("the secret is not taken from the run's Secret: %+v", env[controller.EnvSecret])
			}
			if len(got.Spec.InitContainers) != 1 || got.Spec.InitContainers[0].Image != "slowpoke:dev" {
				t.Errorf("init containers %+v: want slowpoke's install", got.Spec.InitContainers)
			}
			if got.Annotations[AnnotationRun] != "abcd" || got.Annotations[AnnotationRestart] != "2" {
				t.Errorf("annotations %v", got.Annotations)
			}
			// Other containers are left as they were.
			for i := range got.Spec.Containers {
				if i != tt.wantIndex && !reflect.DeepEqual(got.Spec.Containers[i], orig.Spec.Containers[i]) {
					t.Errorf("container %d changed", i)
				}
			}
			// A template already injected is refused.
			if _, err := inject(got, in); err == nil {
				t.Error("an injected template was injected again")
			}
			// And the original survives the annotation's round trip.
			enc, err := encodeTemplate(orig)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := decodeTemplate(enc)
			if err != nil || !reflect.DeepEqual(dec, orig) {
				t.Errorf("template round trip: %v\n%+v\n%+v", err, dec, orig)
			}
		})
	}
}

func TestRunOf(t *testing.T) {
	for _, tc := range []struct{ annotation, want string }{
		{`{"id":"a1b2","host":"h","pid":3,"started":"2026-11-25T10:00:00Z"}`, "a1b2"},
		{`{"host":"h"}`, ""},
		{"", ""},
		{"not json", ""},
	} {
		if got := runOf(tc.annotation); got != tc.want {
			t.Errorf("runOf(%q) = %q, want %q", tc.annotation, got, tc.want)
		}
	}
}

// A CPU limit on a service's container is warned of once per service,
// and no limit (or a zero one) gives no warning.
func TestWarnCPULimit(t *testing.T) {
	var lines []string
	d := &Deployment{limitWarned: map[string]bool{}, opts: Options{Options: backend.Options{Logf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }}}}
	limited := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}
	d.warnCPULimit("cart", limited)
	d.warnCPULimit("cart", limited) // a restart of the same service
	d.warnCPULimit("catalog", corev1.ResourceRequirements{})
	d.warnCPULimit("currency", corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}})
	d.warnCPULimit("ads", corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}})
	if len(lines) != 1 || !strings.Contains(lines[0], `service "cart" runs under a CPU limit of 500m`) {
		t.Fatalf("warnings %q; want one, for cart's limit", lines)
	}
}
