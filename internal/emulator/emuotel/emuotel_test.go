package emuotel_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
	"github.com/slowpoke-dev/slowpoke/internal/emulator/emuotel"
	"github.com/slowpoke-dev/slowpoke/internal/spans"
)

// topology: an HTTP frontend calling a gRPC cart twice and an HTTP
// catalog, which calls an HTTP currency three times and the cart once.
// Ports are placeholders.
const topology = `
entry: frontend
services:
  frontend:
    port: 1
    endpoints:
      /home:
        calls:
          - {service: cart, endpoint: Get, repeat: 2}
          - {service: catalog, endpoint: /list}
  cart:
    port: 2
    protocol: grpc
    endpoints:
      Get: {}
  catalog:
    port: 3
    endpoints:
      /list:
        calls:
          - {service: currency, endpoint: /convert, repeat: 3}
          - {service: cart, endpoint: Get}
  currency:
    port: 4
    endpoints:
      /convert: {}
`

// setEnv points the SDK at rcv, as slowpoke does for a service, less
// OTEL_SERVICE_NAME: the services of one process are told apart by their
// topology names.
func setEnv(t *testing.T, rcv *spans.Receiver) {
	for k, v := range rcv.Env("") {
		if k != "OTEL_SERVICE_NAME" {
			t.Setenv(k, v)
		}
	}
	t.Setenv("OTEL_SERVICE_NAME", "")
}

// start runs every service of the topology in this process, each with
// the tracing setup makes (none where it returns nil), and returns the
// frontend's address and a function that stops them all and flushes
// their spans.
func start(t *testing.T, setup emulator.TracingSetup) (string, func()) {
	t.Helper()
	topo, err := emulator.ParseTopology([]byte(topology))
	if err != nil {
		t.Fatal(err)
	}
	lns := map[string]net.Listener{}
	for name, svc := range topo.Services {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		svc.Port = l.Addr().(*net.TCPAddr).Port
		topo.Services[name], lns[name] = svc, l
	}
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg        sync.WaitGroup
		shutdowns []func(context.Context) error
	)
	for name, l := range lns {
		opts := []emulator.Option{emulator.WithListener(l), emulator.WithLogger(log.New(io.Discard, "", 0)), emulator.WithPlain(true)}
		tr, shutdown, reason, err := setup(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if tr != nil {
			opts = append(opts, emulator.WithTracing(tr))
			shutdowns = append(shutdowns, shutdown)
		} else if reason == "" {
			t.Errorf("%s: no tracing and no reason", name)
		}
		wg.Go(func() {
			if err := emulator.Run(ctx, topo, name, opts...); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	stop := func() {
		cancel()
		wg.Wait()
		for _, sd := range shutdowns {
			if err := sd(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stop)
	return topo.Services["frontend"].Addr(), stop
}

func get(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", url, resp.Status)
	}
}

// Every call is one SERVER span of its service, every downstream call
// links caller to callee, and /healthz makes no span.
func TestSpansCountEveryCall(t *testing.T) {
	rcv, err := spans.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	setEnv(t, rcv)
	addr, stop := start(t, emuotel.Setup)
	const requests = 50
	for range requests {
		get(t, "http://"+addr+"/home")
	}
	get(t, "http://"+addr+emulator.HealthPath)
	stop() // flushes the spans
	st := rcv.Stats()
	want := map[string]int64{"frontend": requests, "cart": 3 * requests, "catalog": requests, "currency": 3 * requests}
	for svc, n := range want {
		if st.Server[svc] != n {
			t.Errorf("%s: %d SERVER spans, want %d", svc, st.Server[svc], n)
		}
	}
	wantEdges := map[spans.Edge]int64{
		{Caller: "frontend", Callee: "cart"}:    2 * requests,
		{Caller: "frontend", Callee: "catalog"}: requests,
		{Caller: "catalog", Callee: "currency"}: 3 * requests,
		{Caller: "catalog", Callee: "cart"}:     requests,
	}
	if fmt.Sprint(st.Edges) != fmt.Sprint(wantEdges) {
		t.Errorf("edges %v, want %v", st.Edges, wantEdges)
	}
	if st.Rejected != 0 {
		t.Errorf("%d exports rejected", st.Rejected)
	}
}

// With gRPC as the OTLP protocol the spans arrive the same way.
func TestSpansOverGRPC(t *testing.T) {
	rcv, err := spans.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	setEnv(t, rcv)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	addr, stop := start(t, emuotel.Setup)
	for range 10 {
		get(t, "http://"+addr+"/home")
	}
	stop()
	if n := rcv.Stats().Server["currency"]; n != 30 {
		t.Errorf("currency: %d SERVER spans over OTLP/gRPC, want 30", n)
	}
}

// Without an endpoint, or with the SDK disabled, nothing is set up, and
// the reason is given; an unknown protocol is an error.
func TestNoExport(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    string
		wantErr bool
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, "OTEL_EXPORTER_OTLP_ENDPOINT is not set", false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}, "OTEL_SDK_DISABLED", false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "", true},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			t.Setenv("OTEL_SDK_DISABLED", "")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tr, _, reason, err := emuotel.Setup(context.Background(), "frontend")
			if tc.wantErr {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil || tr != nil || !strings.Contains(reason, tc.want) {
				t.Errorf("tracing %v, reason %q, error %v: want none, %q", tr, reason, err, tc.want)
			}
		})
	}
}
