package experiment

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// An application that runs already is measured with the spec's workload,
// as many times as asked, against its entry.
func TestMeasureAsDeployed(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	s, err := spec.Parse([]byte(fmt.Sprintf(`
name: app
services:
  - {name: front, attach: {port: 1}}
entry: %s
workload:
  connections: 2
  warmup: 50ms
  duration: 200ms
  requests:
    - {name: home, path: /}
`, srv.URL)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The service is this process: its CPU clock.
	cpu := func() map[string]time.Duration {
		c, err := proc.CPUClock(os.Getpid())
		if err != nil {
			t.Error(err)
		}
		return map[string]time.Duration{"front": c}
	}
	b, err := MeasureAsDeployed(context.Background(), s, 0, 0, 0, 2, cpu)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Runs) != 2 || b.RPS <= 0 || served.Load() == 0 {
		t.Fatalf("baseline %+v after %d requests served", b, served.Load())
	}
	if c := b.CPU; c == nil || c.ServicesUS["front"] <= 0 || c.MachineUS <= 0 || c.BusyPct <= 0 || c.BusyPct > 100 || c.Cores < 1 {
		t.Fatalf("CPU use %+v", b.CPU)
	}
	if b2, err := MeasureAsDeployed(context.Background(), s, 0, 0, 0, 1, nil); err != nil || b2.CPU != nil {
		t.Fatalf("without a CPU reader: %+v, %v", b2, err)
	}
	srv.Close()
	if _, err := MeasureAsDeployed(context.Background(), s, 0, 10*time.Millisecond, 50*time.Millisecond, 1, nil); err == nil || !strings.Contains(err.Error(), "as it runs") {
		t.Fatalf("a stopped application: %v", err)
	}
}

// The placement counts as changed only beyond the noise of the two
// baselines and beyond placementChangePct.
func TestPlacementChanged(t *testing.T) {
	tests := []struct {
		name           string
		deployed, base []float64
		want           bool
		word           string
	}{
		{"same", []float64{1000, 1010}, []float64{1005, 995}, false, ""},
		{"within noise", []float64{800, 1200}, []float64{1100, 1300}, false, ""},
		{"faster under slowpoke", []float64{1000, 1010}, []float64{1300, 1310}, true, "more"},
		{"slower under slowpoke", []float64{2000, 2020}, []float64{1000, 1010}, true, "less"},
		{"below the floor", []float64{1000, 1001}, []float64{1040, 1041}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := report.Baseline{RPS: report.Median(tt.deployed), Runs: tt.deployed}
			b := report.Baseline{RPS: report.Median(tt.base), Runs: tt.base}
			w, got := placementChanged(d, b)
			if got != tt.want || tt.want && !strings.Contains(w, "% "+tt.word+":") {
				t.Fatalf("changed %v (%q), want %v with %q", got, w, tt.want, tt.word)
			}
		})
	}
}
