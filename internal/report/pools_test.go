package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/pools"
)

func samplePools(t *testing.T) *Pools {
	t.Helper()
	var samples []pools.Sample
	for _, l := range []int{1, 2, 4, 8, 16, 32} {
		for i := range 12 {
			c := float64(l) * (0.97 + 0.005*float64(i))
			g := 100 * c / (1 + c*c/100)
			samples = append(samples, pools.Sample{Limit: l, Concurrency: c, Goodput: g})
		}
	}
	a, err := pools.Advise(samples)
	if err != nil {
		t.Fatal(err)
	}
	load := func(g float64) PoolsLoad {
		return PoolsLoad{Throughput: 500, Goodput: g, AttainmentPct: g / 5, P50MS: 20, P99MS: 90}
	}
	return &Pools{App: "shop", CreatedAt: time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC), SLAMS: 100,
		Settings: PoolsSettings{Connections: 64, Levels: []int{1, 2, 4, 8, 16, 32}, StepS: 2, SampleMS: 100, Repetitions: 2},
		Baseline: load(300),
		Services: []PoolService{{Service: "worker", Reason: "asked", ThresholdMS: 99.5, Advice: a, Samples: samples,
			Validation: &PoolValidation{RecommendedGoodput: 480, HalfGoodput: 200, DoubleGoodput: 450, UnlimitedGoodput: 100,
				RecommendedShareOfBestPct: 100, Sizes: []PoolTrial{
					{Label: "recommended", Size: a.Recommended, Runs: []PoolsLoad{load(480)}, Mean: load(480)},
					{Label: "half", Size: a.Recommended / 2, Mean: load(200)},
					{Label: "double", Size: 2 * a.Recommended, Mean: load(450)},
					{Label: "unlimited", Mean: load(100)},
				}}}},
		AdviceS: 31, ElapsedS: 80,
	}
}

func TestPoolsJSONTableAndPlot(t *testing.T) {
	p := samplePools(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	if err := WritePoolsJSON(path, p); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, field := range []string{`"kind": "pools"`, `"service": "worker"`, `"recommended":`, `"recommended_goodput": 480`, `"half_goodput": 200`, `"double_goodput": 450`} {
		if !bytes.Contains(b, []byte(field)) {
			t.Errorf("results.json lacks %s", field)
		}
	}
	back, err := ReadPoolsJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Services[0].Recommended != p.Services[0].Recommended || back.Services[0].Validation.HalfGoodput != 200 {
		t.Errorf("round trip: %+v", back.Services[0])
	}
	if _, err := ReadPoolsJSON(writeTemp(t, `{"kind":"rank"}`)); err == nil {
		t.Error("a ranking read as pools")
	}
	var tbl strings.Builder
	if err := WritePoolsTable(&tbl, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"worker", "recommended", "half", "double", "unlimited", "100.0% of the best"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
	}
	svg := filepath.Join(dir, PoolPlotName("worker"))
	if err := PlotPool(svg, &p.Services[0]); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("knee")) {
		t.Errorf("plot: %v", err)
	}
	page := filepath.Join(dir, "report.html")
	if err := WritePoolsHTML(page, p); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(page)
	for _, want := range []string{"Pool sizes for shop", "Validation of worker", "<svg", "slowpoke pools -f app.yaml --sla 100ms --connections 64", "unlimited"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, absent := range []string{"Call graph", "No point carries a flag"} {
		if bytes.Contains(html, []byte(absent)) {
			t.Errorf("report.html of pools shows %q", absent)
		}
	}
}

func writeTemp(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.json")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
