package emulator

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Limits that catch mistakes (wrong unit, runaway fan-out) early.
const (
	maxServiceNameLen = 63
	MaxRepeat         = 1000
	MaxWorkUS         = 60e6 // one minute of CPU per call
)

var (
	// serviceNameRE is the service name rule of the application spec.
	serviceNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	grpcMethodRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	// httpPathRE allows the characters a path segment may hold unencoded
	// (RFC 3986 pchar without '%'), so that the path as written is the
	// path as received.
	httpPathRE = regexp.MustCompile(`^/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$`)
)

type problems struct {
	t    *Topology
	errs []problem
}

type problem struct {
	line int
	err  error
}

// add records a problem at the location given by parts (for the line) and
// where (for the reader).
func (p *problems) add(parts []string, where, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if where != "" {
		msg = where + ": " + msg
	}
	l := p.t.line(parts...)
	if l > 0 {
		msg = fmt.Sprintf("line %d: %s", l, msg)
	}
	p.errs = append(p.errs, problem{l, errors.New(msg)})
}

// err returns the problems in file order, joined.
func (p *problems) err() error {
	slices.SortStableFunc(p.errs, func(a, b problem) int { return a.line - b.line })
	errs := make([]error, len(p.errs))
	for i, pr := range p.errs {
		errs[i] = pr.err
	}
	return errors.Join(errs...)
}

// Validate checks the topology and returns every problem found, joined with
// errors.Join; each names its location and, for a parsed topology, its line:
//
//	line 12: service "frontend": endpoint "/home": calls[0]: unknown service "cartt"; services: cart, frontend
func (t *Topology) Validate() error {
	p := &problems{t: t}
	if len(t.Services) == 0 {
		p.add([]string{"services"}, "", "services: at least one service is required")
	}
	names := sortedKeys(t.Services)
	// In file order when parsed, so that a duplicate is reported at its
	// second occurrence.
	order := slices.Clone(names)
	slices.SortStableFunc(order, func(a, b string) int {
		return t.line("services", a) - t.line("services", b)
	})
	addrs := map[string]string{}
	for _, name := range order {
		s := t.Services[name]
		sk := []string{"services", name}
		at := fmt.Sprintf("service %q", name)
		switch {
		case len(name) > maxServiceNameLen:
			p.add(sk, at, "name is %d characters long, at most %d allowed", len(name), maxServiceNameLen)
		case !serviceNameRE.MatchString(name):
			p.add(sk, at, "name must be lower-case letters, digits and '-', starting with a letter or digit")
		}
		if s.Host != "" {
			if strings.ContainsAny(s.Host, " \t\r\n/[]") || strings.Count(s.Host, ":") == 1 {
				p.add(append(sk, "host"), at, "host %q must be a host name or IP address without port", s.Host)
			}
		}
		if s.Port < 1 || s.Port > 65535 {
			p.add(append(sk, "port"), at, "port %d out of range 1..65535", s.Port)
		} else if other, dup := addrs[s.Addr()]; dup {
			p.add(append(sk, "port"), at, "address %s already used by service %q", s.Addr(), other)
		} else {
			addrs[s.Addr()] = name
		}
		switch s.Protocol {
		case ProtocolHTTP, ProtocolGRPC:
		default:
			p.add(append(sk, "protocol"), at, "protocol %q unknown; want %q or %q", s.Protocol, ProtocolHTTP, ProtocolGRPC)
		}
		if len(s.Endpoints) == 0 {
			p.add(append(sk, "endpoints"), at, "endpoints: at least one endpoint is required")
		}
		for _, epName := range sortedKeys(s.Endpoints) {
			t.validateEndpoint(p, name, s, epName)
		}
	}
	if t.Entry != "" {
		switch s, ok := t.Services[t.Entry]; {
		case !ok:
			p.add([]string{"entry"}, "", "entry: unknown service %q; services: %s", t.Entry, strings.Join(names, ", "))
		case s.Protocol != ProtocolHTTP:
			p.add([]string{"entry"}, "", "entry: service %q serves %s; the entry service must serve http", t.Entry, s.Protocol)
		}
	}
	if len(p.errs) == 0 {
		// Only on an otherwise valid topology: cycles need every call resolved.
		t.checkCycles(p)
	}
	return p.err()
}

