package suite

import (
	"fmt"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
)

// LatencyPortBase is where the latency configurations' port blocks start
// (PortBlock apart), above the blocks of Suite and Extras.
const LatencyPortBase = 27000

// latencyShape is one latency configuration: a topology whose entry is
// always "entry" serving http, the target, and a sketch for the spec.
type latencyShape struct {
	name, sketch, target string
	protocol             string // of the services behind the entry
	order                []string
	// endpoints: service -> work (µs), concurrent, calls (service names,
	// a name repeated for a repeated call).
	work       map[string]float64
	concurrent map[string]bool
	calls      map[string][]string
}

// latencyShapes are the shapes docs/latency.md derives the prediction for,
// each with the target's reduction moving the critical path or not.
var latencyShapes = []latencyShape{
	{
		name: "lat-sequential", target: "target", protocol: emulator.ProtocolHTTP,
		sketch: "entry -> a -> (target, then b): a chain, calls one after the other",
		order:  []string{"entry", "a", "target", "b"},
		work:   map[string]float64{"entry": 100, "a": 200, "target": 600, "b": 300},
		calls:  map[string][]string{"entry": {"a"}, "a": {"target", "b"}},
	},
	{
		name: "lat-fanout", target: "target", protocol: emulator.ProtocolGRPC,
		sketch:     "entry -> {target, b, c} at once: halving the target makes b the critical path",
		order:      []string{"entry", "target", "b", "c"},
		work:       map[string]float64{"entry": 100, "target": 800, "b": 600, "c": 300},
		concurrent: map[string]bool{"entry": true},
		calls:      map[string][]string{"entry": {"target", "b", "c"}},
	},
	{
		name: "lat-nested", target: "target", protocol: emulator.ProtocolHTTP,
		sketch:     "entry -> {x -> {target, c}, b}: fan-outs nested, b beside the inner one",
		order:      []string{"entry", "x", "target", "c", "b"},
		work:       map[string]float64{"entry": 100, "x": 100, "target": 700, "c": 400, "b": 500},
		concurrent: map[string]bool{"entry": true, "x": true},
		calls:      map[string][]string{"entry": {"x", "b"}, "x": {"target", "c"}},
	},
	{
		name: "lat-repeated", target: "target", protocol: emulator.ProtocolGRPC,
		sketch:     "entry -> {x -> (target, target), b}: the target called twice in a row beside b",
		order:      []string{"entry", "x", "target", "b"},
		work:       map[string]float64{"entry": 100, "x": 100, "target": 400, "b": 700},
		concurrent: map[string]bool{"entry": true},
		calls:      map[string][]string{"entry": {"x", "b"}, "x": {"target", "target"}},
	},
}

// Latency returns the configurations of the latency suite (slowpoke bench
// latency): the four call shapes of docs/latency.md on emulated services,
// the target's work reducible by its ground truth.
func Latency(seed int64) ([]Config, error) {
	var out []Config
	for k, sh := range latencyShapes {
		t := &emulator.Topology{Entry: "entry", Services: map[string]emulator.Service{}}
		for i, name := range sh.order {
			proto := protoOf(sh, name)
			ep := emulator.Endpoint{WorkUS: sh.work[name], Concurrent: sh.concurrent[name]}
			// Consecutive calls to one service are one call repeated.
			for _, callee := range sh.calls[name] {
				if n := len(ep.Calls); n > 0 && ep.Calls[n-1].Service == callee {
					ep.Calls[n-1].Repeat++
					continue
				}
				ep.Calls = append(ep.Calls, emulator.Call{Service: callee, Endpoint: mainEndpoint(protoOf(sh, callee)), Repeat: 1, Probability: 1})
			}
			t.Services[name] = emulator.Service{
				Host: "127.0.0.1", Port: LatencyPortBase + PortBlock*k + i, Protocol: proto,
				Endpoints: map[string]emulator.Endpoint{mainEndpoint(proto): ep},
			}
		}
		c, err := newConfig(seed, configParams{
			name: sh.name, topology: sh.name, sketch: sh.sketch, protocol: sh.protocol,
			concurrent: len(sh.concurrent) > 0, placement: latencyPlacement(sh), target: sh.target,
			topo: t, order: sh.order, tags: []string{"latency"},
		})
		if err != nil {
			return nil, fmt.Errorf("latency suite: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

func protoOf(sh latencyShape, name string) string {
	if name == "entry" {
		return emulator.ProtocolHTTP
	}
	return sh.protocol
}

func latencyPlacement(sh latencyShape) string {
	if len(sh.calls[sh.target]) > 0 {
		return PlacementMiddle
	}
	return PlacementLeaf
}
