// Package suite generates the synthetic benchmark suite: applications of
// slowpoke-emu services (internal/emulator) in the topologies of the paper,
// each with an app spec (internal/spec) whose target can really be made
// faster, so that `slowpoke validate` can check predictions against ground
// truth.
//
// Suite returns the 108 configurations (9 topologies x {http, grpc} x
// {sequential, concurrent calls} x 3 target placements), Extras the special
// cases (a lock bottleneck, a 9-service chain, a 43-service tree and the two
// remaining dynamic topologies), Subset a representative subset of about a
// dozen, and Write puts one configuration on disk. Everything is
// deterministic for a seed. See docs/suite.md.
package suite

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
)

// Config is one synthetic application with its target.
type Config struct {
	Name       string // unique, file-system safe, e.g. "chain3-http-seq-leaf"
	Topology   string // topology name, e.g. "chain3"
	Protocol   string // "http" or "grpc": what the internal services serve (the entry always serves http)
	Concurrent bool   // downstream calls made concurrently rather than one after the other
	Placement  string // "entry", "middle" or "leaf": where the target sits
	Target     string // target service name
	// TargetIsBottleneck: the target has the largest per-request CPU demand
	// (work x expected calls per user request) of all services.
	TargetIsBottleneck bool
	Services           int
	Topo               *emulator.Topology
	Spec               []byte   // app.yaml contents
	Tags               []string // e.g. "chain3", "http", "seq", "leaf", "bottleneck", "subset", "dynamic", "mutex"
}

// Placements, protocols and call modes of the suite.
const (
	PlacementEntry  = "entry"
	PlacementMiddle = "middle"
	PlacementLeaf   = "leaf"

	ModeSequential = "seq"
	ModeConcurrent = "conc"
)

// Placements lists the target placements in suite order.
var Placements = []string{PlacementEntry, PlacementMiddle, PlacementLeaf}

// Protocols lists the internal protocols in suite order.
var Protocols = []string{emulator.ProtocolHTTP, emulator.ProtocolGRPC}

// Work drawn per service of the 108 configurations, in µs: Normal(mean, sd)
// clipped to [min, max] and rounded to a whole µs.
const (
	WorkMeanUS = 700
	WorkSDUS   = 300
	WorkMinUS  = 100
	WorkMaxUS  = 2000
)

// Ports: configuration k (0-based over Suite, then Extras) uses the block
// PortBase + PortBlock*k + service index. Blocks never overlap (no
// configuration has more than PortBlock services) and the highest port,
// about 26,700, stays below Linux's ephemeral range (32768 and up).
const (
	PortBase  = 20000
	PortBlock = 50
)

// Suite size and where the Extras' blocks start.
const (
	SuiteSize  = 108
	extraFirst = SuiteSize
)

// Workload of every configuration.
const (
	Connections = 128
	Warmup      = "1s"
	Duration    = "3s"
)

// GroundTruthEnv is the variable slowpoke-emu reads to really change the
// work of a service (docs/emulator.md).
const GroundTruthEnv = "EMU_WORK_OFFSET_US"

// Tags given to configurations besides the topology, protocol, mode and
// placement.
const (
	TagSubset        = "subset"
	TagExtra         = "extra"
	TagDynamic       = "dynamic"
	TagMutex         = "mutex"
	TagCoordination  = "coordination"
	TagTree43        = "tree43"
	TagBottleneck    = "bottleneck"
	TagNonBottleneck = "non-bottleneck"
)

// Endpoint names: every service has one main endpoint; in dyn-cycle the
// revisited service has a second one that only does work.
const (
	httpEndpoint    = "/run"
	grpcEndpoint    = "Run"
	httpRevisit     = "/revisit"
	grpcRevisit     = "Revisit"
	requestName     = "run"
	emulatorCommand = "slowpoke-emu"
)

func serviceName(i int) string { return fmt.Sprintf("service%d", i) }

