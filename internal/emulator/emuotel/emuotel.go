// Package emuotel makes an emulated service export OpenTelemetry spans
// with the official Go SDK (go.opentelemetry.io/otel), otelhttp and
// otelgrpc: a SERVER span per call served, a CLIENT span per downstream
// call, the W3C trace context propagated to the callee.
//
// It is the emulator.TracingSetup of cmd/slowpoke-emu's -otel flag. The
// slowpoke binary, which is also the emulator under that name, does not
// link it, so that the SDK adds nothing to slowpoke's size.
//
// Export is configured by the standard variables only: it happens where
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set and OTEL_SDK_DISABLED is not true; OTEL_EXPORTER_OTLP_PROTOCOL (or
// its _TRACES_ form) chooses http/protobuf (the default) or grpc; the SDK
// and exporters read the rest (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_EXPORTER_OTLP_HEADERS, ...). The
// service is named by its topology name unless OTEL_SERVICE_NAME says
// otherwise.
package emuotel

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
)

var _ emulator.TracingSetup = Setup

// Setup is the emulator.TracingSetup of slowpoke-emu -otel.
func Setup(ctx context.Context, service string) (emulator.Tracing, func(context.Context) error, string, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil, "OTEL_SDK_DISABLED is true", nil
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil, "OTEL_EXPORTER_OTLP_ENDPOINT is not set", nil
	}
	protocol := firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, nil, "", fmt.Errorf("OTLP protocol %q is not supported: want http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("OTLP exporter: %w", err)
	}
	// Later sources win: the topology's name, then the environment's.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		exp.Shutdown(ctx)
		return nil, nil, "", fmt.Errorf("resource: %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER (default: parent-based
	// always on), the batch span processor's queue and delays from
	// OTEL_BSP_* (slowpoke sets a queue far larger than the SDK's 2048,
	// which the emulator's rates fill within a second: spans.QueueSize).
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
	)
	return &tracing{tp: tp, prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}, tp.Shutdown, "", nil
}

func firstEnv(keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v
		}
	}
	return ""
}

// tracing is emulator.Tracing over one tracer provider. It never touches
// the OpenTelemetry globals.
type tracing struct {
	tp   *sdktrace.TracerProvider
	prop propagation.TextMapPropagator
}

var noMeter = noopmetric.NewMeterProvider()

func (t *tracing) Handler(h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "server",
		otelhttp.WithTracerProvider(t.tp), otelhttp.WithPropagators(t.prop), otelhttp.WithMeterProvider(noMeter),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))
}

func (t *tracing) Transport(rt http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(rt,
		otelhttp.WithTracerProvider(t.tp), otelhttp.WithPropagators(t.prop), otelhttp.WithMeterProvider(noMeter),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))
}

func (t *tracing) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(t.tp), otelgrpc.WithPropagators(t.prop), otelgrpc.WithMeterProvider(noMeter)))}
}

func (t *tracing) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(t.tp), otelgrpc.WithPropagators(t.prop), otelgrpc.WithMeterProvider(noMeter)))}
}
