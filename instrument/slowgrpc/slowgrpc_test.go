package slowgrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"

	"github.com/slowpoke-dev/slowpoke/internal/inservice"
)

// collect runs the controller's end of an instrumentation socket and returns a
// function that fetches a fresh report.
func collect(t *testing.T) (string, func() inservice.Message) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reports := make(chan inservice.Message, 64)
	conns := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		conns <- c
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var m inservice.Message
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "report" && m.ID == 1 {
				reports <- m
			}
		}
	}()
	return path, func() inservice.Message {
		c := <-conns
		conns <- c
		b, _ := json.Marshal(inservice.Message{Type: "flush", ID: 1})
		c.Write(append(b, '\n'))
		select {
		case m := <-reports:
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no report")
			return inservice.Message{}
		}
	}
}

// serveHealth serves the gRPC health service on a loopback port until the
// test ends, and returns its address.
func serveHealth(t *testing.T, opts ...grpc.ServerOption) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

func TestServerAndClientCounts(t *testing.T) {
	path, report := collect(t)
	a, err := inservice.Dial(path, "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	addr := serveHealth(t, grpc.StatsHandler(NewServerHandler(withLink(a))))

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(NewClientHandler(withLink(a))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)

	const workers, each = 8, 25
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	m := report()
	if got := m.Endpoints["/grpc.health.v1.Health/Check"]; got != workers*each {
		t.Errorf("server counted %d calls, want %d (%+v)", got, workers*each, m)
	}
	if got := m.Downstream[addr]; got != workers*each {
		t.Errorf("client counted %d calls to %s, want %d (%+v)", got, addr, workers*each, m)
	}
	// The server's End event for the last calls may come just after their
	// clients have the responses: in flight must reach 0, soon.
	for deadline := time.Now().Add(5 * time.Second); m.InFlight != 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		m = report()
	}
	if m.InFlight != 0 {
		t.Errorf("in flight %d after 5 s", m.InFlight)
	}
}

func TestNoOpWithoutController(t *testing.T) {
	t.Setenv(inservice.EnvSocket, "")
	s := NewServerHandler().(*serverHandler)
	c := NewClientHandler().(*clientHandler)
	if s.link != nil || c.link != nil {
		t.Fatal("handlers have a link outside a controller")
	}
	// And they are usable: a server with the no-op handler serves.
	srv := grpc.NewServer(grpc.StatsHandler(s))
	srv.Stop()
}

// TestPoolLimit: under a pool limit the server handler holds each RPC at
// its start until a slot is free, so no more method handlers run at once,
// and every RPC is served.
func TestPoolLimit(t *testing.T) {
	path, _ := collect(t)
	a, err := inservice.Dial(path, "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.SetPool(2, time.Second)
	var running, peak, served atomic.Int64
	addr := serveHealth(t, grpc.StatsHandler(NewServerHandler(withLink(a))),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			served.Add(1)
			return h(ctx, req)
		}))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	const workers, each = 10, 20
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 2 {
		t.Errorf("%d RPCs ran at once under a limit of 2", p)
	}
	if p := peak.Load(); p < 2 {
		t.Errorf("at most %d RPC ran at once: the limit of 2 was never reached", p)
	}
	if got := served.Load(); got != workers*each {
		t.Errorf("served %d RPCs, want %d", got, workers*each)
	}
	// gRPC runs the stats handler's End after the status is on its way:
	// the client can return before the last calls are counted.
	m := a.Snapshot()
	for deadline := time.Now().Add(5 * time.Second); m.Done < workers*each && time.Now().Before(deadline); m = a.Snapshot() {
		time.Sleep(10 * time.Millisecond)
	}
	if m.Done != workers*each || m.Good != workers*each {
		t.Errorf("done %d good %d, want %d", m.Done, m.Good, workers*each)
	}
}

// A call is recorded under the name the client dialled, so that the call
// graph can tell services apart by name where they share a port.
func TestClientRecordsDialledName(t *testing.T) {
	path, report := collect(t)
	a, err := inservice.Dial(path, "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, port, _ := net.SplitHostPort(serveHealth(t))
	name := net.JoinHostPort("localhost", port)
	conn, err := grpc.NewClient("passthrough:///"+name, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(NewClientHandler(withLink(a), nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if m := report(); m.Downstream[name] != 1 {
		t.Errorf("downstream %v; want one call to %s", m.Downstream, name)
	}
}

func TestCalleeAddr(t *testing.T) {
	remote := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 50051}
	for _, tc := range []struct {
		authority string
		remote    net.Addr
		want      string
	}{
		{"cart:50051", remote, "cart:50051"},
		{"cart", remote, "cart:50051"},
		{"cart.shop.svc.cluster.local", remote, "cart.shop.svc.cluster.local:50051"},
		{"[::1]:9000", remote, "[::1]:9000"},
		{"", remote, "10.0.0.7:50051"},
		{"cart", nil, "cart"},
		{"", nil, ""},
	} {
		if got := calleeAddr(&stats.OutHeader{Client: true, Authority: tc.authority, RemoteAddr: tc.remote}); got != tc.want {
			t.Errorf("authority %q, remote %v: %q, want %q", tc.authority, tc.remote, got, tc.want)
		}
	}
}

// Under a latency what-if the client sets the request's id and counter,
// replacing values forwarded from its own caller's metadata.
func TestClientReplacesForwardedLatencyMetadata(t *testing.T) {
	store, err := inservice.CreateStore(filepath.Join(t.TempDir(), "delays"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	path, _ := collect(t)
	a, err := inservice.Dial(path, "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.SetLatency(store.Path(), false, 0); err != nil {
		t.Fatal(err)
	}
	req := a.BeginRequest("", "")
	if req == nil {
		t.Fatal("no request under a latency what-if")
	}
	ctx := inservice.ContextWithRequest(context.Background(), req)
	ctx = metadata.AppendToOutgoingContext(ctx, inservice.MDRequest, "999", inservice.MDDelay, "5", "other", "kept")
	ctx = NewClientHandler(withLink(a)).TagRPC(ctx, &stats.RPCTagInfo{FullMethodName: "/grpc.health.v1.Health/Check"})
	md, _ := metadata.FromOutgoingContext(ctx)
	if got := md.Get(inservice.MDRequest); !slices.Equal(got, []string{req.ID()}) {
		t.Errorf("%s = %q, want only %q", inservice.MDRequest, got, req.ID())
	}
	if got := md.Get(inservice.MDDelay); !slices.Equal(got, []string{req.Local()}) {
		t.Errorf("%s = %q, want only %q", inservice.MDDelay, got, req.Local())
	}
	if got := md.Get("other"); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("other metadata = %q, want it kept", got)
	}
}