func mainEndpoint(protocol string) string {
	if protocol == emulator.ProtocolGRPC {
		return grpcEndpoint
	}
	return httpEndpoint
}

func revisitEndpoint(protocol string) string {
	if protocol == emulator.ProtocolGRPC {
		return grpcRevisit
	}
	return httpRevisit
}

func modeName(concurrent bool) string {
	if concurrent {
		return ModeConcurrent
	}
	return ModeSequential
}

// Suite returns the 108 configurations: for each of chain3, chain10,
// fanout3, fanout7, dag-cross, dag-relay, tree-unbalanced, dyn-chain and
// dyn-tree2, {http, grpc} x {seq, conc} x {entry, middle, leaf}, in that
// order. The work of each topology's services is drawn once per topology
// (so the 12 variants of a topology share it) from a source seeded with
// seed and the topology's name. The configurations Subset picks carry the
// tag "subset".
func Suite(seed int64) ([]Config, error) {
	var all []Config
	for i, sh := range mainShapes {
		cs, err := generate(seed, sh, i*12, nil)
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
	}
	if len(all) != SuiteSize {
		return nil, fmt.Errorf("suite: %d configurations, want %d", len(all), SuiteSize)
	}
	for _, i := range subsetIndices(all) {
		all[i].Tags = append(all[i].Tags, TagSubset)
	}
	return all, nil
}

// Extras returns the special configurations, all tagged "extra":
//
//   - "mutex" (tag "mutex"): a -> b, a does 800 µs of work, b 50 µs plus
//     350 µs under its service-wide mutex; target a.
//   - "chain9-coordination" (tag "coordination"): a 9-service HTTP chain
//     with 200-400 µs of work per service; target service4.
//   - "tree43" (tag "tree43"): a balanced tree of width 6 and height 3
//     (1 + 6 + 36 = 43 services), HTTP, 20-60 µs of work per service;
//     target service1, a middle node.
//   - dyn-cache and dyn-cycle (tag "dynamic") in the 12 variants of the
//     main suite each.
func Extras(seed int64) ([]Config, error) {
	var out []Config
	k := extraFirst
	m, err := mutexConfig(seed, k)
	if err != nil {
		return nil, err
	}
	out = append(out, m)
	k++
	c, err := chain9Config(seed, k)
	if err != nil {
		return nil, err
	}
	out = append(out, c)
	k++
	t, err := tree43Config(seed, k)
	if err != nil {
		return nil, err
	}
	out = append(out, t)
	k++
	for _, sh := range dynExtraShapes {
		cs, err := generate(seed, sh, k, []string{TagExtra})
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
		k += len(cs)
	}
	return out, nil
}

