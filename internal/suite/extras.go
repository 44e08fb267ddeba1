package suite

import (
	"math"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
)

// The mutex case of the paper: a does AWorkUS of work and calls b, which
// does BWorkUS of work and BMutexWorkUS under its service-wide mutex. b has
// MutexBCPUs cores, as in the paper, so that with cores of its own its CPU
// (at most 2/400us = 5000 req/s) outlasts the lock (1/350us = 2857 req/s).
// a keeps one core, so that the 20-80% points show both the rise and the
// plateau (the paper's a had two, and its plateau started at about 10%).
const (
	MutexAWorkUS      = 800
	MutexBWorkUS      = 50
	MutexBMutexWorkUS = 350
	MutexBCPUs        = 2
)

// mutexConfig is "mutex": a (entry, target) -> b (lock bottleneck).
func mutexConfig(seed int64, k int) (Config, error) {
	ep := mainEndpoint(emulator.ProtocolHTTP)
	topo := &emulator.Topology{Entry: "a", Services: map[string]emulator.Service{
		"a": {
			Port: PortBase + PortBlock*k, Protocol: emulator.ProtocolHTTP,
			Endpoints: map[string]emulator.Endpoint{ep: {
				WorkUS: MutexAWorkUS,
				Calls:  []emulator.Call{{Service: "b", Endpoint: ep, Repeat: 1, Probability: 1}},
			}},
		},
		"b": {
			Port: PortBase + PortBlock*k + 1, Protocol: emulator.ProtocolHTTP,
			Endpoints: map[string]emulator.Endpoint{ep: {WorkUS: MutexBWorkUS, MutexWorkUS: MutexBMutexWorkUS}},
		},
	}}
	return newConfig(seed, configParams{
		name: "mutex", topology: "mutex", sketch: "a (800 us) -> b (50 us + 350 us under a mutex)",
		protocol: emulator.ProtocolHTTP, placement: PlacementEntry, target: "a", topo: topo,
		order: []string{"a", "b"}, cpus: map[string]int{"b": MutexBCPUs},
		tags: []string{TagMutex, emulator.ProtocolHTTP, ModeSequential, PlacementEntry, TagExtra},
		notes: []string{
			"Expected: a alone limits at 1/800us = 1250 req/s; reducing a raises that until b limits:",
			"the lock admits at most 1/350us = 2857 req/s, b's CPU at most cpus_b/400us.",
			"With cores of its own (placement dedicated) b's 2 cores admit 5000 req/s and the lock",
			"is the plateau, as in the paper. Where b shares cores (placement shared, e.g. on",
			"a 2-core machine, where it shares one with the load generator) b's CPU is the plateau.",
		},
	})
}

// chain9Config is "chain9-coordination": a 9-service HTTP chain, target in
// the middle, so that every round of pauses reaches 8 services.
func chain9Config(seed int64, k int) (Config, error) {
	const name = "chain9-coordination"
	sh := shape{name: "chain9", calls: chain(9), sketch: "s0 -> s1 -> ... -> s4 (target) -> ... -> s8"}
	r := newRand(seed, name)
	works := make([]float64, sh.size())
	for i := range works {
		works[i] = math.Round(200 + 200*r.Float64())
	}
	uniqueMax(works, sh.visits())
	topo := buildTopology(sh, works, emulator.ProtocolHTTP, false, k)
	return newConfig(seed, configParams{
		name: name, topology: "chain9", sketch: sh.sketch, protocol: emulator.ProtocolHTTP,
		placement: PlacementMiddle, target: serviceName(4), topo: topo, order: serviceNames(sh.size()),
		tags: []string{"chain9", emulator.ProtocolHTTP, ModeSequential, PlacementMiddle, TagCoordination, TagExtra},
	})
}

// Tree43Width and Tree43Height give the balanced tree of the extras:
// 1 + 6 + 36 = 43 services.
const (
	Tree43Width  = 6
	Tree43Height = 3
)

// treeShape is a balanced tree: service0 the root, the children of
// service i are services i*width+1 .. i*width+width, height levels in all.
func treeShape(width, height int) shape {
	n, level := 0, 1
	for range height {
		n += level
		level *= width
	}
	c := make([][]edge, n)
	for i := range c {
		for j := 1; j <= width && i*width+j < n; j++ {
			c[i] = append(c[i], e(i*width+j))
		}
	}
	return shape{name: "tree43", calls: c, sketch: "" +
		"s0 -+-> s1 -+-> s7 .. s12\n" +
		"    +-> s2 -+-> s13 .. s18\n" +
		"    ...\n" +
		"    +-> s6 -+-> s37 .. s42"}
}

// tree43Config is "tree43": 43 HTTP services with 20-60 µs of work each,
// small enough for a 2-core machine; target service1, a middle node.
func tree43Config(seed int64, k int) (Config, error) {
	const name = "tree43"
	sh := treeShape(Tree43Width, Tree43Height)
	r := newRand(seed, name)
	works := make([]float64, sh.size())
	for i := range works {
		works[i] = math.Round(20 + 40*r.Float64())
	}
	uniqueMax(works, sh.visits())
	topo := buildTopology(sh, works, emulator.ProtocolHTTP, false, k)
	return newConfig(seed, configParams{
		name: name, topology: "tree43", sketch: sh.sketch, protocol: emulator.ProtocolHTTP,
		placement: PlacementMiddle, target: serviceName(1), topo: topo, order: serviceNames(sh.size()),
		tags: []string{TagTree43, emulator.ProtocolHTTP, ModeSequential, PlacementMiddle, TagExtra},
	})
}
