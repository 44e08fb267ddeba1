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
)

const maxServiceNameLen = 63

// Validate checks the spec and returns every problem found, joined with
// errors.Join; each names its location, e.g.
//
//	services[1] "cart": command is required
func (s *Spec) Validate() error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}

	if strings.TrimSpace(s.Name) == "" {
		add("name is required")
	}

	if len(s.Services) == 0 {
		add("services: at least one service is required")
	}
	names := map[string]int{}
	ports := map[int]int{}
	for i := range s.Services {
		sv := &s.Services[i]
		at := serviceLoc(s, i)
		switch {
		case sv.Name == "":
			add("%s: name is required", at)
		case len(sv.Name) > maxServiceNameLen:
			add("%s: name is %d characters long, at most %d allowed", at, len(sv.Name), maxServiceNameLen)
		case !serviceNameRE.MatchString(sv.Name):
			add("%s: name must be lower-case letters, digits and '-', starting with a letter or digit", at)
		}
		if j, dup := names[sv.Name]; dup && sv.Name != "" {
			add("%s: name already used by %s", at, serviceLoc(s, j))
		} else {
			names[sv.Name] = i
		}
		kube := s.Kubernetes != nil
		if strings.TrimSpace(sv.Command) == "" && !kube && sv.Attach == nil {
			add("%s: command is required (or attach, for a service that already runs)", at)
		}
		if a := sv.Attach; a != nil {
			n := 0
			for _, set := range []bool{a.Port != 0, a.PIDFile != "", a.Cgroup != ""} {
				if set {
					n++
				}
			}
			switch {
			case kube:
				add("%s: attach is for a service that runs on this machine, not under kubernetes", at)
			case n != 1:
				add("%s: attach needs exactly one of port, pid_file and cgroup, got %d", at, n)
			case a.Port != 0 && (a.Port < 1 || a.Port > 65535):
				add("%s: attach.port %d out of range 1..65535", at, a.Port)
			case a.Port != 0 && sv.Port != a.Port:
				add("%s: attach.port %d and port %d differ: the service is reached on the port it listens on (leave port out)", at, a.Port, sv.Port)
			case a.Cgroup != "" && !strings.HasPrefix(a.Cgroup, "/"):
				add("%s: attach.cgroup %q must be absolute: its directory (/sys/fs/cgroup/...) or its path as /proc/PID/cgroup writes it", at, a.Cgroup)
			}
		}
		if !kube && (sv.Deployment != "" || sv.Container != "") {
			add("%s: deployment and container are for an application on Kubernetes (a kubernetes section)", at)
		}
		for _, k := range slices.Sorted(maps.Keys(sv.Env)) {
			if !envNameRE.MatchString(k) {
				add("%s: env: %q is not a valid environment variable name", at, k)
			}
		}
		switch {
		case kube && sv.Port == 0: // pods may all use one port; the Deployment has it
		case sv.Port < 1 || sv.Port > 65535:
			add("%s: port %d out of range 1..65535", at, sv.Port)
		case kube:
		default:
			if j, dup := ports[sv.Port]; dup {
				add("%s: port %d already used by %s", at, sv.Port, serviceLoc(s, j))
			} else {
				ports[sv.Port] = i
			}
		}
		if sv.Protocol != ProtocolHTTP && sv.Protocol != ProtocolGRPC {
			add("%s: protocol %q unknown; want %q or %q", at, sv.Protocol, ProtocolHTTP, ProtocolGRPC)
		}
		if sv.CPUs <= 0 {
			add("%s: cpus must be > 0, got %d", at, sv.CPUs)
		}
		if p := sv.Pool; p != nil && (*p < 1 || *p > MaxPool) {
			add("%s: pool must be in 1..%d, got %d (leave it out for no limit)", at, MaxPool, *p)
		}
		if p := sv.Ready.HTTPPath; p != "" && !strings.HasPrefix(p, "/") {
			add("%s: ready.http_path %q must start with \"/\"", at, p)
		}
		if sv.Ready.Timeout.Duration <= 0 {
			add("%s: ready.timeout must be > 0, got %s", at, sv.Ready.Timeout)
		}
		if g := sv.GroundTruth; g != nil {
			switch {
			case g.Env == "":
				add("%s: ground_truth.env is required", at)
			case !envNameRE.MatchString(g.Env):
				add("%s: ground_truth.env: %q is not a valid environment variable name", at, g.Env)
			}
			if !finite(g.BaseUS) {
				add("%s: ground_truth.base_us must be a finite number", at)
			}
		}
	}

	if k := s.Kubernetes; k != nil {
		if !dnsLabelRE.MatchString(k.Namespace) {
			add("kubernetes.namespace %q is not a valid namespace name", k.Namespace)
		}
		if strings.TrimSpace(k.Image) == "" {
			add("kubernetes.image is required: an image with the slowpoke binary at /slowpoke (docs/kubernetes.md)")
		}
		if n := len(s.Services); k.ControlPort < 1 || k.ControlPort+n-1 > 65535 {
			add("kubernetes.control_port %d: ports %d..%d must be in 1..65535", k.ControlPort, k.ControlPort, k.ControlPort+n-1)
		}
		for i, sv := range s.Services {
			if sv.Deployment != "" && !dnsSubdomainRE.MatchString(sv.Deployment) {
				add("%s: deployment %q is not a valid Deployment name", serviceLoc(s, i), sv.Deployment)
			}
		}
	}

	if err := checkEntry(s.Entry); err != nil {
		errs = append(errs, err)
	}

	w := &s.Workload
	if w.Connections <= 0 {
		add("workload.connections must be > 0, got %d", w.Connections)
	}
	if w.Warmup.Duration < 0 {
		add("workload.warmup must be >= 0, got %s", w.Warmup)
	}
	if w.Duration.Duration <= 0 {
		add("workload.duration must be > 0, got %s", w.Duration)
	}
	if len(w.Requests) == 0 {
		add("workload.requests: at least one request is required")
	}
	reqNames := map[string]int{}
	for i := range w.Requests {
		r := &w.Requests[i]
		at := requestLoc(s, i)
		if r.Name == "" {
			add("%s: name is required", at)
		} else if j, dup := reqNames[r.Name]; dup {
			add("%s: name already used by %s", at, requestLoc(s, j))
		} else {
			reqNames[r.Name] = i
		}
		if !tokenRE.MatchString(r.Method) {
			add("%s: method %q is not a valid HTTP method", at, r.Method)
		}
		switch {
		case r.Path == "":
			add("%s: path is required", at)
		case !strings.HasPrefix(r.Path, "/"):
			add("%s: path %q must start with \"/\"", at, r.Path)
		}
		for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
			v := r.Headers[k]
			if !tokenRE.MatchString(k) {
				add("%s: headers: %q is not a valid header name", at, k)
			}
			if strings.ContainsAny(v, "\r\n") {
				add("%s: headers: value of %q contains a line break", at, k)
			}
		}
		if !(r.Weight > 0) || !finite(r.Weight) {
			add("%s: weight must be > 0, got %v", at, r.Weight)
		}
	}
	return errors.Join(errs...)
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