// newRand returns the source for one topology: seeded with the suite's
// seed and the topology's name, so that topologies do not depend on each
// other's draws.
func newRand(seed int64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// drawWork draws one service's work from Normal(WorkMeanUS, WorkSDUS),
// clipped and rounded.
func drawWork(r *rand.Rand) float64 {
	w := math.Round(WorkMeanUS + WorkSDUS*r.NormFloat64())
	return min(max(w, WorkMinUS), WorkMaxUS)
}

// uniqueMax lowers (by 1 µs at a time) the work of services tied for the
// largest demand, all but the lowest-numbered, so that the bottleneck is
// one service. Ties only happen with clipped or rounded draws.
func uniqueMax(works, visits []float64) {
	for {
		best := 0.0
		for i := range works {
			best = max(best, works[i]*visits[i])
		}
		var ties []int
		for i := range works {
			if visits[i] > 0 && works[i]*visits[i] >= best*(1-1e-12) {
				ties = append(ties, i)
			}
		}
		if len(ties) <= 1 {
			return
		}
		for _, i := range ties[1:] {
			works[i]--
		}
	}
}

// chooseTargets picks the target service of each placement. The
// bottleneck b (largest demand) is the target of the placement it belongs
// to; the other placements get a random candidate other than b. Leaf is
// chosen before middle so that in a fan-out, where "middle" is a second
// leaf, a bottleneck leaf is the leaf placement's target.
func chooseTargets(sh shape, demand []float64, r *rand.Rand) (map[string]int, error) {
	b := 0
	for i := range demand {
		if demand[i] > demand[b] {
			b = i
		}
	}
	middle, leaf := sh.candidates()
	used := map[int]bool{0: true}
	pick := func(placement string, cands []int) (int, error) {
		if slices.Contains(cands, b) && !used[b] {
			used[b] = true
			return b, nil
		}
		var free []int
		for _, c := range cands {
			if c != b && !used[c] {
				free = append(free, c)
			}
		}
		if len(free) == 0 {
			return 0, fmt.Errorf("suite: %s: no service for the %s placement", sh.name, placement)
		}
		t := free[r.IntN(len(free))]
		used[t] = true
		return t, nil
	}
	l, err := pick(PlacementLeaf, leaf)
	if err != nil {
		return nil, err
	}
	m, err := pick(PlacementMiddle, middle)
	if err != nil {
		return nil, err
	}
	return map[string]int{PlacementEntry: 0, PlacementMiddle: m, PlacementLeaf: l}, nil
}

// generate builds the 12 variants of a shape, numbered from block k0.
func generate(seed int64, sh shape, k0 int, extraTags []string) ([]Config, error) {
	r := newRand(seed, sh.name)
	n := sh.size()
	works := make([]float64, n)
	for i := range works {
		works[i] = drawWork(r)
	}
	visits := sh.visits()
	uniqueMax(works, visits)
	demand := make([]float64, n)
	for i := range demand {
		demand[i] = works[i] * visits[i]
	}
	targets, err := chooseTargets(sh, demand, r)
	if err != nil {
		return nil, err
	}
	var out []Config
	k := k0
	for _, proto := range Protocols {
		for _, conc := range []bool{false, true} {
			for _, pl := range Placements {
				name := strings.Join([]string{sh.name, proto, modeName(conc), pl}, "-")
				topo := buildTopology(sh, works, proto, conc, k)
				tags := []string{sh.name, proto, modeName(conc), pl}
				if sh.dynamic {
					tags = append(tags, TagDynamic)
				}
				tags = append(tags, extraTags...)
				c, err := newConfig(seed, configParams{
					name: name, topology: sh.name, sketch: sh.sketch, protocol: proto, concurrent: conc,
					placement: pl, target: serviceName(targets[pl]), topo: topo, order: serviceNames(n), tags: tags,
				})
				if err != nil {
					return nil, err
				}
				out = append(out, c)
				k++
			}
		}
	}
	return out, nil
}

func serviceNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = serviceName(i)
	}
	return names
}

// buildTopology turns a shape into an emulator topology: service i is
// "service<i>" on port PortBase + PortBlock*k + i; service0 serves http,
// the others serve proto. Every endpoint with calls makes them
// concurrently if conc.
func buildTopology(sh shape, works []float64, proto string, conc bool, k int) *emulator.Topology {
	t := &emulator.Topology{Entry: serviceName(0), Services: map[string]emulator.Service{}}
	protoOf := func(i int) string {
		if i == 0 {
			return emulator.ProtocolHTTP
		}
		return proto
	}
	revisited := map[int]bool{}
	for _, cs := range sh.calls {
		for _, c := range cs {
			if c.revisit {
				revisited[c.to] = true
			}
		}
	}
	for i, cs := range sh.calls {
		p := protoOf(i)
		ep := emulator.Endpoint{WorkUS: works[i], Concurrent: conc && len(cs) > 0}
		for _, c := range cs {
			callee := mainEndpoint(protoOf(c.to))
			if c.revisit {
				callee = revisitEndpoint(protoOf(c.to))
			}
			ep.Calls = append(ep.Calls, emulator.Call{
				Service: serviceName(c.to), Endpoint: callee, Repeat: 1, Probability: c.p,
			})
		}
		s := emulator.Service{
			Port:      PortBase + PortBlock*k + i,
			Protocol:  p,
			Endpoints: map[string]emulator.Endpoint{mainEndpoint(p): ep},
		}
		if revisited[i] {
			s.Endpoints[revisitEndpoint(p)] = emulator.Endpoint{WorkUS: works[i]}
		}
		t.Services[serviceName(i)] = s
	}
	return t
}

