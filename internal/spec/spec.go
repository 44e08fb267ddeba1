package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/slowpoke-dev/slowpoke/internal/yamlerr"
)

// Defaults for fields the user may leave out.
const (
	DefaultProtocol = ProtocolHTTP
	DefaultCPUs     = 1
	// MaxPool is the largest pool a service may be given (the
	// instrumentation's largest admission limit).
	MaxPool             = 1 << 20
	DefaultReadyTimeout = 20 * time.Second
	DefaultConnections  = 64
	DefaultWarmup       = time.Second
	DefaultDuration     = 5 * time.Second
	DefaultMethod       = "GET"
	DefaultWeight       = 1.0
)

// Protocols a service may speak.
const (
	ProtocolHTTP = "http"
	ProtocolGRPC = "grpc"
)

// Spec describes an application: its services, its entry point and the
// workload to drive through it.
type Spec struct {
	Name     string    `yaml:"name"`
	Services []Service `yaml:"services"`
	Entry    string    `yaml:"entry"`
	Workload Workload  `yaml:"workload"`
	// Kubernetes, when set, says that the application is already deployed
	// on a Kubernetes cluster, one Deployment per service, instead of
	// being started here from each service's command.
	Kubernetes *Kubernetes `yaml:"kubernetes,omitempty"`
	// Dir is the absolute directory of the spec file; relative paths in the
	// spec are resolved against it.
	Dir string `yaml:"-"`
}

// Kubernetes says where an application deployed on a cluster is.
type Kubernetes struct {
	// Namespace holds the application's Deployments.
	Namespace string `yaml:"namespace"`
	// Kubeconfig is the kubeconfig file ("": $KUBECONFIG, then
	// ~/.kube/config, then the pod's service account in a cluster).
	Kubeconfig string `yaml:"kubeconfig,omitempty"`
	// Context is the kubeconfig context ("": its current context).
	Context string `yaml:"context,omitempty"`
	// Image holds the slowpoke binary at /slowpoke; an init container
	// copies it next to each service, whose container then runs under it.
	Image string `yaml:"image"`
	// ControlPort is the first controller port: the i-th service's
	// controller listens on ControlPort+i in its pod (distinct, so that
	// pods on the host network do not collide).
	ControlPort int `yaml:"control_port"`
}

// DefaultControlPort is Kubernetes.ControlPort's default.
const DefaultControlPort = 7070

// Service is one process of the application.
type Service struct {
	Name        string            `yaml:"name"`
	Command     string            `yaml:"command"`
	Args        []string          `yaml:"args,omitempty"`
	Env         map[string]string `yaml:"env,omitempty"`
	Dir         string            `yaml:"dir,omitempty"`
	Port        int               `yaml:"port"`
	Protocol    string            `yaml:"protocol"`
	CPUs        int               `yaml:"cpus"`
	Ready       Ready             `yaml:"ready"`
	GroundTruth *GroundTruth      `yaml:"ground_truth,omitempty"`
	// Pool, when set, is the most calls the service runs at once:
	// slowpoke's instrumentation in the service queues the rest, in every
	// run (slowpoke pools recommends it). nil: no limit.
	Pool *int `yaml:"pool,omitempty"`
	// Deployment and Container name the service's Deployment and its
	// container under Spec.Kubernetes (defaults: the service's name, and
	// the pod's only container, or the one with the service's name).
	// Command and Args are then optional: they are what the container
	// runs when its pod template gives no command.
	Deployment string `yaml:"deployment,omitempty"`
	Container  string `yaml:"container,omitempty"`
	// Attach, when set, names a service that already runs, started
	// outside slowpoke (by a script, an IDE, a process manager): slowpoke
	// finds its processes, pins, pauses and resumes them for the run and
	// leaves them as they were, instead of starting it from Command.
	// Command is then optional: with it, a run that must restart the
	// service (validate's ground truth) starts it from there.
	Attach *Attach `yaml:"attach,omitempty"`

	// specDir is Spec.Dir, remembered so that CommandPath needs no argument.
	specDir string
}

// Attach says how to find a running service's processes: exactly one of
// its fields is set.
type Attach struct {
	// Port: the process that listens on this TCP port (on this machine's
	// network namespace), and its children.
	Port int `yaml:"port,omitempty"`
	// PIDFile: the process whose PID this file holds, and its children.
	// A relative path is resolved against the spec's directory.
	PIDFile string `yaml:"pid_file,omitempty"`
	// Cgroup: every process of this cgroup and of the cgroups below it,
	// given as its directory (/sys/fs/cgroup/...) or as /proc/PID/cgroup
	// writes it (/system.slice/shop.service).
	Cgroup string `yaml:"cgroup,omitempty"`
	// Container: every process of a container of this machine's container
	// runtime, by its name or ID (docker, podman, nerdctl, or containerd's
	// ctr, in any namespace unless CONTAINERD_NAMESPACE names one): those
	// of the cgroup its init process is in.
	Container string `yaml:"container,omitempty"`
}

