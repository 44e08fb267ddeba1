package spans

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// DefaultMaxBody is the largest export a Receiver accepts, compressed or
// not.
const DefaultMaxBody = 8 << 20

// ExportDelay is the longest a service's SDK holds a finished span before
// exporting it, as Env sets it (OTEL_BSP_SCHEDULE_DELAY).
const ExportDelay = 200 * time.Millisecond

// SettleMax is the longest Settle waits after a window's end for its
// late spans.
const SettleMax = 5 * time.Second

// QueueSize is how many finished spans a service's SDK may hold before
// exporting them, as Env sets it (OTEL_BSP_MAX_QUEUE_SIZE). The SDKs'
// default, 2048, fills within a second at a few thousand calls a second
// between two exports, and a span dropped there is a call not counted.
// The export batch (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512 by default) is
// left alone: the SDKs export a batch as soon as it is full, without
// waiting for ExportDelay, so a larger one would not export sooner; the
// queue is what holds the spans finished while an export is under way.
const QueueSize = 1 << 16

// Receiver is an OTLP trace receiver listening on one local port, for
// OTLP/HTTP (protobuf and JSON, optionally gzip'd) and OTLP/gRPC alike, so
// that whichever protocol a service's SDK defaults to, the one endpoint
// in Env reaches it.
type Receiver struct {
	cfg  config
	ln   net.Listener
	srv  *http.Server
	grpc *grpc.Server
	c    *counter
	done chan struct{}
}

type config struct {
	addr    string
	maxBody int64
}

// Option configures a Receiver.
type Option func(*config)

// WithAddr listens on addr instead of a free port of 127.0.0.1.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithMaxBody sets the largest export accepted, in bytes (before and after
// decompression).
func WithMaxBody(n int64) Option { return func(c *config) { c.maxBody = n } }

// Listen starts a Receiver. Close stops it.
func Listen(opts ...Option) (*Receiver, error) {
	cfg := config{addr: "127.0.0.1:0", maxBody: DefaultMaxBody}
	for _, o := range opts {
		o(&cfg)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry receiver: %w", err)
	}
	r := &Receiver{cfg: cfg, ln: ln, c: newCounter(time.Now()), done: make(chan struct{})}
	r.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(int(cfg.maxBody)), grpc.MaxConcurrentStreams(64),
		grpc.StatsHandler(rejectCounter{r.c}))
	ptraceotlp.RegisterGRPCServer(r.grpc, &grpcExport{r: r})
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	r.srv = &http.Server{Handler: r, Protocols: &protos, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: discardLog}
	go func() {
		defer close(r.done)
		r.srv.Serve(ln)
	}()
	return r, nil
}

// Endpoint is the receiver's address as OTEL_EXPORTER_OTLP_ENDPOINT
// takes it: http://host:port.
func (r *Receiver) Endpoint() string { return "http://" + r.ln.Addr().String() }

// Env is the environment that makes a service's OpenTelemetry SDK or
// zero-code agent export its spans to r as service: every span sampled,
// up to QueueSize of them held and exported within ExportDelay, and no
// metrics or logs.
func (r *Receiver) Env(service string) map[string]string {
	return map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": r.Endpoint(),
		"OTEL_SERVICE_NAME":           service,
		"OTEL_TRACES_SAMPLER":         "always_on",
		"OTEL_BSP_SCHEDULE_DELAY":     fmt.Sprint(ExportDelay.Milliseconds()),
		"OTEL_BSP_MAX_QUEUE_SIZE":     fmt.Sprint(QueueSize),
		"OTEL_METRICS_EXPORTER":       "none",
		"OTEL_LOGS_EXPORTER":          "none",
		// Node.js's agent otherwise asks cloud metadata servers where it
		// runs, at every start.
		"OTEL_NODE_RESOURCE_DETECTORS": "env,host,os,process",
	}
}

// Count is how many SERVER spans of service started in [from, to), to
// about 20 ms at each end. Spans arrive up to ExportDelay after they end:
// see Settle.
func (r *Receiver) Count(service string, from, to time.Time) int64 {
	return r.c.count(service, from, to)
}