// configParams are what newConfig needs to finish a Config.
type configParams struct {
	name, topology, sketch string
	protocol               string
	concurrent             bool
	placement              string
	target                 string
	topo                   *emulator.Topology
	order                  []string       // services in spec order; order[0] is the entry
	cpus                   map[string]int // cores of services that need more than one
	tags                   []string
	notes                  []string // extra comment lines for the spec
}

// newConfig validates the topology, computes the bottleneck and renders
// the spec.
func newConfig(seed int64, p configParams) (Config, error) {
	if err := p.topo.Validate(); err != nil {
		return Config{}, fmt.Errorf("suite: %s: %w", p.name, err)
	}
	entry := p.order[0]
	demand, err := Demand(p.topo, entry, mainEndpoint(emulator.ProtocolHTTP))
	if err != nil {
		return Config{}, fmt.Errorf("suite: %s: %w", p.name, err)
	}
	best := 0.0
	for _, d := range demand {
		best = max(best, d)
	}
	bottleneck := demand[p.target] >= best*(1-1e-12)
	tags := slices.Clone(p.tags)
	if bottleneck {
		tags = append(tags, TagBottleneck)
	} else {
		tags = append(tags, TagNonBottleneck)
	}
	c := Config{
		Name: p.name, Topology: p.topology, Protocol: p.protocol, Concurrent: p.concurrent,
		Placement: p.placement, Target: p.target, TargetIsBottleneck: bottleneck,
		Services: len(p.topo.Services), Topo: p.topo, Tags: tags,
	}
	c.Spec = renderSpec(seed, c, p, demand)
	return c, nil
}

// Demand returns each service's per-request CPU demand in µs: for one
// request to service's endpoint, the sum over the endpoints of work_us +
// mutex_work_us times the expected number of calls (repeat x probability
// along every call path). Services never reached have demand 0. The
// topology must be valid.
func Demand(t *emulator.Topology, service, endpoint string) (map[string]float64, error) {
	visits, err := Visits(t, service, endpoint)
	if err != nil {
		return nil, err
	}
	d := make(map[string]float64, len(t.Services))
	for name := range t.Services {
		d[name] = 0
	}
	for k, v := range visits {
		e := t.Services[k.Service].Endpoints[k.Endpoint]
		d[k.Service] += v * (e.WorkUS + e.MutexWorkUS)
	}
	return d, nil
}

// EndpointKey names one endpoint of one service.
type EndpointKey struct{ Service, Endpoint string }

// Visits returns the expected number of calls each endpoint receives for
// one request to service's endpoint, following the emulator's semantics
// (each of a call's repetitions happens independently with its
// probability). The topology must be valid (no call cycles).
func Visits(t *emulator.Topology, service, endpoint string) (map[EndpointKey]float64, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if _, ok := t.Services[service].Endpoints[endpoint]; !ok {
		return nil, fmt.Errorf("no endpoint %q of service %q", endpoint, service)
	}
	// Expected visits are linear, so a topological order of the endpoint
	// graph gives them without enumerating paths.
	var order []EndpointKey
	seen := map[EndpointKey]bool{}
	var dfs func(k EndpointKey)
	dfs = func(k EndpointKey) {
		seen[k] = true
		for _, c := range t.Services[k.Service].Endpoints[k.Endpoint].Calls {
			if n := (EndpointKey{c.Service, c.Endpoint}); !seen[n] {
				dfs(n)
			}
		}
		order = append(order, k)
	}
	root := EndpointKey{service, endpoint}
	dfs(root)
	slices.Reverse(order)
	v := map[EndpointKey]float64{root: 1}
	for _, k := range order {
		for _, c := range t.Services[k.Service].Endpoints[k.Endpoint].Calls {
			v[EndpointKey{c.Service, c.Endpoint}] += v[k] * float64(c.Repeat) * c.Probability
		}
	}
	return v, nil
}

