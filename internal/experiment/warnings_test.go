package experiment

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spans"
)

func TestBaselineDriftWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs []float64
		want []string // substrings; none: no warning
	}{
		{"one run", []float64{700}, nil},
		{"steady", []float64{1000, 1040, 980}, nil},
		{"the demo on a calm spell", []float64{779, 721, 693, 731}, nil},
		{"moved", []float64{583, 662, 719, 700, 634, 787, 864, 1106}, []string{"varied by 22%", "583 to 1106 req/s over 8 runs", "more repetitions"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := baselineDriftWarning(tc.runs)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("warning for %v: %s", tc.runs, got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning %q lacks %q", got, w)
				}
			}
		})
	}
}

func TestOverCoresWarning(t *testing.T) {
	for _, tc := range []struct {
		name     string
		q, used  float64
		wantWarn bool
	}{
		{"within its cpus", 1, 0.95, false},
		{"a little over, noise", 1, 1.05, false},
		{"unlimited pod, cpus 1", 1, 1.5, true},
		{"two cpus, used two", 2, 2.1, false},
		{"two cpus, used three", 2, 3, true},
		{"no cpus stated", math.Inf(1), 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := overCoresWarning("cart", tc.q, tc.used)
			if (got != "") != tc.wantWarn {
				t.Fatalf("overCoresWarning(%g, %g) = %q, want a warning: %v", tc.q, tc.used, got, tc.wantWarn)
			}
			if tc.wantWarn && !strings.Contains(got, `"cart"`) {
				t.Errorf("warning does not name the target: %s", got)
			}
		})
	}
}

