package spans

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The warning for a service that sent no SERVER span names it, says what
// is done instead, and gives the likely causes that what the receiver got
// over the run leaves.
func TestMissingWarning(t *testing.T) {
	const instead = "it is counted one call per request instead"
	for _, tc := range []struct {
		name   string
		send   func(t *testing.T, r *Receiver)
		want   []string
		unwant []string
	}{
		{"nothing received", nil,
			[]string{`"catalog" sent no OpenTelemetry SERVER span during pre-profiling`, instead, "no OpenTelemetry SDK or zero-code agent", "OTEL_EXPORTER_OTLP_ENDPOINT (http://127.0.0.1:", "sampling is off", "docs/opentelemetry.md"},
			[]string{"other names", "refused", "did reach"}},
		{"spans under another name", func(t *testing.T, r *Receiver) {
			post(t, r, traces(
				testSpan{svc: "unknown_service:node", kind: ptrace.SpanKindServer, trace: 1, id: 1, start: time.Now()},
				testSpan{svc: "frontend", kind: ptrace.SpanKindServer, trace: 1, id: 2, start: time.Now()},
			), "application/x-protobuf", false)
		}, []string{"no OpenTelemetry SDK", `other names ("unknown_service:node")`, "OTEL_SERVICE_NAME"}, []string{`"frontend"`}},
		{"its spans outside the window", func(t *testing.T, r *Receiver) {
			post(t, r, traces(
				testSpan{svc: "catalog", kind: ptrace.SpanKindServer, trace: 1, id: 1, start: time.Now()},
				testSpan{svc: "catalog", kind: ptrace.SpanKindServer, trace: 2, id: 1, start: time.Now()},
			), "application/x-protobuf", false)
		}, []string{"did reach slowpoke (2 SERVER spans)", "OTEL_BSP_SCHEDULE_DELAY over 200 ms", instead}, []string{"no OpenTelemetry SDK"}},
		{"an export refused", func(t *testing.T, r *Receiver) {
			if code := postRaw(t, r, []byte("\xff\xff not protobuf"), "application/x-protobuf", false); code != http.StatusBadRequest {
				t.Fatalf("garbage answered %d", code)
			}
		}, []string{"no OpenTelemetry SDK", "An export was refused (oversized or malformed)"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := listen(t)
			if tc.send != nil {
				tc.send(t, r)
			}
			got := r.MissingWarning("catalog", "during pre-profiling", []string{"frontend", "catalog"}, instead)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.unwant {
				if strings.Contains(got, w) {
					t.Errorf("warning says %q:\n%s", w, got)
				}
			}
		})
	}
}
