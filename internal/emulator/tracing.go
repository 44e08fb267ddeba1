package emulator

import (
	"context"
	"net/http"

	"google.golang.org/grpc"
)

// Tracing makes a service export OpenTelemetry spans: a SERVER span per
// call it serves and a CLIENT span per downstream call, with the trace
// context propagated to the callee. The emulator itself does not link the
// OpenTelemetry SDK (it is part of the slowpoke binary); package
// internal/emulator/emuotel implements Tracing, and cmd/slowpoke-emu links
// it in (WithOTel).
type Tracing interface {
	// Handler wraps the service's HTTP handler (not its /healthz).
	Handler(h http.Handler) http.Handler
	// Transport wraps the client transport of downstream HTTP calls.
	Transport(rt http.RoundTripper) http.RoundTripper
	// ServerOptions are added to the service's gRPC server.
	ServerOptions() []grpc.ServerOption
	// DialOptions are added to every downstream gRPC connection.
	DialOptions() []grpc.DialOption
}

// WithTracing makes the service export spans through t (nil: none, the
// default). Run does not shut t down: whoever made it flushes it after
// Run returns.
func WithTracing(t Tracing) Option { return func(c *config) { c.tracing = t } }

// TracingSetup sets up span export for the named service from the
// standard OTEL_* environment variables. It returns a nil Tracing when
// they ask for no export (no OTLP endpoint set, or OTEL_SDK_DISABLED), with
// the reason; otherwise shutdown flushes the spans still queued and must
// be called once the service has stopped.
type TracingSetup func(ctx context.Context, service string) (t Tracing, shutdown func(context.Context) error, reason string, err error)

// MainOption configures Main.
type MainOption func(*mainConfig)

type mainConfig struct {
	otel TracingSetup
}

// WithOTel makes Main's -otel flag available: with it, the service
// exports spans as setup arranges. Without this option (the slowpoke
// binary run as slowpoke-emu), -otel is refused as a usage error.
func WithOTel(setup TracingSetup) MainOption { return func(c *mainConfig) { c.otel = setup } }