func TestBaselineP50DriftWarning(t *testing.T) {
	steady := report.LatencyDist{Request: "home", RunsP50MS: []float64{2.0, 2.1, 2.05}}
	moved := report.LatencyDist{Request: "checkout", RunsP50MS: []float64{2.27, 3.08, 3.04}}
	one := report.LatencyDist{Request: "cart", RunsP50MS: []float64{9}}
	if w := baselineP50DriftWarning([]report.LatencyDist{steady, one}); w != "" {
		t.Errorf("warning for steady runs: %s", w)
	}
	w := baselineP50DriftWarning([]report.LatencyDist{steady, moved})
	for _, want := range []string{`"checkout"`, "varied by 16%", "2.27 to 3.08 ms over 3"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
}

func TestBusyWarning(t *testing.T) {
	for _, tc := range []struct {
		busy     float64
		wantWarn bool
	}{
		{0, false}, // not measured
		{50, false},
		{84.9, false},
		{85, true},
		{97, true},
	} {
		got := busyWarning(tc.busy, 1254)
		if (got != "") != tc.wantWarn {
			t.Errorf("busyWarning(%g) = %q, want a warning: %v", tc.busy, got, tc.wantWarn)
		}
		if tc.wantWarn && (!strings.Contains(got, fmt.Sprintf("%.0f%% busy", tc.busy)) || !strings.Contains(got, "1254 req/s") || !strings.Contains(got, "a lower request rate")) {
			t.Errorf("warning does not give the share, the rate and the remedy: %s", got)
		}
	}
}

func TestRunsBusy(t *testing.T) {
	rs := newRuns(1)
	if got := rs.busyPct(); got != 0 {
		t.Errorf("no runs: %v%% busy, want 0 (unknown)", got)
	}
	rs.add(openRun{lat: [][]float64{{1, 2, 3}}, busy: 0.6})
	rs.add(openRun{lat: [][]float64{{4}}}) // its share could not be read
	rs.add(openRun{lat: [][]float64{{5, 6}}, busy: 0.8})
	if got := rs.busyPct(); math.Abs(got-70) > 1e-9 {
		t.Errorf("%v%% busy, want 70 (the runs whose share is known)", got)
	}
	if got := rs.all(0); len(got) != 6 {
		t.Errorf("pooled %v, want the 6 latencies", got)
	}
	if got := rs.dist("home", 0).RunsP50MS; len(got) != 3 || got[0] != 2 || got[1] != 4 {
		t.Errorf("each run's p50 %v, want [2 4 5.5]", got)
	}
}

// An uninstrumented target whose calls were to be counted from its
// OpenTelemetry spans but that sent none gets a warning naming it, with
// what slowpoke does instead; one whose spans arrive is counted from them,
// without it.
func TestMissingSpansWarning(t *testing.T) {
	const want = `"t" sent no OpenTelemetry SERVER span during pre-profiling`
	for _, tc := range []struct {
		name   string
		export string // the service that exports a SERVER span per request
	}{
		{"no spans from any service", ""},
		{"spans from another service only", "front"},
		{"spans", "t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rcv, err := spans.Listen()
			if err != nil {
				t.Fatal(err)
			}
			defer rcv.Close()
			_, res, err := runFake(t, runCase{reduce: "50%",
				// An uninstrumented target is refused below 1% of a
				// core: 500 µs per call keeps it above that even when
				// a loaded machine slows the fake's requests to 20/s.
				services: func(s []fakeService) { s[1].uninstrument, s[1].cpuPerCall = true, 500*time.Microsecond },
				app: func(a *fakeApp) {
					if tc.export != "" {
						exportSpans(t, rcv, a, tc.export)
					}
				},
				opts: func(o *Options) { o.Spans = rcv }})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, want) })
			if tc.export == "" {
				// No service exports: nothing is amiss, no warning.
				if i >= 0 || res.CallsFrom != "" || res.C1 != 1 {
					t.Errorf("calls from %q, c1 %v, warnings %q: want not counted, 1, no warning of missing spans", res.CallsFrom, res.C1, res.Warnings)
				}
				return
			}
			if tc.export == "t" {
				if i >= 0 || res.CallsFrom != "spans" || res.C1 < 0.5 || res.C1 > 1.5 {
					t.Errorf("calls from %q, c1 %.3f, warnings %q: want counted from spans, about 1, no warning of missing spans", res.CallsFrom, res.C1, res.Warnings)
				}
				return
			}
			if i < 0 {
				t.Fatalf("warnings %q: none starts %q", res.Warnings, want)
			}
			for _, w := range []string{"c1 = 1", "rounds follow its CPU time", "no OpenTelemetry SDK or zero-code agent", "OTEL_EXPORTER_OTLP_ENDPOINT", "sampling"} {
				if !strings.Contains(res.Warnings[i], w) {
					t.Errorf("warning lacks %q: %s", w, res.Warnings[i])
				}
			}
			if res.CallsFrom != "" || res.C1 != 1 {
				t.Errorf("calls from %q, c1 %v: want not counted, 1", res.CallsFrom, res.C1)
			}
		})
	}
}

// exportSpans exports to rcv, as service svc of a would, one SERVER span
// for each request that a's entry served, every 5 ms until the test ends.
func exportSpans(t *testing.T, rcv *spans.Receiver, a *fakeApp, svc string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		var sent uint64
		var id uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			n := a.requests.Load()
			if n == sent {
				continue
			}
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", svc)
			ss := rs.ScopeSpans().AppendEmpty().Spans()
			now := pcommon.NewTimestampFromTime(time.Now())
			for ; sent < n; sent++ {
				id++
				sp := ss.AppendEmpty()
				sp.SetTraceID(pcommon.TraceID{byte(id >> 8), byte(id), 1})
				sp.SetSpanID(pcommon.SpanID{byte(id >> 8), byte(id), 1})
				sp.SetKind(ptrace.SpanKindServer)
				sp.SetStartTimestamp(now)
				sp.SetEndTimestamp(now)
			}
			body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
			if err != nil {
				t.Error(err)
				return
			}
			resp, err := http.Post(rcv.Endpoint()+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
			if err != nil {
				continue // the receiver is closing
			}
			resp.Body.Close()
		}
	}()
}
