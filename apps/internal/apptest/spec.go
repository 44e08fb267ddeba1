package apptest

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// Spec mirrors the application spec format (internal/spec documents it),
// decoded strictly so that a misspelt field fails the test.
type Spec struct {
	Name     string    `yaml:"name"`
	Services []Service `yaml:"services"`
	Entry    string    `yaml:"entry"`
	Workload Workload  `yaml:"workload"`
}

// Service is a service of a spec.
type Service struct {
	Name     string            `yaml:"name"`
	Command  string            `yaml:"command"`
	Args     []string          `yaml:"args"`
	Env      map[string]string `yaml:"env"`
	Port     int               `yaml:"port"`
	Protocol string            `yaml:"protocol"`
	CPUs     int               `yaml:"cpus"`
	Ready    *struct {
		HTTPPath string `yaml:"http_path"`
	} `yaml:"ready"`
	GroundTruth *struct {
		Env    string  `yaml:"env"`
		BaseUS float64 `yaml:"base_us"`
	} `yaml:"ground_truth"`
}

// Workload is the workload of a spec.
type Workload struct {
	Connections int       `yaml:"connections"`
	Warmup      string    `yaml:"warmup"`
	Duration    string    `yaml:"duration"`
	Requests    []Request `yaml:"requests"`
}

// Request is a request of a workload.
type Request struct {
	Name    string            `yaml:"name"`
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers"`
	Body    string            `yaml:"body"`
	Weight  float64           `yaml:"weight"`
}

var serviceName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// CheckSpec loads the spec at path and checks it against app: the same
// services with the ports and protocols of app's table, each started as
// "../../bin/<app> -service <name> -port <port>", unique names and ports,
// target (alone) carrying EXTRA_WORK_US=1000 and its ground truth, the entry
// at the front end, and the request mix given as name -> weight.
func CheckSpec(t *testing.T, path string, app *svc.App, target string, mix map[string]float64) *Spec {
	t.Helper()
	s := LoadSpec(t, path)
	errorf := func(format string, args ...any) { t.Errorf("%s: %s", path, fmt.Sprintf(format, args...)) }
	if s.Name != app.Name {
		errorf("name %q, want %q", s.Name, app.Name)
	}
	if len(s.Services) != len(app.Services) {
		errorf("%d services, want %d", len(s.Services), len(app.Services))
	}
	names, ports := map[string]bool{}, map[int]string{}
	for _, sv := range s.Services {
		if !serviceName.MatchString(sv.Name) || names[sv.Name] {
			errorf("service name %q invalid or repeated", sv.Name)
		}
		names[sv.Name] = true
		if other, ok := ports[sv.Port]; ok {
			errorf("port %d of %s already used by %s", sv.Port, sv.Name, other)
		}
		ports[sv.Port] = sv.Name
		info, ok := app.Service(sv.Name)
		if !ok {
			errorf("service %q is not a service of %s", sv.Name, app.Name)
			continue
		}
		if sv.Port != info.Port || sv.Protocol != string(info.Protocol) {
			errorf("%s: port %d protocol %q, want %d %q", sv.Name, sv.Port, sv.Protocol, info.Port, info.Protocol)
		}
		if want := "../../bin/" + app.Name; sv.Command != want {
			errorf("%s: command %q, want %q", sv.Name, sv.Command, want)
		}
		if want := []string{"-service", sv.Name, "-port", strconv.Itoa(info.Port)}; strings.Join(sv.Args, " ") != strings.Join(want, " ") {
			errorf("%s: args %q, want %q", sv.Name, sv.Args, want)
		}
		if sv.CPUs < 1 {
			errorf("%s: cpus %d", sv.Name, sv.CPUs)
		}
		if info.Protocol == svc.HTTP && (sv.Ready == nil || sv.Ready.HTTPPath != "/healthz") {
			errorf("%s: want ready: {http_path: /healthz}", sv.Name)
		}
		isTarget := sv.Name == target
		if gt := sv.GroundTruth; isTarget != (gt != nil) || (gt != nil && (gt.Env != svc.EnvExtraWork || gt.BaseUS != 1000)) {
			errorf("%s: ground_truth %+v (target %v)", sv.Name, gt, isTarget)
		}
		if got := sv.Env[svc.EnvExtraWork]; isTarget != (got == "1000") || (!isTarget && got != "") {
			errorf("%s: %s=%q (target %v)", sv.Name, svc.EnvExtraWork, got, isTarget)
		}
	}
	if !names[target] {
		errorf("no target service %q", target)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d", app.Services[0].Port); s.Entry != want {
		errorf("entry %q, want %q", s.Entry, want)
	}
	w := s.Workload
	if w.Connections <= 0 || w.Warmup == "" || w.Duration == "" {
		errorf("workload: connections %d warmup %q duration %q", w.Connections, w.Warmup, w.Duration)
	}
	got := map[string]float64{}
	for _, r := range w.Requests {
		if _, dup := got[r.Name]; dup {
			errorf("request %q repeated", r.Name)
		}
		got[r.Name] = r.Weight
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			errorf("request %q: method %q", r.Name, r.Method)
		}
		if !strings.HasPrefix(r.Path, "/") {
			errorf("request %q: path %q", r.Name, r.Path)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(mix) {
		errorf("request mix %v, want %v", got, mix)
	}
	return s
}

// LoadSpec decodes the spec at path strictly.
func LoadSpec(t *testing.T, path string) *Spec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &s
}

// SendAll sends every request of the workload to the front end at base a few
// times and expects 200 each time; it returns the replies by request name.
func SendAll(t *testing.T, base string, s *Spec, times int) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, r := range s.Workload.Requests {
		for range times {
			code, body := Do(t, r.Method, base+r.Path, r.Headers, r.Body)
			if code != http.StatusOK {
				t.Fatalf("request %q (%s %s %s): status %d: %s", r.Name, r.Method, r.Path, r.Body, code, body)
			}
			out[r.Name] = body
		}
	}
	return out
}
