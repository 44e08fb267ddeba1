package spec

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

var (
	serviceNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	envNameRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// Kubernetes object names: a namespace is a DNS label, a Deployment a
	// DNS subdomain.
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
	// tokenRE is an HTTP token (RFC 9110), for methods and header names.
	tokenRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	// containerNameRE is a container's name or ID as docker, podman,
	// nerdctl and containerd allow them.
	containerNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// ContainerName says whether s is a container's name or ID as the
// container runtimes allow them (attach.container): never one that a
// runtime's CLI would take for a flag.
func ContainerName(s string) bool { return containerNameRE.MatchString(s) }

const maxServiceNameLen = 63

// Validate checks the spec and returns every problem found, joined with
// errors.Join; each names its location, e.g.
//
//	services[1] "cart": command is required
func (s *Spec) Validate() error {
	v := &validation{s: s}
	if strings.TrimSpace(s.Name) == "" {
		v.add("name is required")
	}
	v.services()
	v.kubernetes()
	if err := checkEntry(s.Entry); err != nil {
		v.errs = append(v.errs, err)
	}
	v.workload()
	return errors.Join(v.errs...)
}

// validation collects the problems of one spec in the order they are
// found; its methods each check one part of the spec.
type validation struct {
	s    *Spec
	errs []error
}

// add records a problem.
func (v *validation) add(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

// services checks the list of services and each service in turn.
func (v *validation) services() {
	if len(v.s.Services) == 0 {
		v.add("services: at least one service is required")
	}
	names := map[string]int{}
	ports := map[int]int{}
	for i := range v.s.Services {
		v.service(i, names, ports)
	}
}

// service checks services[i]. names and ports map the names and ports
// of the services checked before it to their index, and take its own.
func (v *validation) service(i int, names map[string]int, ports map[int]int) {
	sv := &v.s.Services[i]
	at := serviceLoc(v.s, i)
	v.serviceName(i, at, names)
	kube := v.s.Kubernetes != nil
	if strings.TrimSpace(sv.Command) == "" && !kube && sv.Attach == nil {
		v.add("%s: command is required (or attach, for a service that already runs)", at)
	}
	if sv.Attach != nil {
		v.attach(at, sv, kube)
	}
	if !kube && (sv.Deployment != "" || sv.Container != "") {
		v.add("%s: deployment and container are for an application on Kubernetes (a kubernetes section)", at)
	}
	for _, k := range slices.Sorted(maps.Keys(sv.Env)) {
		if !envNameRE.MatchString(k) {
			v.add("%s: env: %q is not a valid environment variable name", at, k)
		}
	}
	v.servicePort(i, at, kube, ports)
	if sv.Protocol != ProtocolHTTP && sv.Protocol != ProtocolGRPC {
		v.add("%s: protocol %q unknown; want %q or %q", at, sv.Protocol, ProtocolHTTP, ProtocolGRPC)
	}
	if sv.CPUs <= 0 {
		v.add("%s: cpus must be > 0, got %d", at, sv.CPUs)
	}
	if p := sv.Pool; p != nil && (*p < 1 || *p > MaxPool) {
		v.add("%s: pool must be in 1..%d, got %d (leave it out for no limit)", at, MaxPool, *p)
	}
	if p := sv.Ready.HTTPPath; p != "" && !strings.HasPrefix(p, "/") {
		v.add("%s: ready.http_path %q must start with \"/\"", at, p)
	}
	if sv.Ready.Timeout.Duration <= 0 {
		v.add("%s: ready.timeout must be > 0, got %s", at, sv.Ready.Timeout)
	}
	if g := sv.GroundTruth; g != nil {
		v.groundTruth(at, g)
	}
}

// serviceName checks the name of services[i], at, and that no service
// before it (names) has it.
func (v *validation) serviceName(i int, at string, names map[string]int) {
	name := v.s.Services[i].Name
	switch {
	case name == "":
		v.add("%s: name is required", at)
	case len(name) > maxServiceNameLen:
		v.add("%s: name is %d characters long, at most %d allowed", at, len(name), maxServiceNameLen)
	case !serviceNameRE.MatchString(name):
		v.add("%s: name must be lower-case letters, digits and '-', starting with a letter or digit", at)
	}
	if j, dup := names[name]; dup && name != "" {
		v.add("%s: name already used by %s", at, serviceLoc(v.s, j))
	} else {
		names[name] = i
	}
}

// attach checks the attach section of service sv, at, which is set; kube
// says whether the application is on Kubernetes.
func (v *validation) attach(at string, sv *Service, kube bool) {
	a := sv.Attach
	n := 0
	for _, set := range []bool{a.Port != 0, a.PIDFile != "", a.Cgroup != "", a.Container != ""} {
		if set {
			n++
		}
	}
	switch {
	case kube:
		v.add("%s: attach is for a service that runs on this machine, not under kubernetes", at)
	case n != 1:
		v.add("%s: attach needs exactly one of port, pid_file, cgroup and container, got %d", at, n)
	case a.Port != 0 && (a.Port < 1 || a.Port > 65535):
		v.add("%s: attach.port %d out of range 1..65535", at, a.Port)
	case a.Port != 0 && sv.Port != a.Port:
		v.add("%s: attach.port %d and port %d differ: the service is reached on the port it listens on (leave port out)", at, a.Port, sv.Port)
	case a.Cgroup != "" && !strings.HasPrefix(a.Cgroup, "/"):
		v.add("%s: attach.cgroup %q must be absolute: its directory (/sys/fs/cgroup/...) or its path as /proc/PID/cgroup writes it", at, a.Cgroup)
	case a.Container != "" && !ContainerName(a.Container):
		v.add("%s: attach.container %q is not a container name or ID (letters, digits, '_', '.' and '-', beginning with a letter or digit)", at, a.Container)
	}
}

// servicePort checks the port of services[i], at, and, off Kubernetes,
// that no service before it (ports) has it.
func (v *validation) servicePort(i int, at string, kube bool, ports map[int]int) {
	port := v.s.Services[i].Port
	switch {
	case kube && port == 0: // pods may all use one port; the Deployment has it
	case port < 1 || port > 65535:
		v.add("%s: port %d out of range 1..65535", at, port)
	case kube:
	default:
		if j, dup := ports[port]; dup {
			v.add("%s: port %d already used by %s", at, port, serviceLoc(v.s, j))
		} else {
			ports[port] = i
		}
	}
}

// groundTruth checks the ground_truth section g of the service at.
func (v *validation) groundTruth(at string, g *GroundTruth) {
	switch {
	case g.Env == "":
		v.add("%s: ground_truth.env is required", at)
	case !envNameRE.MatchString(g.Env):
		v.add("%s: ground_truth.env: %q is not a valid environment variable name", at, g.Env)
	}
	if !finite(g.BaseUS) {
		v.add("%s: ground_truth.base_us must be a finite number", at)
	}
}

// kubernetes checks the kubernetes section, if any, and the services'
// Deployment names under it.
func (v *validation) kubernetes() {
	k := v.s.Kubernetes
	if k == nil {
		return
	}
	if !dnsLabelRE.MatchString(k.Namespace) {
		v.add("kubernetes.namespace %q is not a valid namespace name", k.Namespace)
	}
	if strings.TrimSpace(k.Image) == "" {
		v.add("kubernetes.image is required: an image with the slowpoke binary at /slowpoke (docs/kubernetes.md)")
	}
	if n := len(v.s.Services); k.ControlPort < 1 || k.ControlPort+n-1 > 65535 {
		v.add("kubernetes.control_port %d: ports %d..%d must be in 1..65535", k.ControlPort, k.ControlPort, k.ControlPort+n-1)
	}
	for i, sv := range v.s.Services {
		if sv.Deployment != "" && !dnsSubdomainRE.MatchString(sv.Deployment) {
			v.add("%s: deployment %q is not a valid Deployment name", serviceLoc(v.s, i), sv.Deployment)
		}
	}
}

// workload checks the workload and each of its requests in turn.
func (v *validation) workload() {
	w := &v.s.Workload
	if w.Connections <= 0 {
		v.add("workload.connections must be > 0, got %d", w.Connections)
	}
	if w.Warmup.Duration < 0 {
		v.add("workload.warmup must be >= 0, got %s", w.Warmup)
	}
	if w.Duration.Duration <= 0 {
		v.add("workload.duration must be > 0, got %s", w.Duration)
	}
	if len(w.Requests) == 0 {
		v.add("workload.requests: at least one request is required")
	}
	names := map[string]int{}
	for i := range w.Requests {
		v.request(i, names)
	}
}

// request checks workload.requests[i]. names maps the names of the
// requests checked before it to their index, and takes its own.
func (v *validation) request(i int, names map[string]int) {
	r := &v.s.Workload.Requests[i]
	at := requestLoc(v.s, i)
	if r.Name == "" {
		v.add("%s: name is required", at)
	} else if j, dup := names[r.Name]; dup {
		v.add("%s: name already used by %s", at, requestLoc(v.s, j))
	} else {
		names[r.Name] = i
	}
	if !tokenRE.MatchString(r.Method) {
		v.add("%s: method %q is not a valid HTTP method", at, r.Method)
	}
	switch {
	case r.Path == "":
		v.add("%s: path is required", at)
	case !strings.HasPrefix(r.Path, "/"):
		v.add("%s: path %q must start with \"/\"", at, r.Path)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
		val := r.Headers[k]
		if !tokenRE.MatchString(k) {
			v.add("%s: headers: %q is not a valid header name", at, k)
		}
		if strings.ContainsAny(val, "\r\n") {
			v.add("%s: headers: value of %q contains a line break", at, k)
		}
	}
	if !(r.Weight > 0) || !finite(r.Weight) {
		v.add("%s: weight must be > 0, got %v", at, r.Weight)
	}
}

func checkEntry(entry string) error {
	if entry == "" {
		return errors.New("entry is required")
	}
	u, err := url.Parse(entry)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("entry %q must be an absolute http:// or https:// URL", entry)
	}
	// Request paths are appended to the entry; a query or fragment would end
	// up in the middle of them.
	if u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(entry, "?") {
		return fmt.Errorf("entry %q must not have a query or fragment", entry)
	}
	return nil
}

// serviceLoc names services[i] with its name when it has one.
func serviceLoc(s *Spec, i int) string {
	if n := s.Services[i].Name; n != "" {
		return fmt.Sprintf("services[%d] %q", i, n)
	}
	return fmt.Sprintf("services[%d]", i)
}

func requestLoc(s *Spec, i int) string {
	if n := s.Workload.Requests[i].Name; n != "" {
		return fmt.Sprintf("workload.requests[%d] %q", i, n)
	}
	return fmt.Sprintf("workload.requests[%d]", i)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
