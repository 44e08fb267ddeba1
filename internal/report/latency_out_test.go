package report

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// latencyFixture is a validated latency what-if with two request types.
func latencyFixture() *Latency {
	dist := func(req string, p50 float64) LatencyDist {
		d := LatencyDist{Request: req, N: 1500, MeanMS: p50 * 1.1, P50MS: p50, P90MS: p50 * 1.5, P99MS: p50 * 2.5,
			P50CIMS: [2]float64{p50 * 0.98, p50 * 1.02}, P90CIMS: [2]float64{p50 * 1.45, p50 * 1.55}, P99CIMS: [2]float64{p50 * 2.3, p50 * 2.8}}
		for _, q := range LatencyQuantiles {
			d.QuantilesMS = append(d.QuantilesMS, p50*(0.5+q/50))
		}
		return d
	}
	l := &Latency{App: "shop", Target: "cart", CreatedAt: time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC),
		Settings:      LatencySettings{SpecPath: "app.yaml", Reductions: []string{"50%"}, RateShare: 0.5, MinRequests: 1500, Repetitions: 2, Validate: true},
		SaturationRPS: 1000, RateRPS: 500, TargetCostUS: 1200, DurationS: 3, BaselineBusyPct: 48,
		Baseline: []LatencyDist{dist("home", 2.4), dist("checkout/pay", 5)}}
	for _, b := range l.Baseline {
		t := dist(b.Request, b.P50MS*0.7)
		l.Points = append(l.Points, LatencyPoint{Request: b.Request, Reduction: "50%", ReductionUS: 600,
			Predicted: dist(b.Request, b.P50MS*0.72), PredictedP50MS: b.P50MS * 0.72, PredictedP90MS: b.P90MS * 0.72, PredictedP99MS: b.P99MS * 0.72,
			MannWhitneyP: 1e-20, Faster: true, True: &t, TrueP50MS: t.P50MS, TrueP90MS: t.P90MS, TrueP99MS: t.P99MS,
			ErrP50Pct: 2.9, ErrP90Pct: 2.9, ErrP99Pct: 2.9, Within: true, RateRPS: 430, PredictedBusyPct: 40.2, TrueBusyPct: 38.6})
	}
	return l
}

func TestLatencyJSONRoundTrip(t *testing.T) {
	l := latencyFixture()
	path := filepath.Join(t.TempDir(), "results.json")
	if err := WriteLatencyJSON(path, l); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLatencyJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != KindLatency || len(got.Points) != 2 || got.Points[1].Request != "checkout/pay" || got.Points[0].True == nil {
		t.Fatalf("round trip: %+v", got)
	}
	b, _ := os.ReadFile(path)
	for _, key := range []string{`"request"`, `"reduction_us"`, `"predicted_p50_ms"`, `"predicted_p99_ms"`, `"true_p50_ms"`, `"true_p99_ms"`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("results.json has no %s", key)
		}
	}
	other := filepath.Join(t.TempDir(), "pools.json")
	WritePoolsJSON(other, &Pools{App: "x"})
	if _, err := ReadLatencyJSON(other); err == nil || !strings.Contains(err.Error(), "not the results of slowpoke latency") {
		t.Errorf("reading a pools file: %v", err)
	}
}

func TestLatencyTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteLatencyTable(&b, latencyFixture()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"home", "checkout/pay", "baseline", "50% (600us)", "yes (p<1e-16)", "+2.9%", "2 of 2 predictions within ±5% at p50 and ±10% at p99",
		"cores busy: baseline 48%; 50%: 40% predicting at 430 req/s, 39% in the truth\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestLatencyPlotsAndHTML(t *testing.T) {
	dir := t.TempDir()
	l := latencyFixture()
	paths, err := WriteLatencyPlots(dir, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[1]) != "cdf-checkout-pay.svg" {
		t.Fatalf("plots %v", paths)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := xml.Unmarshal(b, new(struct{})); err != nil {
			t.Errorf("%s is not XML: %v", p, err)
		}
		for _, label := range []string{"baseline", "predicted", "true"} {
			if !bytes.Contains(b, []byte(label)) {
				t.Errorf("%s has no %q curve", p, label)
			}
		}
	}
	html := filepath.Join(dir, "report.html")
	if err := WriteLatencyHTML(html, l); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(html)
	for _, want := range []string{"Latency of shop if cart were faster", "checkout/pay", "<svg", "2 of 2 predictions", "slowpoke latency -f app.yaml --target cart --reduce 50% --validate --reps 2", "2.9%",
		"baseline 48%; 50%: 40% predicting at 430 req/s, 39% in the truth"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if bytes.Contains(b, []byte(`id="graph"`)) {
		t.Error("report.html has a call graph section")
	}
}