// Attached says whether the service is one that already runs (Attach).
func (s *Service) Attached() bool { return s.Attach != nil }

// CanRestart says why slowpoke cannot restart the service (validate's
// ground truth restarts the target with its work reduced), or returns
// nil: an attached service can be restarted only if it has a command.
//
// A container's command must start the service as a process of this
// machine: a runtime CLI's run or start would leave the service in a
// container that slowpoke neither pins nor pauses.
func (s *Service) CanRestart() error {
	if s.Attach == nil || strings.TrimSpace(s.Command) != "" {
		return nil
	}
	what := "a command (and args, env) that starts it"
	if s.Attach.Container != "" {
		what = "a command (and args, env) that starts the service as a process of this machine (not `docker run` or the like: a container that a runtime starts is out of slowpoke's reach)"
	}
	return fmt.Errorf("service %q is attached to (attach: %s) and has no command: validate's ground truth restarts it with its work really reduced, and slowpoke cannot start it again; give it %s, or use predict, which restarts nothing", s.Name, s.Attach, what)
}

// ErrNoGroundTruth is in CanValidate's error for a service without a
// ground_truth knob; callers say in their own words what to add.
var ErrNoGroundTruth = errors.New("no ground_truth")

// CanValidate says why validate cannot measure the service's ground truth,
// or returns nil: the ground truth restarts the service with its work
// really reduced, which needs a way to restart it (CanRestart, checked
// first) and its ground_truth knob (an error wrapping ErrNoGroundTruth).
func (s *Service) CanValidate() error {
	if err := s.CanRestart(); err != nil {
		return err
	}
	if s.GroundTruth == nil {
		return fmt.Errorf("service %q has %w: validate needs a way to really reduce its work (docs/spec.md)", s.Name, ErrNoGroundTruth)
	}
	return nil
}

// String writes the attach section as in the spec.
func (a *Attach) String() string {
	switch {
	case a == nil:
		return ""
	case a.Port != 0:
		return fmt.Sprintf("{port: %d}", a.Port)
	case a.PIDFile != "":
		return fmt.Sprintf("{pid_file: %s}", a.PIDFile)
	case a.Cgroup != "":
		return fmt.Sprintf("{cgroup: %s}", a.Cgroup)
	case a.Container != "":
		return fmt.Sprintf("{container: %s}", a.Container)
	}
	return "{}"
}

// Ready is a service's readiness probe. With HTTPPath empty the probe is a
// TCP connect to the service's port.
type Ready struct {
	HTTPPath string   `yaml:"http_path,omitempty"`
	Timeout  Duration `yaml:"timeout"`
}

// GroundTruth says how to really reduce a service's per-call CPU work, which
// `slowpoke validate` uses to check predictions against reality.
type GroundTruth struct {
	// Env is the environment variable that controls the work.
	Env string `yaml:"env"`
	// BaseUS is its value in the unmodified application; a reduction of
	// d µs sets Env to BaseUS - d.
	BaseUS float64 `yaml:"base_us"`
}

// Workload is the closed-loop load driven through the entry point.
type Workload struct {
	Connections int       `yaml:"connections"`
	Warmup      Duration  `yaml:"warmup"`
	Duration    Duration  `yaml:"duration"`
	Requests    []Request `yaml:"requests"`
}

// Request is one kind of user request, picked with probability proportional
// to its weight.
type Request struct {
	Name    string            `yaml:"name"`
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers,omitempty"`
	Body    string            `yaml:"body,omitempty"`
	Weight  float64           `yaml:"weight"`
}

// The raw* types mirror the file format with pointers wherever a default
// applies, so that an explicit zero ("cpus: 0") is rejected rather than
// mistaken for an absent field.
type rawSpec struct {
	Name     string       `yaml:"name"`
	Services []rawService `yaml:"services"`
	Entry    string       `yaml:"entry"`
	Workload rawWorkload  `yaml:"workload"`
	// Kubernetes has no defaults that a zero could be mistaken for but
	// control_port.
	Kubernetes *rawKubernetes `yaml:"kubernetes"`
}

type rawKubernetes struct {
	Namespace   string `yaml:"namespace"`
	Kubeconfig  string `yaml:"kubeconfig"`
	Context     string `yaml:"context"`
	Image       string `yaml:"image"`
	ControlPort *int   `yaml:"control_port"`
}

