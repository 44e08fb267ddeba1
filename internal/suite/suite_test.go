package suite

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

func mustSuite(t *testing.T, seed int64) []Config {
	t.Helper()
	all, err := Suite(seed)
	if err != nil {
		t.Fatalf("Suite(%d): %v", seed, err)
	}
	return all
}

func mustExtras(t *testing.T, seed int64) []Config {
	t.Helper()
	ex, err := Extras(seed)
	if err != nil {
		t.Fatalf("Extras(%d): %v", seed, err)
	}
	return ex
}

func everything(t *testing.T, seed int64) []Config {
	return append(mustSuite(t, seed), mustExtras(t, seed)...)
}

func index(t *testing.T, name string) int {
	t.Helper()
	i, err := strconv.Atoi(strings.TrimPrefix(name, "service"))
	if err != nil || !strings.HasPrefix(name, "service") {
		t.Fatalf("service name %q is not service<N>", name)
	}
	return i
}

func TestDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name string
		gen  func(int64) ([]Config, error)
	}{
		{"Suite", Suite},
		{"Extras", Extras},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.gen(7)
			if err != nil {
				t.Fatal(err)
			}
			b, err := tc.gen(7)
			if err != nil {
				t.Fatal(err)
			}
			other, err := tc.gen(8)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(b) || len(a) != len(other) {
				t.Fatalf("lengths %d, %d, %d", len(a), len(b), len(other))
			}
			differ := 0
			for i := range a {
				if !bytes.Equal(a[i].Spec, b[i].Spec) {
					t.Errorf("%s: specs differ for the same seed", a[i].Name)
				}
				ta, err := a[i].Topo.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				tb, _ := b[i].Topo.Marshal()
				if !bytes.Equal(ta, tb) {
					t.Errorf("%s: topologies differ for the same seed", a[i].Name)
				}
				if !slices.Equal(a[i].Tags, b[i].Tags) || a[i].Target != b[i].Target {
					t.Errorf("%s: tags or target differ for the same seed", a[i].Name)
				}
				to, _ := other[i].Topo.Marshal()
				if !bytes.Equal(ta, to) {
					differ++
				}
			}
			if differ == 0 {
				t.Errorf("seeds 7 and 8 give identical topologies")
			}
		})
	}
}

func TestNamesAndPorts(t *testing.T) {
	all := mustSuite(t, 1)
	if len(all) != 108 {
		t.Fatalf("Suite has %d configurations, want 108", len(all))
	}
	perTopo := map[string]int{}
	for _, c := range all {
		perTopo[c.Topology]++
		want := fmt.Sprintf("%s-%s-%s-%s", c.Topology, c.Protocol, modeName(c.Concurrent), c.Placement)
		if c.Name != want {
			t.Errorf("name %q, want %q", c.Name, want)
		}
	}
	wantTopos := []string{"chain3", "chain10", "fanout3", "fanout7", "dag-cross", "dag-relay", "tree-unbalanced", "dyn-chain", "dyn-tree2"}
	for _, topo := range wantTopos {
		if perTopo[topo] != 12 {
			t.Errorf("topology %s: %d configurations, want 12", topo, perTopo[topo])
		}
	}
	if len(perTopo) != len(wantTopos) {
		t.Errorf("topologies %v, want %v", perTopo, wantTopos)
	}
	names := map[string]bool{}
	ports := map[int]string{}
	for _, c := range everything(t, 1) {
		if names[c.Name] {
			t.Errorf("name %q used twice", c.Name)
		}
		names[c.Name] = true
		if tags := slices.Compact(slices.Sorted(slices.Values(c.Tags))); len(tags) != len(c.Tags) {
			t.Errorf("%s: duplicate tags in %v", c.Name, c.Tags)
		}
		if !safeName.MatchString(c.Name) {
			t.Errorf("name %q is not file-system safe", c.Name)
		}
		for sn, s := range c.Topo.Services {
			if other, dup := ports[s.Port]; dup {
				t.Errorf("port %d of %s/%s already used by %s", s.Port, c.Name, sn, other)
			}
			ports[s.Port] = c.Name + "/" + sn
			if s.Port < 1024 || s.Port >= 32768 {
				t.Errorf("%s/%s: port %d outside 1024..32767", c.Name, sn, s.Port)
			}
		}
	}
}

