package experiment

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

type profile struct {
	ci         map[string]float64 // calls to each service per user request
	c1, q1     float64
	q1Assigned float64 // the target's cores; q1 is 1 where it never used more than one
	// coresP95 and coresMean: the target's CPU use during pre-profiling, in
	// cores, per interval (the 95th percentile) and on average.
	coresP95, coresMean float64
	u1                  time.Duration
	neighbours          map[string][]string
	observed            map[string][]string // the call graph as counted (callGraph)
	warnings            []string
}

func (r *Runner) profile(s *sample) (*profile, error) {
	calls, cpu := s.idleDelta(r.opts.Target)
	n := s.responses()
	if n == 0 {
		return nil, fmt.Errorf("no successful requests during pre-profiling (errors: %d): check the workload and the services' logs", s.res.Errors)
	}
	if calls == 0 && r.counted {
		return nil, fmt.Errorf("target %q %w during pre-profiling: is it on the path of the workload's requests?", r.opts.Target, ErrNotCalled)
	}
	p := &profile{ci: map[string]float64{}}
	if calls > 0 {
		p.u1 = cpu / time.Duration(calls)
	}
	// Calls per user request: arrivals at each service over arrivals at the
	// entry service, both counted between idle moments so that nothing in
	// flight skews them. Without an instrumented entry, fall back to the
	// window's responses at the load generator.
	ratio := func(svc string) float64 {
		c, _ := s.delta(svc)
		return float64(c) / float64(n)
	}
	if entry := r.entryService(); entry != "" {
		if ecalls, _ := s.idleDelta(entry); ecalls > 0 {
			ratio = func(svc string) float64 {
				c, _ := s.idleDelta(svc)
				return float64(c) / float64(ecalls)
			}
		}
	}
	p.c1 = ratio(r.opts.Target)
	for name := range s.after {
		p.ci[name] = ratio(name)
	}
	if !r.counted {
		if err := r.perRequest(s, p); err != nil {
			return nil, err
		}
		p.ci[r.opts.Target] = p.c1
		if err := r.needCalls(); err != nil {
			return nil, err
		}
	}
	var warn string
	p.q1Assigned = r.targetCores()
	p.q1, p.coresP95, p.coresMean, warn = usableCores(r.opts.Target, p.q1Assigned, s.parallel)
	if warn != "" {
		p.warnings = append(p.warnings, warn)
	}
	// Where the placement counts no cores of the target (a cluster placed
	// it), q1 is its spec's cpus, which it may exceed.
	if _, all := s.delta(r.opts.Target); math.IsInf(r.d.Placement().CoreCount(r.opts.Target), 1) && s.window > 0 {
		if w := overCoresWarning(r.opts.Target, p.q1, all.Seconds()/s.window.Seconds()); w != "" {
			p.warnings = append(p.warnings, w)
		}
	}
	if p.u1 <= 0 {
		return nil, fmt.Errorf("target %q used no measurable CPU during pre-profiling (%d calls)", r.opts.Target, calls)
	}
	var graphWarnings []string
	p.neighbours, p.observed, graphWarnings = r.callGraph(s.after)
	p.warnings = append(p.warnings, graphWarnings...)
	return p, nil
}

// entryService names the service that the spec's entry URL reaches, or "".
func (r *Runner) entryService() string { return entryService(r.spec) }

