package emulator

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
)

// fakeTracing counts what the emulator wraps with it.
type fakeTracing struct{ handlers, transports, servers, dials atomic.Int32 }

func (f *fakeTracing) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.handlers.Add(1)
		h.ServeHTTP(w, r)
	})
}

func (f *fakeTracing) Transport(rt http.RoundTripper) http.RoundTripper {
	f.transports.Add(1)
	return rt
}

func (f *fakeTracing) ServerOptions() []grpc.ServerOption { f.servers.Add(1); return nil }
func (f *fakeTracing) DialOptions() []grpc.DialOption     { f.dials.Add(1); return nil }

// A service given a Tracing wraps its HTTP handler (not /healthz), its
// HTTP client, its gRPC server and its gRPC connections with it.
func TestTracingWrapsServersAndClients(t *testing.T) {
	f := &fakeTracing{}
	c := startCluster(t, `
services:
  front:
    port: 1
    endpoints:
      /a: {calls: [{service: back, endpoint: Get}, {service: web, endpoint: /b}]}
  back:
    port: 2
    protocol: grpc
    endpoints: {Get: {}}
  web:
    port: 3
    endpoints: {/b: {}}
`, []string{"front", "back", "web"}, WithTracing(f))
	c.mustGet(t, "front", "/a")
	c.mustGet(t, "front", HealthPath)
	// front's /a and web's /b; /healthz bypasses it.
	if n := f.handlers.Load(); n != 2 {
		t.Errorf("%d calls through the traced handlers, want 2", n)
	}
	if f.transports.Load() != 1 || f.servers.Load() != 1 || f.dials.Load() != 1 {
		t.Errorf("transports %d, gRPC servers %d, gRPC connections %d: want 1 each", f.transports.Load(), f.servers.Load(), f.dials.Load())
	}
}

// -otel is a usage error where Main has no OpenTelemetry (the slowpoke
// binary as slowpoke-emu); a setup's error is one too.
func TestMainOTelRefused(t *testing.T) {
	topo := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(topo, []byte("services: {a: {port: 1, endpoints: {/x: {}}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := Main([]string{"-topology", topo, "-service", "a", "-otel"}, &stderr); code != 2 || !strings.Contains(stderr.String(), "built without OpenTelemetry") {
		t.Errorf("exit %d, stderr %q: want 2 and the reason", code, stderr.String())
	}
	stderr.Reset()
	failing := func(context.Context, string) (Tracing, func(context.Context) error, string, error) {
		return nil, nil, "", errors.New("no exporter")
	}
	if code := Main([]string{"-topology", topo, "-service", "a", "-otel"}, &stderr, WithOTel(failing)); code != 2 || !strings.Contains(stderr.String(), "no exporter") {
		t.Errorf("exit %d, stderr %q: want 2 and the setup's error", code, stderr.String())
	}
}