// TestSpecsMatchTopologies: every topology validates, every spec parses
// and describes the topology's services.
func TestSpecsMatchTopologies(t *testing.T) {
	dir := t.TempDir()
	for _, c := range everything(t, 1) {
		t.Run(c.Name, func(t *testing.T) {
			if err := c.Topo.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			s, err := spec.Parse(c.Spec, dir)
			if err != nil {
				t.Fatalf("spec.Parse: %v\n%s", err, c.Spec)
			}
			if s.Name != c.Name {
				t.Errorf("spec name %q", s.Name)
			}
			if len(s.Services) != len(c.Topo.Services) || c.Services != len(s.Services) {
				t.Errorf("spec has %d services, topology %d, Config.Services %d", len(s.Services), len(c.Topo.Services), c.Services)
			}
			if err := s.CheckTarget(c.Target); err != nil {
				t.Error(err)
			}
			entry := c.Topo.Services[c.Topo.Entry]
			if want := fmt.Sprintf("http://127.0.0.1:%d", entry.Port); s.Entry != want {
				t.Errorf("entry %q, want %q", s.Entry, want)
			}
			if entry.Protocol != emulator.ProtocolHTTP {
				t.Errorf("entry service serves %s", entry.Protocol)
			}
			if len(s.Workload.Requests) != 1 || s.Workload.Requests[0].Path != httpEndpoint {
				t.Errorf("requests %+v", s.Workload.Requests)
			} else if _, ok := entry.Endpoints[s.Workload.Requests[0].Path]; !ok {
				t.Errorf("the request's path is not an endpoint of the entry service")
			}
			w := s.Workload
			if w.Connections != 128 || w.Warmup.Duration.String() != "1s" || w.Duration.Duration.String() != "3s" {
				t.Errorf("workload %+v", w)
			}
			for _, sv := range s.Services {
				ts, ok := c.Topo.Services[sv.Name]
				if !ok {
					t.Errorf("spec service %q not in the topology", sv.Name)
					continue
				}
				if sv.Port != ts.Port || sv.Protocol != ts.Protocol {
					t.Errorf("%s: spec port/protocol %d/%s, topology %d/%s", sv.Name, sv.Port, sv.Protocol, ts.Port, ts.Protocol)
				}
				if sv.Command != "slowpoke-emu" || !slices.Equal(sv.Args, []string{"-topology", "topology.yaml", "-service", sv.Name}) {
					t.Errorf("%s: command %q %q", sv.Name, sv.Command, sv.Args)
				}
				wantReady := ""
				if sv.Protocol == emulator.ProtocolHTTP {
					wantReady = "/healthz"
				}
				if sv.Ready.HTTPPath != wantReady {
					t.Errorf("%s: ready path %q, want %q", sv.Name, sv.Ready.HTTPPath, wantReady)
				}
				isTarget := sv.Name == c.Target
				if isTarget != (sv.GroundTruth != nil) {
					t.Errorf("%s: ground truth %+v, target %v", sv.Name, sv.GroundTruth, isTarget)
				}
				if isTarget && (sv.GroundTruth.Env != "EMU_WORK_OFFSET_US" || sv.GroundTruth.BaseUS != 0 || sv.CPUs != 1) {
					t.Errorf("%s: target ground truth %+v, cpus %d", sv.Name, sv.GroundTruth, sv.CPUs)
				}
			}
		})
	}
}

