package slowgrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/slowpoke-dev/slowpoke/internal/agent"
)

// collect runs the controller's end of an agent socket and returns a
// function that fetches a fresh report.
func collect(t *testing.T) (string, func() agent.Message) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reports := make(chan agent.Message, 64)
	conns := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		conns <- c
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var m agent.Message
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "report" && m.ID == 1 {
				reports <- m
			}
		}
	}()
	return path, func() agent.Message {
		c := <-conns
		conns <- c
		b, _ := json.Marshal(agent.Message{Type: "flush", ID: 1})
		c.Write(append(b, '\n'))
		select {
		case m := <-reports:
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no report")
			return agent.Message{}
		}
	}
}

func TestServerAndClientCounts(t *testing.T) {
	path, report := collect(t)
	a, err := agent.Dial(path, "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.StatsHandler(NewServerHandler(withAgent(a))))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln)
	defer srv.Stop()

	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(NewClientHandler(withAgent(a))))
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
	if got := m.Downstream[ln.Addr().String()]; got != workers*each {
		t.Errorf("client counted %d calls to %s, want %d (%+v)", got, ln.Addr(), workers*each, m)
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
	t.Setenv(agent.EnvSocket, "")
	s := NewServerHandler().(*serverHandler)
	c := NewClientHandler().(*clientHandler)
	if s.agent != nil || c.agent != nil {
		t.Fatal("handlers have an agent outside a controller")
	}
	// And they are usable: a server with the no-op handler serves.
	srv := grpc.NewServer(grpc.StatsHandler(s))
	srv.Stop()
}
