package report

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// These tests complement latency_out_test.go (which has latencyFixture):
// the corners of the JSON, plot names, colours and the reproduce command,
// the page without validation, and hostile request names.

// latencyTwoReductions is latencyFixture with a 25% reduction before the
// 50% one for every request type, validated.
func latencyTwoReductions() *Latency {
	l := latencyFixture()
	l.Settings.Reductions = []string{"25%", "50%"}
	var pts []LatencyPoint
	for _, p := range l.Points {
		q := p
		q.Reduction, q.ReductionUS = "25%", 300
		q.PredictedP50MS, q.PredictedP99MS = p.PredictedP50MS*1.2, p.PredictedP99MS*1.2
		q.ErrP50Pct, q.ErrP99Pct, q.Within = 7.5, 12, false
		pts = append(pts, q, p)
	}
	l.Points = pts
	return l
}

// unvalidated strips the truth from l.
func unvalidated(l *Latency) *Latency {
	l.Settings.Validate = false
	for i := range l.Points {
		p := &l.Points[i]
		p.True, p.TrueP50MS, p.TrueP90MS, p.TrueP99MS = nil, 0, 0, 0
		p.ErrP50Pct, p.ErrP90Pct, p.ErrP99Pct, p.Within = 0, 0, 0, false
		p.TrueMannWhitneyP, p.TrueBusyPct = nil, 0
	}
	return l
}

func TestLatencyJSONFields(t *testing.T) {
	for _, tc := range []struct {
		name       string
		edit       func(*Latency)
		want, not  []string
		checkAfter func(*testing.T, *Latency)
	}{
		{name: "validated",
			edit: func(l *Latency) {
				l.Points[0].TrueMannWhitneyP = ptr(0)
				l.Settings.Duration = 20
				l.Settings.Rate = 300
			},
			want: []string{`"kind": "latency"`, fmt.Sprintf(`"version": %d`, Version), `"target": "cart"`, `"true": {`, `"true_mann_whitney_p": 0`,
				`"within": true`, `"err_p99_pct": 2.9`, `"duration": 20`, `"rate": 300`, `"quantiles_ms": [`,
				`"baseline_busy_pct": 48`, `"predicted_busy_pct": 40.2`, `"true_busy_pct": 38.6`},
			not: []string{`"unmatched"`, `"diagnostics"`},
			checkAfter: func(t *testing.T, l *Latency) {
				if p := l.Points[0].TrueMannWhitneyP; p == nil || *p != 0 {
					t.Errorf("true_mann_whitney_p 0 read back as %v", p)
				}
				if n := len(l.Baseline[0].QuantilesMS); n != len(LatencyQuantiles) {
					t.Errorf("%d quantiles read back, want %d", n, len(LatencyQuantiles))
				}
			}},
		{name: "unvalidated", edit: func(l *Latency) { unvalidated(l) },
			want: []string{`"validate": false`, `"mann_whitney_p": 1e-20`, `"faster": true`},
			not:  []string{`"true"`, `"true_p50_ms"`, `"err_p50_pct"`, `"within"`, `"true_mann_whitney_p"`, `"duration"`, `"rate"`, `"warnings"`, `"true_busy_pct"`}},
		{name: "compare", edit: func(l *Latency) {
			u := l.Baseline[0]
			l.Points[0].Diagnostics = &LatencyDiagnostics{Unmatched: &u, UnmatchedErrP50Pct: -12.5}
			l.Warnings = []string{"3 requests failed"}
		},
			want: []string{`"diagnostics": {`, `"unmatched": {`, `"unmatched_err_p50_pct": -12.5`, `"warnings": [`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := latencyFixture()
			tc.edit(l)
			path := filepath.Join(t.TempDir(), "results.json")
			if err := WriteLatencyJSON(path, l); err != nil {
				t.Fatal(err)
			}
			if l.Kind != "" || l.Version != 0 {
				t.Errorf("WriteLatencyJSON changed its argument: kind %q, version %d", l.Kind, l.Version)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("results.json lacks %s", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(string(b), n) {
					t.Errorf("results.json has %s", n)
				}
			}
			back, err := ReadLatencyJSON(path)
			if err != nil {
				t.Fatal(err)
			}
			l.Kind, l.Version = KindLatency, Version
			if !reflect.DeepEqual(back, l) {
				t.Errorf("round trip changed the results:\n got %+v\nwant %+v", back, l)
			}
			if tc.checkAfter != nil {
				tc.checkAfter(t, back)
			}
		})
	}
}

// Latency results of version 3 had a point's comparisons beside it; they
// read into its diagnostics.
func TestReadLatencyJSONVersion3(t *testing.T) {
	v3 := `{"version": 3, "kind": "latency", "points": [
		{"request": "home", "reduction": "50%", "predicted_p50_ms": 1.7, "true_p50_ms": 1.6,
		 "holds": {"request": "home", "n": 900, "p50_ms": 1.8}, "holds_busy_pct": 61, "holds_err_p50_pct": 12.5,
		 "holds_batch": 4, "stretch": 1.3, "unmatched_err_p99_pct": -3},
		{"request": "pay", "reduction": "50%", "predicted_p50_ms": 3.5}]}`
	l, err := ReadLatencyJSON(writeTemp(t, v3))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Points) != 2 {
		t.Fatalf("%d points, want 2", len(l.Points))
	}
	p := l.Points[0]
	want := LatencyDiagnostics{Holds: &LatencyDist{Request: "home", N: 900, P50MS: 1.8}, HoldsBusyPct: 61, HoldsErrP50Pct: 12.5,
		HoldsBatch: 4, Stretch: 1.3, UnmatchedErrP99Pct: -3}
	if p.PredictedP50MS != 1.7 || p.TrueP50MS != 1.6 || p.Diagnostics == nil || !reflect.DeepEqual(*p.Diagnostics, want) {
		t.Errorf("version 3 point read as %+v, diagnostics %+v", p, p.Diagnostics)
	}
	if d := l.Points[1].Diagnostics; d != nil {
		t.Errorf("a point without comparisons read with diagnostics %+v", *d)
	}
}

func TestReadLatencyJSONErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"rank", `{"kind":"rank","version":1}`, `not the results of slowpoke latency (kind "rank")`},
		{"pools", `{"kind":"pools","version":1}`, `(kind "pools")`},
		{"predict", `{"version":1,"target":"cart"}`, `(kind "")`},
		{"newer", `{"kind":"latency","version":99}`, "newer than this slowpoke understands"},
		{"broken", `{"kind":"latency",`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadLatencyJSON(writeTemp(t, tc.body))
			if err == nil {
				t.Fatal("read without error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
	if _, err := ReadLatencyJSON(filepath.Join(t.TempDir(), "absent.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

func TestLatencyTableWithoutValidation(t *testing.T) {
	var b strings.Builder
	if err := WriteLatencyTable(&b, unvalidated(latencyTwoReductions())); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"shop: latency if cart were faster (open loop at 500 req/s, 50% of the saturating 1000 req/s; 3.0s per run)",
		"25% (300us)", "50% (600us)", "2.40 [2.35, 2.45]", "yes (p<1e-16)",
		"cores busy: baseline 48%; 25%: 40% predicting at 430 req/s; 50%: 40% predicting at 430 req/s\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, absent := range []string{"true p50", "err p50", "predictions within", "in the truth"} {
		if strings.Contains(out, absent) {
			t.Errorf("unvalidated table has %q:\n%s", absent, out)
		}
	}
	// two request types: header, 2 × (baseline + 2 reductions), the
	// cores' busy share
	if n := strings.Count(out, "\n"); n != 2+1+6+2 {
		t.Errorf("%d lines, want 11:\n%s", n, out)
	}
}

func TestLatencyTableCountsWithin(t *testing.T) {
	var b strings.Builder
	l := latencyTwoReductions()
	l.Warnings = []string{"the window was capped at 2 minutes"}
	if err := WriteLatencyTable(&b, l); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 of 4 predictions within ±5% at p50 and ±10% at p99", "+7.5%", "+12.0%",
		"warning: the window was capped at 2 minutes"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestLatencyPlotName(t *testing.T) {
	for _, tc := range []struct{ request, want string }{
		{"home", "cdf-home.svg"},
		{"checkout/pay", "cdf-checkout-pay.svg"},
		{"Search Hotels", "cdf-search-hotels.svg"},
		{"GET /api/v1/items?id=3", "cdf-get-api-v1-items-id-3.svg"},
		{"../../etc/passwd", "cdf-etc-passwd.svg"},
		{"a__b--c", "cdf-a-b--c.svg"},
		{"réserve", "cdf-r-serve.svg"},
		{"", "cdf-request.svg"},
		{"///", "cdf-request.svg"},
	} {
		if got := LatencyPlotName(tc.request); got != tc.want {
			t.Errorf("LatencyPlotName(%q) = %q, want %q", tc.request, got, tc.want)
		}
	}
}

// svgText returns the text of every <text> element of an SVG document, and
// fails the test if it is not well-formed XML.
func svgText(t *testing.T, raw []byte) []string {
	t.Helper()
	var doc struct{ XMLName xml.Name }
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if doc.XMLName.Local != "svg" {
		t.Fatalf("root element <%s>, want <svg>", doc.XMLName.Local)
	}
	var texts []string
	d := xml.NewDecoder(strings.NewReader(string(raw)))
	in := false
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch e := tok.(type) {
		case xml.StartElement:
			in = e.Name.Local == "text"
		case xml.EndElement:
			in = false
		case xml.CharData:
			if in {
				texts = append(texts, strings.TrimSpace(string(e)))
			}
		}
	}
	return texts
}

func TestLatencyPlotCurves(t *testing.T) {
	for _, tc := range []struct {
		name      string
		l         *Latency
		legend    []string
		notLegend []string
		dashed    int // dashed curves per plot
		colours   []string
	}{
		{name: "validated, two reductions", l: latencyTwoReductions(),
			legend:  []string{"baseline", "predicted −25% (300us)", "predicted −50% (600us)", "true −25% (300us)", "true −50% (600us)"},
			dashed:  2,
			colours: []string{"#000000", "#0072B2", "#D55E00"}},
		{name: "unvalidated", l: unvalidated(latencyTwoReductions()),
			legend:    []string{"baseline", "predicted −25% (300us)", "predicted −50% (600us)"},
			notLegend: []string{"true −25% (300us)", "true −50% (600us)"},
			colours:   []string{"#0072B2", "#D55E00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			paths, err := WriteLatencyPlots(dir, tc.l)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{filepath.Join(dir, "cdf-home.svg"), filepath.Join(dir, "cdf-checkout-pay.svg")}
			if !reflect.DeepEqual(paths, want) {
				t.Fatalf("paths %v, want %v", paths, want)
			}
			for _, p := range paths {
				raw, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				texts := strings.Join(svgText(t, raw), "\n")
				for _, s := range tc.legend {
					if !strings.Contains(texts, s) {
						t.Errorf("%s: legend lacks %q", filepath.Base(p), s)
					}
				}
				for _, s := range tc.notLegend {
					if strings.Contains(texts, s) {
						t.Errorf("%s: legend has %q", filepath.Base(p), s)
					}
				}
				for _, s := range []string{"latency (ms)", "requests (%)", "latency if cart were faster"} {
					if !strings.Contains(texts, s) {
						t.Errorf("%s: lacks the label %q", filepath.Base(p), s)
					}
				}
				// Each dashed curve is drawn once, and once in the legend.
				if n := strings.Count(string(raw), "stroke-dasharray"); n != 2*tc.dashed {
					t.Errorf("%s: %d dashed strokes, want %d", filepath.Base(p), n, 2*tc.dashed)
				}
				for _, c := range tc.colours {
					if !strings.Contains(string(raw), "stroke:"+c) {
						t.Errorf("%s: no curve in %s", filepath.Base(p), c)
					}
				}
			}
		})
	}
}

func TestLatencyPlotErrors(t *testing.T) {
	l := latencyFixture()
	l.Points[1].Predicted.QuantilesMS = l.Points[1].Predicted.QuantilesMS[:10]
	dir := t.TempDir()
	if _, err := WriteLatencyPlots(dir, l); err == nil || !strings.Contains(err.Error(), "checkout/pay") {
		t.Errorf("a prediction without its quantiles: %v", err)
	}
	if err := WriteLatencyHTML(filepath.Join(dir, "report.html"), l); err == nil {
		t.Error("a page written with a prediction without its quantiles")
	}
	if _, err := WriteLatencyPlots(filepath.Join(dir, "absent"), latencyFixture()); err == nil {
		t.Error("plots written into a directory that does not exist")
	}
	if err := WriteLatencyHTML(filepath.Join(dir, "nil.html"), nil); err == nil {
		t.Error("WriteLatencyHTML(nil) succeeded")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "cdf-home.svg" {
			t.Errorf("left %s behind", e.Name())
		}
	}
}

func TestLatencyReproduceCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*LatencySettings)
		want string
	}{
		{"validated", func(*LatencySettings) {},
			"slowpoke latency -f app.yaml --target cart --reduce 50% --validate --reps 2"},
		{"rate and duration", func(s *LatencySettings) {
			s.Validate, s.Repetitions, s.Rate, s.Duration, s.Reductions = false, 1, 300, 20, []string{"25%", "50%", "400us"}
		}, "slowpoke latency -f app.yaml --target cart --reduce 25%,50%,400us --rate 300 --duration 20s"},
		{"fractions", func(s *LatencySettings) { s.Rate, s.Duration, s.Repetitions = 123.45, 2.5, 0 },
			"slowpoke latency -f app.yaml --target cart --reduce 50% --validate --rate 123.45 --duration 2.5s"},
		{"requests", func(s *LatencySettings) { s.MinRequests = 4000 },
			"slowpoke latency -f app.yaml --target cart --reduce 50% --validate --reps 2 --requests 4000"},
		{"quoted spec", func(s *LatencySettings) { s.SpecPath = "my apps/shop's.yaml" },
			`slowpoke latency -f 'my apps/shop'\''s.yaml' --target cart --reduce 50% --validate --reps 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := latencyFixture()
			tc.edit(&l.Settings)
			page, err := newLatencyPage(l)
			if err != nil {
				t.Fatal(err)
			}
			if page.Command != tc.want {
				t.Errorf("command\n %s\nwant\n %s", page.Command, tc.want)
			}
		})
	}
}

func TestLatencyPage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		l         *Latency
		want, not []string
	}{
		{name: "validated", l: latencyTwoReductions(),
			want: []string{"Latency of shop if cart were faster", "With cart 50% cheaper per call:",
				"home: p50 2.40 → 1.73 ms, p99 6.00 → 4.32 ms", "checkout/pay: p50 5.00 → 3.60 ms",
				"2 of 4 predictions within ±5% at p50 and ±10% at p99 of the truth.",
				"Latency per request type", "500 req/s (50% of the saturating 1000 req/s), 3s a run",
				"predicted −25% (300 µs per call)", "true −50%", "2.40 ms [2.35, 2.45]", "1500", "yes (p<1e-16)",
				"+7.5%", "+12.0%", "Latency distributions", "predicted −25% (300us)", "true −50% (600us)",
				"1200 µs", "25%, 50%", "slowpoke latency -f app.yaml --target cart --reduce 25%,50% --validate --reps 2"},
			not: []string{"Call graph", "No point carries a flag"}},
		{name: "unvalidated", l: unvalidated(latencyTwoReductions()),
			want: []string{"With cart 50% cheaper per call:", "predicted −50% (600 µs per call)", "--reduce 25%,50% --reps 2"},
			not:  []string{"true −", "predictions within", "--validate", "Call graph"}},
		{name: "no points", l: func() *Latency { l := latencyFixture(); l.Points = nil; return l }(),
			want: []string{"No prediction was made.", "home", "checkout/pay"},
			not:  []string{"predicted −", "predictions within"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := *tc.l
			path := filepath.Join(t.TempDir(), "report.html")
			if err := WriteLatencyHTML(path, tc.l); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(before, *tc.l) {
				t.Error("WriteLatencyHTML changed its argument")
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d := checkReportPage(t, string(raw), []string{"home", "checkout/pay"}, nil, tc.want, true)
			for _, s := range tc.not {
				if strings.Contains(d.text, s) {
					t.Errorf("page text has %q", s)
				}
			}
			if n := d.tags["svg"]; n != len(tc.l.Baseline) {
				t.Errorf("%d inline plots, want one per request type (%d)", n, len(tc.l.Baseline))
			}
			if d.tags["table"] < len(tc.l.Baseline) {
				t.Errorf("%d tables, want at least one per request type (%d)", d.tags["table"], len(tc.l.Baseline))
			}
			// Each inline plot is well-formed XML on its own.
			s := string(raw)
			for i := 0; ; i++ {
				start := strings.Index(s, "<svg")
				if start < 0 {
					break
				}
				end := strings.Index(s[start:], "</svg>")
				if end < 0 {
					t.Fatalf("plot %d is not closed", i)
				}
				svg := s[start : start+end+len("</svg>")]
				if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
					t.Errorf("inline plot %d is not XML: %v", i, err)
				}
				s = s[start+end:]
			}
		})
	}
}

// TestLatencyPageEscapes checks that request names, target and app, which
// come from the spec, are escaped in the page and in the inline plots.
func TestLatencyPageEscapes(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	l := latencyFixture()
	l.App, l.Target = evil, evil
	l.Baseline[0].Request, l.Points[0].Request = evil, evil
	l.Warnings = []string{evil}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := WriteLatencyHTML(path, l); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := checkReportPage(t, string(raw), []string{evil, "checkout/pay"}, nil, nil, true)
	if strings.Contains(d.raw, evil) {
		t.Error("a name from the spec came out unescaped")
	}
	paths, err := WriteLatencyPlots(t.TempDir(), l)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(paths[0]) != "cdf-script-alert-1-script.svg" {
		t.Errorf("plot %s", paths[0])
	}
	b, _ := os.ReadFile(paths[0])
	if !strings.Contains(strings.Join(svgText(t, b), "\n"), evil) {
		t.Error("the plot's title lost the request name")
	}
}