// edges renders a topology's calls as "from>to", with "@p" for a
// probability below 1 and "'" for a call to the second (revisit) endpoint.
func edges(t *testing.T, topo *emulator.Topology) []string {
	var out []string
	for name, s := range topo.Services {
		for epName, ep := range s.Endpoints {
			if epName == httpRevisit || epName == grpcRevisit {
				if len(ep.Calls) > 0 {
					t.Errorf("%s: the revisit endpoint makes calls", name)
				}
				continue
			}
			for _, c := range ep.Calls {
				e := fmt.Sprintf("%d>%d", index(t, name), index(t, c.Service))
				if c.Probability < 1 {
					e += "@" + strconv.FormatFloat(c.Probability, 'f', -1, 64)
				}
				if c.Endpoint == httpRevisit || c.Endpoint == grpcRevisit {
					e += "'"
				}
				if c.Repeat != 1 {
					e += "x" + strconv.Itoa(c.Repeat)
				}
				out = append(out, e)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestEdges(t *testing.T) {
	want := map[string]struct {
		services int
		edges    string
	}{
		"chain3":          {3, "0>1 1>2"},
		"chain10":         {10, "0>1 1>2 2>3 3>4 4>5 5>6 6>7 7>8 8>9"},
		"fanout3":         {4, "0>1 0>2 0>3"},
		"fanout7":         {8, "0>1 0>2 0>3 0>4 0>5 0>6 0>7"},
		"dag-cross":       {5, "0>1 0>2 0>3 0>4 1>4 2>4 3>2"},
		"dag-relay":       {7, "0>1 0>2 0>3 1>4 2>4 3>4 4>5 4>6"},
		"tree-unbalanced": {8, "0>1 0>2 0>3 2>4 3>5 3>6 5>7"},
		"dyn-chain":       {5, "0>1 1>2@0.8 1>3@0.2 2>4"},
		"dyn-tree2":       {7, "0>1@0.2 0>2@0.3 0>3@0.5 1>4@0.8 3>5@0.3 3>6@0.7"},
		"dyn-cache":       {3, "0>1 1>2@0.25"},
		"dyn-cycle":       {5, "0>1 1>2@0.34 1>3@0.33 1>4@0.33 2>1'"},
		"chain9":          {9, "0>1 1>2 2>3 3>4 4>5 5>6 6>7 7>8"},
	}
	seen := map[string]bool{}
	for _, c := range everything(t, 3) {
		w, ok := want[c.Topology]
		if !ok {
			continue
		}
		seen[c.Topology] = true
		got := edges(t, c.Topo)
		wantEdges := strings.Fields(w.edges)
		sort.Strings(wantEdges)
		if !slices.Equal(got, wantEdges) {
			t.Errorf("%s: edges %v, want %v", c.Name, got, wantEdges)
		}
		if c.Services != w.services || len(c.Topo.Services) != w.services {
			t.Errorf("%s: %d services, want %d", c.Name, c.Services, w.services)
		}
		for name, s := range c.Topo.Services {
			wantProto := c.Protocol
			if name == c.Topo.Entry {
				wantProto = emulator.ProtocolHTTP
			}
			if s.Protocol != wantProto {
				t.Errorf("%s: %s serves %s, want %s", c.Name, name, s.Protocol, wantProto)
			}
			for epName, ep := range s.Endpoints {
				if ep.Concurrent != (c.Concurrent && len(ep.Calls) > 0) {
					t.Errorf("%s: %s %s: concurrent %v", c.Name, name, epName, ep.Concurrent)
				}
			}
		}
		if c.Topo.Entry != "service0" {
			t.Errorf("%s: entry %q", c.Name, c.Topo.Entry)
		}
	}
	for topo := range want {
		if !seen[topo] {
			t.Errorf("no configuration of topology %s", topo)
		}
	}
}

// roles returns which services have a caller and which have callees.
func roles(topo *emulator.Topology) (caller, callee map[string]bool) {
	caller, callee = map[string]bool{}, map[string]bool{}
	for name, s := range topo.Services {
		for _, ep := range s.Endpoints {
			for _, c := range ep.Calls {
				callee[name] = true
				caller[c.Service] = true
			}
		}
	}
	return caller, callee
}

func TestPlacements(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		all := append(mustSuite(t, seed), mustExtras(t, seed)...)
		leafTarget := map[string]string{} // topology/protocol/mode -> leaf target
		for _, c := range all {
			if c.Placement == PlacementLeaf {
				leafTarget[fmt.Sprint(c.Topology, c.Protocol, c.Concurrent)] = c.Target
			}
		}
		for _, c := range all {
			caller, callee := roles(c.Topo)
			fanout := strings.HasPrefix(c.Topology, "fanout")
			switch c.Placement {
			case PlacementEntry:
				if c.Target != c.Topo.Entry {
					t.Errorf("seed %d %s: entry placement, target %s", seed, c.Name, c.Target)
				}
			case PlacementLeaf:
				if !caller[c.Target] || callee[c.Target] {
					t.Errorf("seed %d %s: leaf placement, target %s is not a leaf", seed, c.Name, c.Target)
				}
			case PlacementMiddle:
				if fanout {
					if !caller[c.Target] || callee[c.Target] || c.Target == leafTarget[fmt.Sprint(c.Topology, c.Protocol, c.Concurrent)] {
						t.Errorf("seed %d %s: fan-out middle placement, target %s is not a second leaf", seed, c.Name, c.Target)
					}
				} else if !caller[c.Target] || !callee[c.Target] {
					t.Errorf("seed %d %s: middle placement, target %s lacks a caller or callees", seed, c.Name, c.Target)
				}
			default:
				t.Errorf("seed %d %s: placement %q", seed, c.Name, c.Placement)
			}
		}
	}
}

// TestDemand checks Visits and Demand on hand-computed cases and against
// the shapes' own expectation.
func TestDemand(t *testing.T) {
	configs := everything(t, 1)
	for _, tc := range []struct {
		topology string
		visits   map[string]float64
	}{
		{"chain3", map[string]float64{"service0": 1, "service1": 1, "service2": 1}},
		{"dag-cross", map[string]float64{"service0": 1, "service1": 1, "service2": 2, "service3": 1, "service4": 4}},
		{"dag-relay", map[string]float64{"service4": 3, "service5": 3, "service6": 3}},
		{"dyn-chain", map[string]float64{"service1": 1, "service2": 0.8, "service3": 0.2, "service4": 0.8}},
		{"dyn-tree2", map[string]float64{"service1": 0.2, "service2": 0.3, "service3": 0.5, "service4": 0.16, "service5": 0.15, "service6": 0.35}},
		{"dyn-cache", map[string]float64{"service1": 1, "service2": 0.25}},
		{"dyn-cycle", map[string]float64{"service1": 1.34, "service2": 0.34, "service3": 0.33, "service4": 0.33}},
	} {
		t.Run(tc.topology, func(t *testing.T) {
			var c *Config
			for _, x := range configs {
				if x.Topology == tc.topology {
					c = &x
					break
				}
			}
			if c == nil {
				t.Fatal("no configuration")
			}
			v, err := Visits(c.Topo, "service0", httpEndpoint)
			if err != nil {
				t.Fatal(err)
			}
			perService := map[string]float64{}
			for k, n := range v {
				perService[k.Service] += n
			}
			for s, want := range tc.visits {
				if math.Abs(perService[s]-want) > 1e-9 {
					t.Errorf("%s: %v calls per request, want %v", s, perService[s], want)
				}
			}
			d, err := Demand(c.Topo, "service0", httpEndpoint)
			if err != nil {
				t.Fatal(err)
			}
			for name, s := range c.Topo.Services {
				want := 0.0
				for epName, ep := range s.Endpoints {
					want += v[EndpointKey{name, epName}] * (ep.WorkUS + ep.MutexWorkUS)
				}
				if math.Abs(d[name]-want) > 1e-9 {
					t.Errorf("%s: demand %v, want %v", name, d[name], want)
				}
			}
		})
	}
	for _, sh := range append(slices.Clone(mainShapes), dynExtraShapes...) {
		topo := buildTopology(sh, make([]float64, sh.size()), emulator.ProtocolGRPC, false, 0)
		v, err := Visits(topo, "service0", httpEndpoint)
		if err != nil {
			t.Fatal(err)
		}
		per := map[string]float64{}
		for k, n := range v {
			per[k.Service] += n
		}
		for i, want := range sh.visits() {
			if math.Abs(per[serviceName(i)]-want) > 1e-9 {
				t.Errorf("%s: service%d: Visits %v, shape %v", sh.name, i, per[serviceName(i)], want)
			}
		}
	}
	if _, err := Visits(&emulator.Topology{}, "x", "/y"); err == nil {
		t.Error("Visits of an invalid topology: no error")
	}
}

func TestWorkAndBottleneck(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 4, 5, 99} {
		all := append(mustSuite(t, seed), mustExtras(t, seed)...)
		works := map[string]string{} // topology -> works, the same for all its variants
		type group struct{ bottleneck, other int }
		groups := map[string]*group{}
		for _, c := range all {
			d, err := Demand(c.Topo, c.Topo.Entry, httpEndpoint)
			if err != nil {
				t.Fatal(err)
			}
			best, nBest := 0.0, 0
			for _, x := range d {
				best = max(best, x)
			}
			for _, x := range d {
				if x == best {
					nBest++
				}
			}
			if nBest != 1 {
				t.Errorf("seed %d %s: %d services share the largest demand", seed, c.Name, nBest)
			}
			if got := d[c.Target] == best; got != c.TargetIsBottleneck {
				t.Errorf("seed %d %s: TargetIsBottleneck %v, demand says %v", seed, c.Name, c.TargetIsBottleneck, got)
			}
			wantTag := TagNonBottleneck
			if c.TargetIsBottleneck {
				wantTag = TagBottleneck
			}
			if !slices.Contains(c.Tags, wantTag) {
				t.Errorf("seed %d %s: tags %v lack %q", seed, c.Name, c.Tags, wantTag)
			}
			if c.Topology == "mutex" || c.Topology == "chain9" || c.Topology == "tree43" {
				continue // other work rules, checked in TestExtras
			}
			var ws []string
			for i := range c.Services {
				s := c.Topo.Services[serviceName(i)]
				for _, ep := range s.Endpoints {
					if ep.WorkUS < WorkMinUS || ep.WorkUS > WorkMaxUS || ep.WorkUS != math.Round(ep.WorkUS) {
						t.Errorf("seed %d %s: service%d work %v", seed, c.Name, i, ep.WorkUS)
					}
				}
				ws = append(ws, fmt.Sprint(s.Endpoints[mainEndpoint(s.Protocol)].WorkUS))
			}
			key := strings.Join(ws, ",")
			if prev, ok := works[c.Topology]; ok && prev != key {
				t.Errorf("seed %d %s: works %s differ from the topology's other variants %s", seed, c.Name, key, prev)
			}
			works[c.Topology] = key
			gk := fmt.Sprint(c.Topology, c.Protocol, c.Concurrent)
			if groups[gk] == nil {
				groups[gk] = &group{}
			}
			if c.TargetIsBottleneck {
				groups[gk].bottleneck++
			} else {
				groups[gk].other++
			}
		}
		if len(groups) != 11*4 {
			t.Errorf("seed %d: %d topology x protocol x mode groups, want 44", seed, len(groups))
		}
		for k, g := range groups {
			if g.bottleneck < 1 || g.other < 1 {
				t.Errorf("seed %d %s: %d bottleneck and %d other targets among the 3 placements", seed, k, g.bottleneck, g.other)
			}
		}
	}
}

func TestUniqueMax(t *testing.T) {
	works := []float64{2000, 2000, 1000, 2000}
	uniqueMax(works, []float64{1, 1, 2, 1})
	if !slices.Equal(works, []float64{2000, 1999, 999, 1999}) {
		t.Errorf("works %v", works)
	}
}

func TestSubset(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 4, 5, 6, 7, 8, 42} {
		all := mustSuite(t, seed)
		sub := Subset(all)
		if len(sub) < 12 || len(sub) > 16 {
			t.Errorf("seed %d: subset of %d configurations, want 12..16", seed, len(sub))
		}
		var tagged []string
		for _, c := range all {
			if slices.Contains(c.Tags, TagSubset) {
				tagged = append(tagged, c.Name)
			}
		}
		var names []string
		cover := map[string]bool{}
		for _, c := range sub {
			names = append(names, c.Name)
			if !slices.Contains(c.Tags, TagSubset) {
				t.Errorf("seed %d %s: not tagged subset", seed, c.Name)
			}
			for _, f := range []string{"topology " + c.Topology, "protocol " + c.Protocol, "mode " + modeName(c.Concurrent),
				"placement " + c.Placement, fmt.Sprint("bottleneck ", c.TargetIsBottleneck)} {
				cover[f] = true
			}
		}
		if !slices.Equal(names, tagged) {
			t.Errorf("seed %d: Subset %v, tagged by Suite %v", seed, names, tagged)
		}
		for _, f := range []string{"protocol http", "protocol grpc", "mode seq", "mode conc", "placement entry", "placement middle",
			"placement leaf", "bottleneck true", "bottleneck false"} {
			if !cover[f] {
				t.Errorf("seed %d: subset lacks %s", seed, f)
			}
		}
		for _, sh := range mainShapes {
			if !cover["topology "+sh.name] {
				t.Errorf("seed %d: subset lacks topology %s", seed, sh.name)
			}
		}
	}
	// Subset must not alias the caller's tags.
	all := mustSuite(t, 1)
	for i := range all {
		all[i].Tags = slices.DeleteFunc(all[i].Tags, func(s string) bool { return s == TagSubset })
		all[i].Tags = slices.Clip(all[i].Tags)
	}
	sub := Subset(all)
	for _, c := range all {
		if slices.Contains(c.Tags, TagSubset) {
			t.Errorf("Subset changed the tags of %s", c.Name)
		}
	}
	if len(sub) == 0 {
		t.Error("empty subset")
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	all := mustSuite(t, 1)
	extras := mustExtras(t, 1)
	var pick []Config
	for _, c := range all {
		if c.Placement == PlacementMiddle && !c.Concurrent {
			pick = append(pick, c)
		}
	}
	pick = append(pick, extras...)
	for _, c := range pick {
		t.Run(c.Name, func(t *testing.T) {
			p, err := Write(dir, c)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, c.Name, "app.yaml"); p != want {
				t.Errorf("spec path %q, want %q", p, want)
			}
			s, err := spec.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != c.Name || s.CheckTarget(c.Target) != nil {
				t.Errorf("loaded spec %q, target %q", s.Name, c.Target)
			}
			topo, err := emulator.LoadTopology(filepath.Join(dir, c.Name, "topology.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := topo.Marshal()
			want, _ := c.Topo.Marshal()
			if !bytes.Equal(got, want) {
				t.Errorf("topology on disk differs:\n%s\nwant\n%s", got, want)
			}
			for _, sv := range s.Services {
				if _, ok := topo.Services[sv.Name]; !ok {
					t.Errorf("spec service %s not in topology.yaml", sv.Name)
				}
			}
			onDisk, _ := os.ReadFile(p)
			if !bytes.Equal(onDisk, c.Spec) {
				t.Error("app.yaml differs from Config.Spec")
			}
		})
	}
	for _, bad := range []Config{
		{Name: "../x", Topo: all[0].Topo, Spec: all[0].Spec},
		{Name: "Upper", Topo: all[0].Topo, Spec: all[0].Spec},
		{Name: "nospec", Topo: all[0].Topo},
		{Name: "notopo", Spec: all[0].Spec},
	} {
		if _, err := Write(dir, bad); err == nil {
			t.Errorf("Write(%q): no error", bad.Name)
		}
	}
}

func TestExtras(t *testing.T) {
	ex := mustExtras(t, 1)
	byName := map[string]Config{}
	dynamic := map[string]int{}
	for _, c := range ex {
		byName[c.Name] = c
		if !slices.Contains(c.Tags, TagExtra) {
			t.Errorf("%s: tags %v lack extra", c.Name, c.Tags)
		}
		if slices.Contains(c.Tags, TagDynamic) {
			dynamic[c.Topology]++
		}
	}
	if dynamic["dyn-cache"] != 12 || dynamic["dyn-cycle"] != 12 || len(ex) != 27 {
		t.Errorf("dynamic extras %v, %d extras in all", dynamic, len(ex))
	}

	m := byName["mutex"]
	if m.Target != "a" || m.Services != 2 || !m.TargetIsBottleneck || !slices.Contains(m.Tags, TagMutex) {
		t.Errorf("mutex: %+v", m)
	}
	if a, b := m.Topo.Services["a"].Endpoints["/run"], m.Topo.Services["b"].Endpoints["/run"]; a.WorkUS != 800 ||
		len(a.Calls) != 1 || a.Calls[0].Service != "b" || b.WorkUS != 50 || b.MutexWorkUS != 350 {
		t.Errorf("mutex endpoints a %+v, b %+v", a, b)
	}
	if ms, err := spec.Parse(m.Spec, t.TempDir()); err != nil {
		t.Errorf("mutex spec: %v", err)
	} else if a, _ := ms.Service("a"); a.CPUs != 1 {
		t.Errorf("mutex: a has cpus %d, want 1", a.CPUs)
	} else if b, _ := ms.Service("b"); b.CPUs != 2 {
		t.Errorf("mutex: b has cpus %d, want 2 (so that with cores of its own the lock, not its CPU, is the plateau)", b.CPUs)
	}

	ch := byName["chain9-coordination"]
	if ch.Services != 9 || ch.Target != "service4" || ch.Placement != PlacementMiddle || ch.Protocol != "http" || !slices.Contains(ch.Tags, TagCoordination) {
		t.Errorf("chain9: %+v", ch)
	}
	for name, s := range ch.Topo.Services {
		if w := s.Endpoints["/run"].WorkUS; w < 200 || w > 400 {
			t.Errorf("chain9 %s: work %v", name, w)
		}
	}

	tr := byName["tree43"]
	if tr.Services != 43 || len(tr.Topo.Services) != 43 || tr.Target != "service1" || tr.Placement != PlacementMiddle || !slices.Contains(tr.Tags, TagTree43) {
		t.Errorf("tree43: %d services, target %s, placement %s, tags %v", tr.Services, tr.Target, tr.Placement, tr.Tags)
	}
	children := map[int]int{}
	leaves := 0
	for name, s := range tr.Topo.Services {
		ep := s.Endpoints["/run"]
		if ep.WorkUS < 20 || ep.WorkUS > 60 || s.Protocol != "http" {
			t.Errorf("tree43 %s: work %v, protocol %s", name, ep.WorkUS, s.Protocol)
		}
		children[len(ep.Calls)]++
		if len(ep.Calls) == 0 {
			leaves++
		}
	}
	if children[6] != 7 || leaves != 36 {
		t.Errorf("tree43: children per service %v, want 7 with 6 and 36 leaves", children)
	}
	caller, _ := roles(tr.Topo)
	if len(caller) != 42 {
		t.Errorf("tree43: %d services are called, want 42", len(caller))
	}
}