// Settle waits until the spans of calls that ended by t have arrived:
// ExportDelay and a margin for the export itself after t, then, while
// SERVER spans that started before t are still arriving (an SDK starved
// of CPU exports late), for as long as they do, up to SettleMax after t.
func (r *Receiver) Settle(ctx context.Context, t time.Time) error {
	sleep := func(d time.Duration) error {
		if d <= 0 {
			return nil
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if err := sleep(time.Until(t.Add(2*ExportDelay + 200*time.Millisecond))); err != nil {
		return err
	}
	for time.Until(t.Add(SettleMax)) > 0 && r.c.arrivingFor(time.Now().Add(-ExportDelay).UnixNano(), t.UnixNano()) {
		if err := sleep(ExportDelay / 2); err != nil {
			return err
		}
	}
	return nil
}

// Stats returns what r has received so far.
func (r *Receiver) Stats() Stats { return r.c.stats() }

// Close stops the receiver.
func (r *Receiver) Close() error {
	r.grpc.Stop()
	err := r.srv.Close()
	<-r.done
	return err
}

// ServeHTTP takes OTLP/HTTP trace exports at /v1/traces and hands gRPC
// (HTTP/2, application/grpc) to the gRPC server.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.ProtoMajor == 2 && strings.HasPrefix(req.Header.Get("Content-Type"), "application/grpc") {
		r.grpc.ServeHTTP(w, req)
		return
	}
	if req.URL.Path != "/v1/traces" {
		// Metrics and logs are not asked for (Env); say so plainly.
		http.Error(w, "slowpoke receives traces only, at /v1/traces", http.StatusNotFound)
		return
	}
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	code, err := r.export(w, req)
	if err != nil {
		r.c.reject()
		http.Error(w, err.Error(), code)
	}
}

// export decodes one OTLP/HTTP export and answers it.
func (r *Receiver) export(w http.ResponseWriter, req *http.Request) (int, error) {
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if ct != "application/x-protobuf" && ct != "application/json" {
		return http.StatusUnsupportedMediaType, fmt.Errorf("content type %q: want application/x-protobuf or application/json", ct)
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, r.cfg.maxBody)
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return http.StatusBadRequest, fmt.Errorf("gzip: %w", err)
		}
		body = zr
	default:
		return http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: want gzip or none", enc)
	}
	data, err := io.ReadAll(io.LimitReader(body, r.cfg.maxBody+1))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) || int64(len(data)) > r.cfg.maxBody {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("export over %d bytes", r.cfg.maxBody)
	}
	if err != nil {
		return http.StatusBadRequest, err
	}
	er := ptraceotlp.NewExportRequest()
	if ct == "application/json" {
		err = er.UnmarshalJSON(data)
	} else {
		err = er.UnmarshalProto(data)
	}
	if err != nil {
		return http.StatusBadRequest, fmt.Errorf("malformed export: %w", err)
	}
	r.add(er.Traces())
	var resp []byte
	if ct == "application/json" {
		resp, err = ptraceotlp.NewExportResponse().MarshalJSON()
	} else {
		resp, err = ptraceotlp.NewExportResponse().MarshalProto()
	}
	if err != nil {
		return http.StatusInternalServerError, err
	}
	w.Header().Set("Content-Type", ct)
	w.Write(resp)
	return http.StatusOK, nil
}

// add counts every span of td.
func (r *Receiver) add(td ptrace.Traces) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	oldest := int64(math.MaxInt64)
	defer func() { r.c.arrived(time.Now().UnixNano(), oldest) }()
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		name := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			name = v.AsString()
		}
		svc := r.c.name(name)
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			ss := sss.At(j).Spans()
			for k := range ss.Len() {
				s := ss.At(k)
				id := spanID{trace: s.TraceID(), span: s.SpanID()}
				parent := spanID{trace: s.TraceID(), span: s.ParentSpanID()}
				server, start := s.Kind() == ptrace.SpanKindServer, int64(s.StartTimestamp())
				r.c.span(svc, id, parent, server, start)
				if server {
					oldest = min(oldest, start)
				}
			}
		}
	}
}

// discardLog keeps the HTTP server's complaints about misbehaving clients
// out of slowpoke's output; refused exports are counted instead.
var discardLog = log.New(io.Discard, "", 0)

// grpcExport is the OTLP/gRPC trace service.
type grpcExport struct {
	ptraceotlp.UnimplementedGRPCServer
	r *Receiver
}

func (g *grpcExport) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	g.r.add(req.Traces())
	return ptraceotlp.NewExportResponse(), nil
}

// rejectCounter counts the gRPC exports that the receiver refuses
// (undecodable, oversized, or of an unknown method or compression), which
// gRPC refuses before Export runs, among the refused exports as
// OTLP/HTTP's are.
type rejectCounter struct{ c *counter }

func (rejectCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (h rejectCounter) HandleRPC(_ context.Context, s stats.RPCStats) {
	if end, ok := s.(*stats.End); ok && refused(end.Error) {
		h.c.reject()
	}
}

// refused tells whether a gRPC export that ended with err was refused by
// the receiver: gRPC answers an oversized message with ResourceExhausted,
// one that does not decode or decompress (or stops short) with Internal,
// an unknown method or compression with Unimplemented. An RPC that ends
// otherwise in error was not refused: its client cancelled it, its
// deadline passed or its connection went (Canceled, DeadlineExceeded,
// Unavailable). The RPC's context cannot tell these apart: gRPC cancels
// it once the status of a refusal is written, before reporting the end.
func refused(err error) bool {
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.Internal, codes.Unimplemented:
		return true
	}
	return false
}

func (rejectCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (rejectCounter) HandleConn(context.Context, stats.ConnStats)                       {}
