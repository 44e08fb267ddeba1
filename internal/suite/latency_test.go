package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// TestLatencySuite: the four shapes are valid topologies with a target
// that has a ground truth, and their specs load.
func TestLatencySuite(t *testing.T) {
	cs, err := Latency(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4 {
		t.Fatalf("%d configurations, want 4", len(cs))
	}
	dir := t.TempDir()
	for _, c := range cs {
		p, err := Write(dir, c)
		if err != nil {
			t.Fatal(err)
		}
		s, err := spec.Load(p)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		svc, ok := s.Service(c.Target)
		if !ok || svc.GroundTruth == nil {
			t.Errorf("%s: target %q has no ground truth", c.Name, c.Target)
		}
		if _, err := emulator.LoadTopology(filepath.Join(filepath.Dir(p), "topology.yaml")); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		for _, sv := range c.Topo.Services {
			if sv.Port < LatencyPortBase || sv.Port >= 32768 {
				t.Errorf("%s: port %d outside the latency block", c.Name, sv.Port)
			}
		}
	}
	// The repeated shape calls the target twice, as one call repeated.
	b, _ := os.ReadFile(filepath.Join(dir, "lat-repeated", "topology.yaml"))
	if !strings.Contains(string(b), "repeat: 2") {
		t.Errorf("lat-repeated topology has no repeated call:\n%s", b)
	}
}