// renderSpec writes the app spec: one slowpoke-emu per service in
// p.order, the target with the ground truth, cpus where p.cpus asks for
// more than one (always for the target), and the workload.
func renderSpec(seed int64, c Config, p configParams, demand map[string]float64) []byte {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("# Generated by internal/suite (seed %d); see docs/suite.md.", seed)
	w("# Topology %s:", c.Topology)
	for _, line := range strings.Split(p.sketch, "\n") {
		w("#   %s", line)
	}
	mode := "sequential"
	if c.Concurrent {
		mode = "concurrent"
	}
	w("# Internal calls: %s, %s. Target: %s (%s placement), bottleneck: %v.", c.Protocol, mode, c.Target, c.Placement, c.TargetIsBottleneck)
	for _, n := range p.notes {
		w("# %s", n)
	}
	w("# Per-request CPU demand (work_us x expected calls per request), us:")
	var line []string
	for i, name := range p.order {
		line = append(line, fmt.Sprintf("%s %s", name, trimFloat(demand[name])))
		if len(line) == 6 || i == len(p.order)-1 {
			w("#   %s", strings.Join(line, ", "))
			line = nil
		}
	}
	w("# Run: slowpoke validate -f app.yaml --target %s --reduce 0,10,...,90%%", c.Target)
	w("name: %s", c.Name)
	w("services:")
	for _, name := range p.order {
		s := c.Topo.Services[name]
		w("  - name: %s", name)
		w("    command: %s", emulatorCommand)
		w("    args: [-topology, topology.yaml, -service, %s]", name)
		w("    port: %d", s.Port)
		w("    protocol: %s", s.Protocol)
		if s.Protocol == emulator.ProtocolHTTP {
			w("    ready: {http_path: %s}", emulator.HealthPath)
		}
		if n := max(1, p.cpus[name]); n > 1 || name == c.Target {
			w("    cpus: %d", n)
		}
		if name == c.Target {
			w("    ground_truth: {env: %s, base_us: 0}", GroundTruthEnv)
		}
	}
	w("entry: http://127.0.0.1:%d", c.Topo.Services[p.order[0]].Port)
	w("workload:")
	w("  connections: %d", Connections)
	w("  warmup: %s", Warmup)
	w("  duration: %s", Duration)
	w("  requests:")
	w("    - {name: %s, method: GET, path: %s, weight: 1}", requestName, httpEndpoint)
	return []byte(b.String())
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

var safeName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Write writes dir/<c.Name>/app.yaml (c.Spec) and dir/<c.Name>/topology.yaml
// (c.Topo marshalled), creating the directories, and returns the spec's
// path.
func Write(dir string, c Config) (specPath string, err error) {
	if !safeName.MatchString(c.Name) {
		return "", fmt.Errorf("suite: configuration name %q is not lower-case letters, digits and '-'", c.Name)
	}
	if c.Topo == nil || len(c.Spec) == 0 {
		return "", errors.New("suite: configuration " + c.Name + " has no topology or no spec")
	}
	topo, err := c.Topo.Marshal()
	if err != nil {
		return "", fmt.Errorf("suite: %s: %w", c.Name, err)
	}
	header := fmt.Sprintf("# Generated by internal/suite for %s; format: docs/emulator.md.\n", c.Name)
	d := filepath.Join(dir, c.Name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(d, "topology.yaml"), append([]byte(header), topo...), 0o644); err != nil {
		return "", err
	}
	specPath = filepath.Join(d, "app.yaml")
	if err := os.WriteFile(specPath, c.Spec, 0o644); err != nil {
		return "", err
	}
	return specPath, nil
}
