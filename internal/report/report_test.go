package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ptr(f float64) *float64 { return &f }

func sampleResults(kind string) *Results {
	r := &Results{
		Version:   Version,
		Kind:      kind,
		App:       "demo",
		Target:    "cart",
		CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		Settings: Settings{
			Spec:        "examples/demo/app.yaml",
			Reductions:  []string{"10%", "20%", "40%"},
			Batch:       8,
			Connections: 64,
			WarmupS:     1,
			DurationS:   5,
			Repetitions: 3,
			MaxPauseMS:  50,
			Placement:   map[string][]int{"frontend": {2}, "cart": {3}},
			LoadCPUs:    []int{0, 1},
			Host:        "box",
			NumCPU:      8,
		},
		Baseline:   Baseline{RPS: 1000, Runs: []float64{990, 1000, 1010}, SpreadPct: 2, P50MS: 1.5, P99MS: 7.25},
		C1:         2,
		Q1:         1,
		U1US:       250,
		Neighbours: map[string][]string{"cart": {"frontend"}, "frontend": {"cart"}},
		Points: []Point{
			{ReductionPct: 20, ReductionUS: 50, SlowdownRPS: 700, SlowdownRuns: []float64{690, 700, 710},
				PredictedRPS: 1180, PredictedRuns: []float64{1170, 1180, 1195}, SpreadPct: 2.1, Flags: []string{},
				Diagnostics: &PointDiagnostics{Rounds: 1234, PauseRequestedMS: 10, PauseActualMS: 9.5,
					TargetBusyInPause: 0.9, TargetBusyOverall: 0.7}},
			{ReductionPct: 10, ReductionUS: 25, SlowdownRPS: 850, SlowdownRuns: []float64{850},
				PredictedRPS: 1090, PredictedRuns: []float64{1085, 1090, 1100}, SpreadPct: 1.4, Flags: []string{}},
			{ReductionPct: 40, ReductionUS: 100, SlowdownRPS: 300, PredictedRPS: 0, PredictedRuns: []float64{0, 0, 0},
				Errors: 3, Flags: []string{FlagInfeasible, FlagErrors}},
		},
		Warnings: []string{"host has only 8 cores"},
	}
	if kind == KindValidate {
		r.Points[0].TrueRPS, r.Points[0].TrueRuns, r.Points[0].ErrorPct = ptr(1200), []float64{1190, 1200, 1220}, ptr(-1.67)
		r.Points[1].TrueRPS, r.Points[1].TrueRuns, r.Points[1].ErrorPct = ptr(1080), []float64{1080}, ptr(0.93)
		r.Points[2].TrueRPS, r.Points[2].TrueRuns = ptr(1400), []float64{1390, 1410}
		r.RMSEPct, r.MaxAbsErrorPct = ptr(1.35), ptr(1.67)
	}
	return r
}

func TestJSONRoundTrip(t *testing.T) {
	for _, kind := range []string{KindPredict, KindValidate} {
		t.Run(kind, func(t *testing.T) {
			r := sampleResults(kind)
			path := filepath.Join(t.TempDir(), "results.json")
			if err := WriteJSON(path, r); err != nil {
				t.Fatal(err)
			}
			got, err := ReadJSON(path)
			if err != nil {
				t.Fatal(err)
			}
			// Nil lists come back empty: they are written as [].
			if want := r.clone(); !reflect.DeepEqual(got, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
			}
			data, _ := os.ReadFile(path)
			if !bytes.Contains(data, fmt.Appendf(nil, "\n  \"version\": %d,", Version)) {
				t.Errorf("not indented or no version:\n%s", data[:min(len(data), 200)])
			}
			if has := bytes.Contains(data, []byte(`"true_rps"`)); has != (kind == KindValidate) {
				t.Errorf("true_rps present = %v for %s", has, kind)
			}
		})
	}
}