type rawService struct {
	Name        string            `yaml:"name"`
	Command     string            `yaml:"command"`
	Args        []string          `yaml:"args"`
	Env         map[string]string `yaml:"env"`
	Dir         string            `yaml:"dir"`
	Port        int               `yaml:"port"`
	Protocol    *string           `yaml:"protocol"`
	CPUs        *int              `yaml:"cpus"`
	Ready       rawReady          `yaml:"ready"`
	GroundTruth *GroundTruth      `yaml:"ground_truth"`
	Pool        *int              `yaml:"pool"`
	Deployment  string            `yaml:"deployment"`
	Container   string            `yaml:"container"`
	Attach      *Attach           `yaml:"attach"`
}

type rawReady struct {
	HTTPPath string    `yaml:"http_path"`
	Timeout  *Duration `yaml:"timeout"`
}

type rawWorkload struct {
	Connections *int         `yaml:"connections"`
	Warmup      *Duration    `yaml:"warmup"`
	Duration    *Duration    `yaml:"duration"`
	Requests    []rawRequest `yaml:"requests"`
}

type rawRequest struct {
	Name    string            `yaml:"name"`
	Method  *string           `yaml:"method"`
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers"`
	Body    string            `yaml:"body"`
	Weight  *float64          `yaml:"weight"`
}

// Load reads, parses, defaults and validates the spec at path.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	s, err := Parse(data, dir)
	if err != nil {
		return nil, &fileError{path: path, err: err}
	}
	return s, nil
}