func (t *Topology) validateEndpoint(p *problems, svcName string, s Service, epName string) {
	ek := []string{"services", svcName, "endpoints", epName}
	at := fmt.Sprintf("service %q: endpoint %q", svcName, epName)
	switch s.Protocol {
	case ProtocolHTTP:
		switch {
		case !httpPathRE.MatchString(epName):
			p.add(ek, at, "an http endpoint must be a path starting with '/' made of letters, digits and -._~!$&'()*+,;=:@/")
		case epName == HealthPath:
			p.add(ek, at, "%s is reserved for the health check", HealthPath)
		}
	case ProtocolGRPC:
		if !grpcMethodRE.MatchString(epName) {
			p.add(ek, at, "a grpc endpoint must be a method name: a letter followed by letters, digits and '_'")
		}
	}
	e := s.Endpoints[epName]
	checkWork := func(field string, v float64) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			p.add(append(ek, field), at, "%s must be a finite number", field)
		case v < 0:
			p.add(append(ek, field), at, "%s must be >= 0, got %v", field, v)
		case v > MaxWorkUS:
			p.add(append(ek, field), at, "%s %v is more than a minute of CPU per call; the unit is microseconds", field, v)
		}
	}
	checkWork("work_us", e.WorkUS)
	checkWork("mutex_work_us", e.MutexWorkUS)
	checkWork("contention_us", e.ContentionUS)
	checkWork("wait_us", e.WaitUS)
	for i, c := range e.Calls {
		ck := append(ek, "calls", strconv.Itoa(i))
		cat := fmt.Sprintf("%s: calls[%d]", at, i)
		callee, ok := t.Services[c.Service]
		switch {
		case c.Service == "":
			p.add(ck, cat, "service is required")
		case !ok:
			p.add(append(ck, "service"), cat, "unknown service %q; services: %s", c.Service, strings.Join(sortedKeys(t.Services), ", "))
		case c.Endpoint == "":
			p.add(ck, cat, "endpoint is required")
		default:
			if _, ok := callee.Endpoints[c.Endpoint]; !ok {
				p.add(append(ck, "endpoint"), cat, "service %q has no endpoint %q; its endpoints: %s",
					c.Service, c.Endpoint, strings.Join(sortedKeys(callee.Endpoints), ", "))
			}
		}
		if c.Repeat < 1 || c.Repeat > MaxRepeat {
			p.add(append(ck, "repeat"), cat, "repeat must be in 1..%d, got %d", MaxRepeat, c.Repeat)
		}
		if !(c.Probability > 0 && c.Probability <= 1) {
			p.add(append(ck, "probability"), cat, "probability must be in (0, 1], got %v", c.Probability)
		}
	}
}

// checkCycles reports a cycle in the endpoint call graph: a request entering
// it would never finish.
func (t *Topology) checkCycles(p *problems) {
	type node struct{ svc, ep string }
	const (
		unvisited = iota
		onStack
		done
	)
	state := map[node]int{}
	var stack []node
	var visit func(n node) bool
	visit = func(n node) bool {
		state[n] = onStack
		stack = append(stack, n)
		e := t.Services[n.svc].Endpoints[n.ep]
		for i, c := range e.Calls {
			m := node{c.Service, c.Endpoint}
			switch state[m] {
			case onStack:
				start := slices.Index(stack, m)
				var path []string
				for _, s := range stack[start:] {
					path = append(path, s.svc+" "+s.ep)
				}
				path = append(path, m.svc+" "+m.ep)
				p.add([]string{"services", n.svc, "endpoints", n.ep, "calls", strconv.Itoa(i)},
					fmt.Sprintf("service %q: endpoint %q: calls[%d]", n.svc, n.ep, i),
					"call cycle: %s", strings.Join(path, " -> "))
				return true
			case unvisited:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return false
	}
	for _, svc := range sortedKeys(t.Services) {
		for _, ep := range sortedKeys(t.Services[svc].Endpoints) {
			if n := (node{svc, ep}); state[n] == unvisited {
				if visit(n) {
					return // one cycle is enough to report
				}
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
