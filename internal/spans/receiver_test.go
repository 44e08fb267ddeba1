package spans

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// span is one span to export in a test.
type testSpan struct {
	svc        string
	kind       ptrace.SpanKind
	trace      byte
	id, parent byte
	start      time.Time
}

func traces(spans ...testSpan) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, s := range spans {
		rs := td.ResourceSpans().AppendEmpty()
		if s.svc != "" {
			rs.Resource().Attributes().PutStr("service.name", s.svc)
		}
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{s.trace, 1})
		sp.SetSpanID(pcommon.SpanID{s.id, 1})
		if s.parent != 0 {
			sp.SetParentSpanID(pcommon.SpanID{s.parent, 1})
		}
		sp.SetKind(s.kind)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(s.start.Add(time.Millisecond)))
	}
	return td
}

func listen(t *testing.T, opts ...Option) *Receiver {
	t.Helper()
	r, err := Listen(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// post sends td to r as OTLP/HTTP in the given encoding.
func post(t *testing.T, r *Receiver, td ptrace.Traces, contentType string, zip bool) int {
	t.Helper()
	req := ptraceotlp.NewExportRequestFromTraces(td)
	var body []byte
	var err error
	if strings.HasPrefix(contentType, "application/json") {
		body, err = req.MarshalJSON()
	} else {
		body, err = req.MarshalProto()
	}
	if err != nil {
		t.Fatal(err)
	}
	return postRaw(t, r, body, contentType, zip)
}

func postRaw(t *testing.T, r *Receiver, body []byte, contentType string, zip bool) int {
	t.Helper()
	if zip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	hr, err := http.NewRequest(http.MethodPost, r.Endpoint()+"/v1/traces", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", contentType)
	if zip {
		hr.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Env sets what every SDK and agent reads: where to export, under which
// name, every span sampled, exported soon, a queue that holds a burst of
// spans, and nothing but traces.
func TestEnv(t *testing.T) {
	r := listen(t)
	want := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":  r.Endpoint(),
		"OTEL_SERVICE_NAME":            "cart",
		"OTEL_TRACES_SAMPLER":          "always_on",
		"OTEL_BSP_SCHEDULE_DELAY":      "200",
		"OTEL_BSP_MAX_QUEUE_SIZE":      "65536",
		"OTEL_METRICS_EXPORTER":        "none",
		"OTEL_LOGS_EXPORTER":           "none",
		"OTEL_NODE_RESOURCE_DETECTORS": "env,host,os,process",
	}
	if got := r.Env("cart"); !maps.Equal(got, want) {
		t.Errorf("Env(cart) = %v, want %v", got, want)
	}
}

func TestCountsServerSpansByServiceAndTime(t *testing.T) {
	for _, tc := range []struct {
		name        string
		contentType string
		zip         bool
	}{
		{"protobuf", "application/x-protobuf", false},
		{"json", "application/json", false},
		{"gzip'd protobuf", "application/x-protobuf", true},
		{"gzip'd json", "application/json; charset=utf-8", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := listen(t)
			now := time.Now() // spans that started before the receiver are not counted
			td := traces(
				testSpan{svc: "cart", kind: ptrace.SpanKindServer, trace: 1, id: 1, start: now},
				testSpan{svc: "cart", kind: ptrace.SpanKindServer, trace: 2, id: 2, start: now.Add(time.Second)},
				testSpan{svc: "cart", kind: ptrace.SpanKindClient, trace: 2, id: 3, parent: 2, start: now.Add(time.Second)},
				testSpan{svc: "cart", kind: ptrace.SpanKindServer, trace: 3, id: 4, start: now.Add(3 * time.Second)},
				testSpan{svc: "db", kind: ptrace.SpanKindServer, trace: 2, id: 5, parent: 3, start: now.Add(time.Second)},
			)
			if code := post(t, r, td, tc.contentType, tc.zip); code != http.StatusOK {
				t.Fatalf("export answered %d", code)
			}
			for _, c := range []struct {
				svc      string
				from, to time.Duration
				want     int64
			}{
				{"cart", 0, 4 * time.Second, 3},
				{"cart", 0, 2 * time.Second, 2},
				{"cart", 500 * time.Millisecond, 2 * time.Second, 1},
				{"cart", 4 * time.Second, 5 * time.Second, 0},
				{"db", 0, 4 * time.Second, 1},
				{"nobody", 0, 4 * time.Second, 0},
			} {
				if got := r.Count(c.svc, now.Add(c.from), now.Add(c.to)); got != c.want {
					t.Errorf("Count(%s, +%v, +%v) = %d, want %d", c.svc, c.from, c.to, got, c.want)
				}
			}
			st := r.Stats()
			if st.Server["cart"] != 3 || st.Server["db"] != 1 || st.Spans != 5 || st.Rejected != 0 {
				t.Errorf("stats %+v: want 3 cart and 1 db SERVER spans of 5, none rejected", st)
			}
			if st.Edges[Edge{"cart", "db"}] != 1 || len(st.Edges) != 1 {
				t.Errorf("edges %v, want cart->db once", st.Edges)
			}
		})
	}
}

// A callee's SERVER span often arrives before its caller's CLIENT span
// (each service exports on its own schedule): the edge is still found.
func TestEdgeWhenCalleeArrivesFirst(t *testing.T) {
	r := listen(t)
	now := time.Now()
	post(t, r, traces(testSpan{svc: "db", kind: ptrace.SpanKindServer, trace: 7, id: 9, parent: 8, start: now}), "application/x-protobuf", false)
	if st := r.Stats(); len(st.Edges) != 0 {
		t.Fatalf("edge %v before the caller's span arrived", st.Edges)
	}
	post(t, r, traces(testSpan{svc: "cart", kind: ptrace.SpanKindClient, trace: 7, id: 8, parent: 1, start: now}), "application/x-protobuf", false)
	if st := r.Stats(); st.Edges[Edge{"cart", "db"}] != 1 {
		t.Errorf("edges %v, want cart->db once", st.Edges)
	}
}

func TestGRPCExport(t *testing.T) {
	r := listen(t)
	cc, err := grpc.NewClient(strings.TrimPrefix(r.Endpoint(), "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td := traces(testSpan{svc: "pricing", kind: ptrace.SpanKindServer, trace: 1, id: 1, start: now},
		testSpan{svc: "pricing", kind: ptrace.SpanKindInternal, trace: 1, id: 2, parent: 1, start: now})
	if _, err := ptraceotlp.NewGRPCClient(cc).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
		t.Fatal(err)
	}
	if got := r.Count("pricing", now.Add(-time.Second), now.Add(time.Second)); got != 1 {
		t.Errorf("%d SERVER spans of pricing counted over gRPC, want 1", got)
	}
}

func TestRefusesBadExports(t *testing.T) {
	r := listen(t, WithMaxBody(4096))
	big := make([]testSpan, 200)
	for i := range big {
		big[i] = testSpan{svc: strings.Repeat("x", 40), kind: ptrace.SpanKindServer, trace: byte(i), id: 1, start: time.Now()}
	}
	for _, tc := range []struct {
		name string
		send func() int
		want int
	}{
		{"garbage protobuf", func() int {
			return postRaw(t, r, []byte("\xff\xff\xff\xff not protobuf"), "application/x-protobuf", false)
		}, http.StatusBadRequest},
		{"garbage json", func() int { return postRaw(t, r, []byte(`{"resourceSpans": [`), "application/json", false) }, http.StatusBadRequest},
		{"not gzip", func() int {
			hr, _ := http.NewRequest(http.MethodPost, r.Endpoint()+"/v1/traces", strings.NewReader("plain"))
			hr.Header.Set("Content-Type", "application/x-protobuf")
			hr.Header.Set("Content-Encoding", "gzip")
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}, http.StatusBadRequest},
		{"unknown content type", func() int { return postRaw(t, r, []byte("x"), "text/plain", false) }, http.StatusUnsupportedMediaType},
		{"oversized", func() int { return post(t, r, traces(big...), "application/x-protobuf", false) }, http.StatusRequestEntityTooLarge},
		{"oversized once unzipped", func() int {
			return postRaw(t, r, bytes.Repeat([]byte{0}, 1<<20), "application/x-protobuf", true)
		}, http.StatusRequestEntityTooLarge},
	} {
		if got := tc.send(); got != tc.want {
			t.Errorf("%s: answered %d, want %d", tc.name, got, tc.want)
		}
	}
	st := r.Stats()
	if st.Rejected != 6 || st.Spans != 0 {
		t.Errorf("stats %+v: want 6 exports rejected and no span counted", st)
	}
	// Still serving.
	if code := post(t, r, traces(testSpan{svc: "a", kind: ptrace.SpanKindServer, trace: 1, id: 1, start: time.Now()}), "application/x-protobuf", false); code != http.StatusOK {
		t.Errorf("a good export after bad ones answered %d", code)
	}
}

func TestBoundsServiceNames(t *testing.T) {
	r := listen(t)
	now := time.Now()
	var all []testSpan
	for i := range MaxServices + 10 {
		all = append(all, testSpan{svc: fmt.Sprintf("svc-%d", i), kind: ptrace.SpanKindServer, trace: 1, id: byte(i), start: now})
	}
	all = append(all, testSpan{kind: ptrace.SpanKindServer, trace: 2, id: 1, start: now})
	post(t, r, traces(all...), "application/x-protobuf", false)
	st := r.Stats()
	if len(st.Server) != MaxServices+1 || st.Server[Unnamed] != 11 {
		t.Errorf("%d services counted, %d unnamed spans: want %d services and 11 unnamed", len(st.Server), st.Server[Unnamed], MaxServices+1)
	}
}

func TestOtherPathsAndMethods(t *testing.T) {
	r := listen(t)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "/v1/metrics", http.StatusNotFound},
		{http.MethodGet, "/v1/traces", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(tc.method, r.Endpoint()+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s answered %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestRingForgetsOldBuckets(t *testing.T) {
	var rg ring
	rg.add(5)
	rg.add(5 + buckets) // same slot, newer bucket
	if got := rg.sum(0, 10); got != 0 {
		t.Errorf("old bucket still counted: %d", got)
	}
	if got := rg.sum(buckets, 2*buckets); got != 1 {
		t.Errorf("new bucket counted %d times, want 1", got)
	}
}

// rawCodec sends bytes as they are, to hand the gRPC server what no SDK
// would.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { return nil }
func (rawCodec) Name() string                       { return "proto" }

// gRPC exports that cannot be decoded or are oversized are refused before
// Export runs; they are counted as refused, and the receiver goes on. An
// export that its client cancelled, or whose deadline passed, before its
// message arrived was not refused, and is not counted.
func TestGRPCRefusesBadExports(t *testing.T) {
	r := listen(t, WithMaxBody(4096))
	cc, err := grpc.NewClient(strings.TrimPrefix(r.Endpoint(), "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const method = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	invoke := func(body []byte) func() error {
		return func() error {
			var out []byte
			return cc.Invoke(ctx, method, body, &out, grpc.ForceCodec(rawCodec{}))
		}
	}
	// unfinished starts an export and sends no message, so that the
	// server waits for it until ctx ends.
	unfinished := func(ctx context.Context, end func()) error {
		st, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method, grpc.ForceCodec(rawCodec{}))
		if err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond) // the server is waiting for the message
		end()
		var out []byte
		return st.RecvMsg(&out)
	}
	// The RPCs that are not refused come first: their ends are reported
	// before the refusals', which the test waits for.
	for _, tc := range []struct {
		name    string
		send    func() error
		refused bool
	}{
		{"cancelled by its client", func() error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			return unfinished(ctx, cancel)
		}, false},
		{"past its deadline", func() error {
			ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			return unfinished(ctx, func() { <-ctx.Done() })
		}, false},
		{"garbage", invoke([]byte("\xff\xff\xff\xff not protobuf")), true},
		{"oversized", invoke(make([]byte, 8192)), true},
	} {
		if err := tc.send(); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	// stats.End is reported after the status is sent: wait for it, and a
	// little longer for any wrongly counted.
	deadline := time.Now().Add(5 * time.Second)
	for r.Stats().Rejected < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if st := r.Stats(); st.Rejected != 2 || st.Spans != 0 {
		t.Errorf("rejected %d, spans %d: want 2 (the garbage and the oversized export) and 0", st.Rejected, st.Spans)
	}
	now := time.Now()
	td := traces(testSpan{svc: "pricing", kind: ptrace.SpanKindServer, trace: 1, id: 1, start: now})
	if _, err := ptraceotlp.NewGRPCClient(cc).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
		t.Fatalf("a good export after bad ones: %v", err)
	}
}

// Only the codes with which gRPC refuses an export for the receiver count
// as refusals, not the ends that the client or the network chose.
func TestRefusedGRPCCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max (8197 vs. 4096)"), true},
		{status.Error(codes.Internal, "grpc: failed to unmarshal the received message"), true},
		{status.Error(codes.Unimplemented, "unknown method"), true},
		{status.Error(codes.Canceled, "context canceled"), false},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), false},
		{status.Error(codes.Unavailable, "client disconnected"), false},
	} {
		if got := refused(tc.err); got != tc.want {
			t.Errorf("refused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Settle waits for a window's spans that arrive late (an SDK starved of
// CPU exports them long after ExportDelay), as long as they keep coming,
// and no longer than the fixed margin where none does.
func TestSettleWaitsForLateSpans(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches int           // exports of spans from the window, after it
		every   time.Duration // apart
		min     time.Duration // Settle lasts at least, from the window's end
		max     time.Duration // and at most
	}{
		{"nothing late", 0, 0, 2*ExportDelay + 200*time.Millisecond, 2*ExportDelay + 200*time.Millisecond + time.Second},
		{"late for 1.5 s", 10, 150 * time.Millisecond, 1500 * time.Millisecond, SettleMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := listen(t)
			from := time.Now().Add(10 * time.Millisecond)
			end := from.Add(100 * time.Millisecond)
			time.Sleep(time.Until(end))
			// The late exports come from a goroutine of their own, which
			// must not call t.Fatal (post does): it reports by errs.
			errs := make(chan error, 1)
			go func() {
				defer close(errs)
				for i := range tc.batches {
					time.Sleep(tc.every)
					body, err := ptraceotlp.NewExportRequestFromTraces(traces(testSpan{svc: "cart", kind: ptrace.SpanKindServer, trace: byte(i + 1), id: byte(i + 1), start: from.Add(time.Duration(i) * time.Millisecond)})).MarshalProto()
					if err == nil {
						var resp *http.Response
						if resp, err = http.Post(r.Endpoint()+"/v1/traces", "application/x-protobuf", bytes.NewReader(body)); err == nil {
							resp.Body.Close()
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
			if err := r.Settle(context.Background(), end); err != nil {
				t.Fatal(err)
			}
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			took := time.Since(end)
			if took < tc.min || took > tc.max {
				t.Errorf("Settle returned %v after the window's end, want %v to %v", took, tc.min, tc.max)
			}
			if got := r.Count("cart", from, end); got != int64(tc.batches) {
				t.Errorf("%d spans of the window counted after Settle, want %d", got, tc.batches)
			}
		})
	}
}