// Parse decodes a spec strictly, applies defaults for absent fields and
// validates it. dir is the directory relative paths are resolved against
// (normally the spec file's); it is made absolute.
func Parse(data []byte, dir string) (*Spec, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var raw rawSpec
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("spec is empty")
		}
		return nil, vocabulary.Error(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("spec must be a single YAML document")
	}
	s := raw.spec(absDir)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func (r *rawSpec) spec(dir string) *Spec {
	s := &Spec{Name: r.Name, Entry: r.Entry, Dir: dir}
	if k := r.Kubernetes; k != nil {
		s.Kubernetes = &Kubernetes{Namespace: k.Namespace, Kubeconfig: k.Kubeconfig, Context: k.Context, Image: k.Image,
			ControlPort: deref(k.ControlPort, DefaultControlPort)}
		if s.Kubernetes.Namespace == "" {
			s.Kubernetes.Namespace = "default"
		}
		if s.Kubernetes.Kubeconfig != "" && !filepath.IsAbs(s.Kubernetes.Kubeconfig) {
			s.Kubernetes.Kubeconfig = filepath.Join(dir, s.Kubernetes.Kubeconfig)
		}
	}
	for _, rs := range r.Services {
		var att *Attach
		if rs.Attach != nil {
			a := *rs.Attach
			if a.PIDFile != "" && !filepath.IsAbs(a.PIDFile) {
				a.PIDFile = filepath.Join(dir, a.PIDFile)
			}
			att = &a
			if rs.Port == 0 && a.Port != 0 {
				rs.Port = a.Port // the port it listens on is the service's
			}
		}
		s.Services = append(s.Services, Service{
			Name:        rs.Name,
			Command:     rs.Command,
			Args:        rs.Args,
			Env:         rs.Env,
			Dir:         rs.Dir,
			Port:        rs.Port,
			Protocol:    deref(rs.Protocol, DefaultProtocol),
			CPUs:        deref(rs.CPUs, DefaultCPUs),
			Ready:       Ready{HTTPPath: rs.Ready.HTTPPath, Timeout: deref(rs.Ready.Timeout, Duration{DefaultReadyTimeout})},
			GroundTruth: rs.GroundTruth,
			Pool:        rs.Pool,
			Deployment:  rs.Deployment,
			Container:   rs.Container,
			Attach:      att,
			specDir:     dir,
		})
	}
	w := r.Workload
	s.Workload = Workload{
		Connections: deref(w.Connections, DefaultConnections),
		Warmup:      deref(w.Warmup, Duration{DefaultWarmup}),
		Duration:    deref(w.Duration, Duration{DefaultDuration}),
	}
	for _, rr := range w.Requests {
		s.Workload.Requests = append(s.Workload.Requests, Request{
			Name: rr.Name,
			// Methods are case-sensitive on the wire; users write "get".
			Method:  strings.ToUpper(deref(rr.Method, DefaultMethod)),
			Path:    rr.Path,
			Headers: rr.Headers,
			Body:    rr.Body,
			Weight:  deref(rr.Weight, DefaultWeight),
		})
	}
	return s
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// SetDefaults fills zero-valued defaultable fields of a spec built in code.
// Parse and Load apply defaults themselves (and, unlike SetDefaults, reject
// explicit zeros).
func (s *Spec) SetDefaults() {
	for i := range s.Services {
		sv := &s.Services[i]
		if sv.Protocol == "" {
			sv.Protocol = DefaultProtocol
		}
		if sv.CPUs == 0 {
			sv.CPUs = DefaultCPUs
		}
		if sv.Ready.Timeout.Duration == 0 {
			sv.Ready.Timeout.Duration = DefaultReadyTimeout
		}
		if sv.specDir == "" {
			sv.specDir = s.Dir
		}
	}
	w := &s.Workload
	if w.Connections == 0 {
		w.Connections = DefaultConnections
	}
	if w.Warmup.Duration == 0 {
		w.Warmup.Duration = DefaultWarmup
	}
	if w.Duration.Duration == 0 {
		w.Duration.Duration = DefaultDuration
	}
	for i := range w.Requests {
		r := &w.Requests[i]
		if r.Method == "" {
			r.Method = DefaultMethod
		}
		if r.Weight == 0 {
			r.Weight = DefaultWeight
		}
	}
}

// Service returns the service called name.
func (s *Spec) Service(name string) (*Service, bool) {
	for i := range s.Services {
		if s.Services[i].Name == name {
			return &s.Services[i], true
		}
	}
	return nil, false
}

// ServiceNames returns the service names in spec order.
func (s *Spec) ServiceNames() []string {
	names := make([]string, len(s.Services))
	for i, sv := range s.Services {
		names[i] = sv.Name
	}
	return names
}

// CheckTarget reports whether name is a service of the spec, listing the
// known services if it is not.
func (s *Spec) CheckTarget(name string) error {
	known := strings.Join(s.ServiceNames(), ", ")
	if name == "" {
		return fmt.Errorf("no target service given; services of %q: %s", s.Name, known)
	}
	if _, ok := s.Service(name); !ok {
		return fmt.Errorf("unknown target service %q; services of %q: %s", name, s.Name, known)
	}
	return nil
}

// URL returns the absolute URL of a request: the entry with the request's
// path appended.
func (s *Spec) URL(r Request) string {
	return strings.TrimSuffix(s.Entry, "/") + r.Path
}

// CommandPath returns the command to execute. A relative command containing
// a '/' is resolved against the spec file's directory; a bare name is
// returned as is, to be looked up in PATH when the service is started.
func (s *Service) CommandPath() string {
	c := s.Command
	if filepath.IsAbs(c) || !strings.ContainsRune(c, '/') || s.specDir == "" {
		return c
	}
	return filepath.Join(s.specDir, c)
}

// WorkDir returns the directory the service runs in: Dir resolved against
// specDir, or specDir itself when Dir is empty.
func (s *Service) WorkDir(specDir string) string {
	switch {
	case s.Dir == "":
		return specDir
	case filepath.IsAbs(s.Dir):
		return filepath.Clean(s.Dir)
	default:
		return filepath.Join(specDir, s.Dir)
	}
}

// Value returns the ground-truth environment value that reduces the
// service's per-call CPU work by reductionUS microseconds.
func (g *GroundTruth) Value(reductionUS float64) string {
	return strconv.FormatFloat(g.BaseUS-reductionUS, 'f', -1, 64)
}

// fileError prefixes a spec error with the file name and, when there are
// several problems, puts each on its own line.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string {
	var list interface{ Unwrap() []error }
	if errors.As(e.err, &list) && len(list.Unwrap()) > 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d problems:", e.path, len(list.Unwrap()))
		for _, err := range list.Unwrap() {
			b.WriteString("\n  ")
			b.WriteString(err.Error())
		}
		return b.String()
	}
	return e.path + ": " + e.err.Error()
}

func (e *fileError) Unwrap() error { return e.err }

// vocabulary words YAML errors in the terms of the spec format.
var vocabulary = &yamlerr.Vocabulary{
	Package: "spec",
	Types: map[string]yamlerr.Type{
		"rawSpec":       {Where: "the spec", Go: reflect.TypeFor[rawSpec]()},
		"rawService":    {Where: "a service", Go: reflect.TypeFor[rawService]()},
		"rawReady":      {Where: "ready", Go: reflect.TypeFor[rawReady]()},
		"rawWorkload":   {Where: "workload", Go: reflect.TypeFor[rawWorkload]()},
		"rawRequest":    {Where: "a request", Go: reflect.TypeFor[rawRequest]()},
		"GroundTruth":   {Where: "ground_truth", Go: reflect.TypeFor[GroundTruth]()},
		"rawKubernetes": {Where: "kubernetes", Go: reflect.TypeFor[rawKubernetes]()},
		"Attach":        {Where: "attach", Go: reflect.TypeFor[Attach]()},
	},
	// "cannot unmarshal !!str `x` into spec.rawSpec" and the like.
	Replace: []string{"[]spec.rawService", "a list of services", "[]spec.rawRequest", "a list of requests", "spec.Duration", "a duration"},
}