func TestWriteJSONNormalizes(t *testing.T) {
	r := &Results{Kind: KindPredict, Points: []Point{{ReductionPct: 10, PredictedRPS: math.NaN(),
		Diagnostics: &PointDiagnostics{MechanismPct: math.Inf(-1)}}}}
	r.Baseline.RPS = math.Inf(1)
	path := filepath.Join(t.TempDir(), "results.json")
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{`"points": [`, `"flags": []`, `"runs": []`, `"neighbours": {}`, `"reductions": []`,
		`non-finite baseline.rps (+Inf) written as 0`, `non-finite points[0].predicted_rps (NaN) written as 0`,
		`non-finite points[0].diagnostics.mechanism_pct (-Inf) written as 0`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("output lacks %s:\n%s", want, data)
		}
	}
	if got, err := ReadJSON(path); err != nil || got.Version != Version {
		t.Errorf("ReadJSON after writing a zero version: %v, %v", got, err)
	}
	if bytes.Contains(data, []byte("null")) {
		t.Errorf("output has null:\n%s", data)
	}
	if !math.IsNaN(r.Points[0].PredictedRPS) || r.Warnings != nil || r.Points[0].Flags != nil || !math.IsInf(r.Points[0].Diagnostics.MechanismPct, -1) {
		t.Error("WriteJSON modified its argument")
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestReadJSONErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, content, want string }{
		{"no version", `{"kind":"predict"}`, "not a slowpoke results file"},
		{"future version", fmt.Sprintf(`{"version":%d}`, Version+1), fmt.Sprintf("results version %d is newer", Version+1)},
		{"garbage", `{"version":`, "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".json")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadJSON(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadJSON = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

// A point's diagnostics are written in its "diagnostics" object, none of
// them beside it, and results of version 3, which had them beside it,
// read as the same point.
func TestPointDiagnosticsVersions(t *testing.T) {
	r := sampleResults(KindValidate)
	r.Points[0].Diagnostics.StopLateMaxUS = 420
	r.Points[0].Diagnostics.PausePerRequestUS = map[string]float64{"frontend": 51}
	r.Points[0].Diagnostics.ErrorNominalPct = ptr(4.5)
	path := filepath.Join(t.TempDir(), "results.json")
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Points []map[string]json.RawMessage `json:"points"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	moved := reflect.TypeFor[PointDiagnostics]()
	for i, pt := range file.Points {
		if _, has := pt["diagnostics"]; has != (i == 0) {
			t.Errorf("point %d: diagnostics present = %v, want %v", i, has, i == 0)
		}
		for f := range moved.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if _, ok := pt[name]; ok {
				t.Errorf("point %d has %s beside its diagnostics", i, name)
			}
		}
	}

	// The same point as version 3 wrote it: its diagnostics beside it.
	var d map[string]json.RawMessage
	if err := json.Unmarshal(file.Points[0]["diagnostics"], &d); err != nil {
		t.Fatal(err)
	}
	old := maps.Clone(file.Points[0])
	delete(old, "diagnostics")
	maps.Copy(old, d)
	oldPoint, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	v3 := fmt.Sprintf(`{"version": 3, "kind": "validate", "points": [%s, {"reduction_pct": 10, "flags": []}]}`, oldPoint)
	got, err := ReadJSON(writeTemp(t, v3))
	if err != nil {
		t.Fatal(err)
	}
	want := r.clone().Points[0]
	if len(got.Points) != 2 || !reflect.DeepEqual(got.Points[0], want) {
		t.Errorf("version 3 point read as\n%+v\nwant\n%+v", got.Points[0], want)
	} else if got.Points[0].Diagnostics.Rounds != 1234 || got.Points[0].Diagnostics.StopLateMaxUS != 420 {
		t.Errorf("version 3 diagnostics read as %+v", *got.Points[0].Diagnostics)
	}
	if got.Points[1].Diagnostics != nil {
		t.Errorf("a version 3 point with no diagnostics read with %+v", *got.Points[1].Diagnostics)
	}
}

func TestWriteTable(t *testing.T) {
	tests := []struct {
		kind    string
		want    []string
		notWant []string
	}{
		{KindPredict,
			[]string{"demo", "cart", "1000.0 req/s ± 2.0% over 3 runs", "p50 1.50 ms, p99 7.25 ms", "2 calls to cart per request",
				"1 cores", "250.0 µs CPU per call", "warning: host has only 8 cores",
				"predicted req/s", "1090.0", "1.09x", "1180.0", "1.18x", "2.1%", "infeasible,errors"},
			[]string{"true req/s", "RMSE"}},
		{KindValidate,
			[]string{"true req/s", "error", "1200.0", "-1.7%", "+0.9%", "1400.0", "RMSE 1.4%, max |error| 1.7%"},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTable(&buf, sampleResults(tt.kind)); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("table lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("table has %q:\n%s", w, out)
				}
			}
			// Rows come out ordered by reduction.
			if i10, i20, i40 := strings.Index(out, " 10%"), strings.Index(out, " 20%"), strings.Index(out, " 40%"); !(i10 < i20 && i20 < i40) {
				t.Errorf("rows not ordered by reduction:\n%s", out)
			}
			if testing.Verbose() {
				t.Log("\n" + out)
			}
		})
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestWriteTableError(t *testing.T) {
	if err := WriteTable(failWriter{}, sampleResults(KindPredict)); err == nil {
		t.Error("WriteTable to a failing writer returned nil")
	}
}

func TestPlot(t *testing.T) {
	single := sampleResults(KindPredict)
	single.Points = single.Points[:1]
	allInfeasible := sampleResults(KindPredict)
	allInfeasible.Points = allInfeasible.Points[2:]
	flagged := sampleResults(KindPredict)
	flagged.Points[0].Flags = []string{FlagNoisy}
	empty := sampleResults(KindPredict)
	empty.Points, empty.Baseline = nil, Baseline{}

	tests := []struct {
		name string
		r    *Results
	}{
		{"predict", sampleResults(KindPredict)},
		{"validate", sampleResults(KindValidate)},
		{"flagged", flagged},
		{"single point", single},
		{"only infeasible", allInfeasible},
		{"nothing", empty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pngPath, svgPath := filepath.Join(dir, "plot.png"), filepath.Join(dir, "plot.svg")
			if err := Plot(tt.r, pngPath, svgPath); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(pngPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("PNG does not decode: %v", err)
			}
			if b := img.Bounds(); b.Dx() != 6*pngDPI || b.Dy() != 4*pngDPI {
				t.Errorf("PNG is %dx%d, want 6x4 in at %d dpi", b.Dx(), b.Dy(), pngDPI)
			}
			svg, err := os.ReadFile(svgPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(svg, []byte("<?xml")) && !bytes.Contains(svg, []byte("<svg")) {
				t.Errorf("not an SVG: %.100s", svg)
			}
		})
	}
}

func TestPlotSkipsEmptyPaths(t *testing.T) {
	dir := t.TempDir()
	svgPath := filepath.Join(dir, "only.svg")
	if err := Plot(sampleResults(KindPredict), "", svgPath); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != "only.svg" {
		t.Errorf("files written: %v", entries)
	}
	if err := Plot(sampleResults(KindPredict), "", ""); err != nil {
		t.Error(err)
	}
}

func TestPlotAxisIgnoresInfeasible(t *testing.T) {
	p, err := newPlot(sampleResults(KindPredict))
	if err != nil {
		t.Fatal(err)
	}
	// Data spans 1000 (baseline) to 1195 (top of an error bar); an
	// infeasible point's 0 must not pull the axis down to it.
	if p.Y.Min < 900 || p.Y.Min > 1000 || p.Y.Max < 1195 {
		t.Errorf("y axis %g..%g, want about 980..1265", p.Y.Min, p.Y.Max)
	}
	if p.X.Min > 0 || p.X.Max < 40 {
		t.Errorf("x axis %g..%g does not cover 0..40", p.X.Min, p.X.Max)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{7}, 7},
		{"odd", []float64{3, 1, 2}, 2},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"duplicates", []float64{5, 5, 1}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if got := Median(in); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
			}
			if !reflect.DeepEqual(in, tt.in) && len(in) > 0 {
				t.Errorf("Median reordered its argument: %v", in)
			}
		})
	}
}

func TestSpreadPct(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{100}, 0},
		{"two", []float64{90, 110}, 20},
		{"odd", []float64{95, 100, 105}, 10},
		{"even", []float64{90, 95, 105, 110}, 20},
		{"zero median", []float64{0, 0, 5}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SpreadPct(tt.in); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("SpreadPct(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