func entryService(s *spec.Spec) string {
	u, err := url.Parse(s.Entry)
	if err != nil {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, svc := range s.Services {
		if strconv.Itoa(svc.Port) == port {
			return svc.Name
		}
	}
	return ""
}

// callGraph builds the undirected call graph from the instrumentation's
// downstream counts, mapping addresses to services as eachCall does. Services that
// the graph does not connect to the target are linked to the target
// directly, so that every service still receives every round.
//
// observed is the graph as counted (calls or spans), without those links:
// what a reader is shown as the application's call graph.
func (r *Runner) callGraph(stats map[string]*wire.Stats) (rounds, observed map[string][]string, warnings []string) {
	edges := map[string]map[string]bool{}
	link := func(a, b string) {
		if a == b {
			return
		}
		for _, p := range [][2]string{{a, b}, {b, a}} {
			if edges[p[0]] == nil {
				edges[p[0]] = map[string]bool{}
			}
			edges[p[0]][p[1]] = true
		}
	}
	eachCall(r.spec, stats, link)
	if r.opts.Spans != nil {
		for e := range r.opts.Spans.Stats().Edges {
			_, caller := r.spec.Service(e.Caller)
			_, callee := r.spec.Service(e.Callee)
			if caller && callee {
				link(e.Caller, e.Callee)
			}
		}
	}
	observed = adjacency(edges)
	// Reachability from the target.
	seen := map[string]bool{r.opts.Target: true}
	queue := []string{r.opts.Target}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for m := range edges[n] {
			if !seen[m] {
				seen[m] = true
				queue = append(queue, m)
			}
		}
	}
	for _, svc := range r.spec.Services {
		if !seen[svc.Name] {
			link(r.opts.Target, svc.Name)
			// Rounds go from the target to every service directly
			// unless they travel along the graph.
			if r.opts.Tuning.GraphRounds {
				warnings = append(warnings, fmt.Sprintf("service %q is not connected to the target in the observed call graph; it receives rounds from the target directly", svc.Name))
			}
		}
	}
	return adjacency(edges), observed, warnings
}

// adjacency lists every service's neighbours in edges, sorted.
func adjacency(edges map[string]map[string]bool) map[string][]string {
	out := map[string][]string{}
	for a, bs := range edges {
		for b := range bs {
			out[a] = append(out[a], b)
		}
		sort.Strings(out[a])
	}
	return out
}

// eachCall calls fn for every caller and callee service seen in the
// instrumentation's downstream counts (once per pair and stats entry;
// callers and callees may repeat). An address is mapped to a service by
// its host name's first label where that is a service's name or its
// Deployment's (cart:8081, cart.shop.svc.cluster.local:8081, as on
// Kubernetes), and otherwise by its port, where one service alone has it.
func eachCall(s *spec.Spec, stats map[string]*wire.Stats, fn func(caller, callee string)) {
	byHost, byPort, shared := map[string]string{}, map[string]string{}, map[string]bool{}
	for _, svc := range s.Services {
		byHost[svc.Name] = svc.Name
		if svc.Deployment != "" {
			byHost[svc.Deployment] = svc.Name
		}
		if svc.Port == 0 {
			continue
		}
		port := strconv.Itoa(svc.Port)
		if _, dup := byPort[port]; dup {
			shared[port] = true
		}
		byPort[port] = svc.Name
	}
	for name, st := range stats {
		for addr := range st.Downstream {
			if callee, ok := addressedService(addr, byHost, byPort, shared); ok {
				fn(name, callee)
			}
		}
	}
}

// addressedService is the service that addr (host:port) reaches, as
// eachCall maps it.
func addressedService(addr string, byHost, byPort map[string]string, shared map[string]bool) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	if net.ParseIP(host) == nil {
		label, _, _ := strings.Cut(host, ".")
		if svc, ok := byHost[label]; ok {
			return svc, true
		}
	}
	if shared[port] {
		return "", false
	}
	svc, ok := byPort[port]
	return svc, ok
}

// star is the round topology where the target's controller sends every
// round directly to every other service's controller.
func (r *Runner) star() map[string][]string {
	out := map[string][]string{}
	for _, svc := range r.spec.Services {
		if svc.Name != r.opts.Target {
			out[r.opts.Target] = append(out[r.opts.Target], svc.Name)
		}
	}
	return out
}

// targetCores is q1: the cores the target may use, the fewer of its
// placement and its spec's cpus (only the spec's where a cluster placed
// it: its pod's CPU limit is the user's to state there).
func (r *Runner) targetCores() float64 {
	q := r.d.Placement().CoreCount(r.opts.Target)
	if sp, ok := r.spec.Service(r.opts.Target); ok && sp.CPUs > 0 && float64(sp.CPUs) < q {
		q = float64(sp.CPUs)
	}
	return q
}
