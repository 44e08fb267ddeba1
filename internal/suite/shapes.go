package suite

// edge is one downstream call of a service's main endpoint.
type edge struct {
	to int     // callee service index
	p  float64 // probability of the call (emulator semantics: independent per call)
	// revisit calls the callee's second endpoint, which only does work;
	// used by dyn-cycle, whose "2 -> 1 again" the emulator cannot express
	// as a call back into the endpoint that is already on the call stack.
	revisit bool
}

// shape is a topology of the suite: service i calls calls[i] from its main
// endpoint. Service 0 is the entry.
type shape struct {
	name    string
	calls   [][]edge
	sketch  string // ASCII sketch, for comments and docs
	dynamic bool   // has probabilistic calls
	// secondLeafIsMiddle: the shape has no service with both a caller and
	// callees (fan-outs); the "middle" placement then takes a leaf other
	// than the one of the "leaf" placement.
	secondLeafIsMiddle bool
}

func (s shape) size() int { return len(s.calls) }

func e(to int) edge             { return edge{to: to, p: 1} }
func ep(to int, p float64) edge { return edge{to: to, p: p} }
func revisit(to int) edge       { return edge{to: to, p: 1, revisit: true} }
func calls(es ...edge) []edge   { return es }
func none() []edge              { return nil }

// chain is s0 -> s1 -> ... -> s(n-1).
func chain(n int) [][]edge {
	c := make([][]edge, n)
	for i := 0; i+1 < n; i++ {
		c[i] = calls(e(i + 1))
	}
	return c
}

// fanout is s0 calling s1..s(leaves).
func fanout(leaves int) [][]edge {
	c := make([][]edge, leaves+1)
	for i := 1; i <= leaves; i++ {
		c[0] = append(c[0], e(i))
	}
	return c
}

// mainShapes are the 9 topologies of the 108-configuration suite, in suite
// order.
var mainShapes = []shape{
	{name: "chain3", calls: chain(3), sketch: "s0 -> s1 -> s2"},
	{name: "chain10", calls: chain(10), sketch: "s0 -> s1 -> s2 -> ... -> s9"},
	{name: "fanout3", calls: fanout(3), secondLeafIsMiddle: true, sketch: "" +
		"s0 -+-> s1\n" +
		"    +-> s2\n" +
		"    +-> s3"},
	{name: "fanout7", calls: fanout(7), secondLeafIsMiddle: true, sketch: "" +
		"s0 -+-> s1\n" +
		"    +-> s2\n" +
		"    ...\n" +
		"    +-> s7"},
	{name: "dag-cross", calls: [][]edge{
		calls(e(1), e(2), e(3), e(4)),
		calls(e(4)),
		calls(e(4)),
		calls(e(2)),
		none(),
	}, sketch: "" +
		"s0 -+-> s1 ---------> s4\n" +
		"    +-> s2 ---------> s4\n" +
		"    +-> s3 -> s2 ---> s4\n" +
		"    +---------------> s4"},
	{name: "dag-relay", calls: [][]edge{
		calls(e(1), e(2), e(3)),
		calls(e(4)),
		calls(e(4)),
		calls(e(4)),
		calls(e(5), e(6)),
		none(),
		none(),
	}, sketch: "" +
		"s0 -+-> s1 -+\n" +
		"    +-> s2 -+-> s4 -+-> s5\n" +
		"    +-> s3 -+       +-> s6"},
	{name: "tree-unbalanced", calls: [][]edge{
		calls(e(1), e(2), e(3)),
		none(),
		calls(e(4)),
		calls(e(5), e(6)),
		none(),
		calls(e(7)),
		none(),
		none(),
	}, sketch: "" +
		"s0 -+-> s1\n" +
		"    +-> s2 ---> s4\n" +
		"    +-> s3 -+-> s5 -> s7\n" +
		"            +-> s6"},
	{name: "dyn-chain", dynamic: true, calls: [][]edge{
		calls(e(1)),
		calls(ep(2, 0.8), ep(3, 0.2)),
		calls(e(4)),
		none(),
		none(),
	}, sketch: "" +
		"s0 -> s1 -+-(80%)-> s2 -> s4\n" +
		"          +-(20%)-> s3"},
	{name: "dyn-tree2", dynamic: true, calls: [][]edge{
		calls(ep(1, 0.2), ep(2, 0.3), ep(3, 0.5)),
		calls(ep(4, 0.8)),
		none(),
		calls(ep(5, 0.3), ep(6, 0.7)),
		none(),
		none(),
		none(),
	}, sketch: "" +
		"s0 -+-(20%)-> s1 --(80%)-> s4\n" +
		"    +-(30%)-> s2\n" +
		"    +-(50%)-> s3 -+-(30%)-> s5\n" +
		"                  +-(70%)-> s6"},
}

// dynExtraShapes are the two dynamic topologies that are not part of the
// 108 (they are in Extras).
var dynExtraShapes = []shape{
	{name: "dyn-cache", dynamic: true, calls: [][]edge{
		calls(e(1)),
		calls(ep(2, 0.25)),
		none(),
	}, sketch: "s0 -> s1 --(25%)-> s2"},
	{name: "dyn-cycle", dynamic: true, calls: [][]edge{
		calls(e(1)),
		calls(ep(2, 0.34), ep(3, 0.33), ep(4, 0.33)),
		calls(revisit(1)),
		none(),
		none(),
	}, sketch: "" +
		"s0 -> s1 -+-(34%)-> s2 -> s1' (s1's second endpoint: work only)\n" +
		"          +-(33%)-> s3\n" +
		"          +-(33%)-> s4"},
}

// roles returns, for each service, whether some service calls it and
// whether it calls some service.
func (s shape) roles() (hasCaller, hasCallee []bool) {
	n := s.size()
	hasCaller, hasCallee = make([]bool, n), make([]bool, n)
	for i, cs := range s.calls {
		for _, c := range cs {
			hasCallee[i] = true
			hasCaller[c.to] = true
		}
	}
	return hasCaller, hasCallee
}

// candidates returns the services that may hold the target for each
// placement (before the fan-out rule, which depends on the leaf chosen).
func (s shape) candidates() (middle, leaf []int) {
	hasCaller, hasCallee := s.roles()
	for i := 1; i < s.size(); i++ {
		switch {
		case hasCaller[i] && hasCallee[i]:
			middle = append(middle, i)
		case hasCaller[i] && !hasCallee[i]:
			leaf = append(leaf, i)
		}
	}
	if s.secondLeafIsMiddle {
		middle = leaf
	}
	return middle, leaf
}

// visits returns the expected number of calls each service receives per
// user request (to service 0), following the emulator's semantics: each
// call is made independently with its probability.
func (s shape) visits() []float64 {
	v := make([]float64, s.size())
	var walk func(i int, m float64)
	walk = func(i int, m float64) {
		v[i] += m
		for _, c := range s.calls[i] {
			if c.revisit {
				v[c.to] += m * c.p
				continue
			}
			walk(c.to, m*c.p)
		}
	}
	walk(0, 1)
	return v
}
