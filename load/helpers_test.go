package load_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/load"
)

// runner abstracts over the two load models so tests can be table-driven.
type runner struct {
	name string
	run  func(ctx context.Context, mix []load.Request, opts ...load.Option) (*load.Result, error)
}

var runners = []runner{
	{"closed", load.RunClosed},
	{"open", func(ctx context.Context, mix []load.Request, opts ...load.Option) (*load.Result, error) {
		return load.RunOpen(ctx, mix, 300, opts...)
	}},
}

// testServer is a real HTTP server on 127.0.0.1 that counts requests and
// connections.
type testServer struct {
	*httptest.Server
	requests atomic.Int64 // handler invocations that finished

	mu    sync.Mutex
	conns map[string]bool // distinct remote addresses seen
}

func newTestServer(t *testing.T, h http.HandlerFunc) *testServer {
	t.Helper()
	ts := &testServer{conns: map[string]bool{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(w, r)
		ts.requests.Add(1)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			ts.mu.Lock()
			ts.conns[c.RemoteAddr().String()] = true
			ts.mu.Unlock()
		}
	}
	srv.Start()
	ts.Server = srv
	t.Cleanup(srv.Close)
	return ts
}

func (ts *testServer) connCount() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.conns)
}

// okHandler answers 200 after a short pause, which keeps the CPU usage of the
// tests modest.
func okHandler(w http.ResponseWriter, r *http.Request) {
	time.Sleep(500 * time.Microsecond)
	w.Write([]byte("ok"))
}

// hangHandler never answers; it returns when the client goes away.
func hangHandler(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(30 * time.Second):
	}
}

func one(url string) []load.Request {
	return []load.Request{{Name: "r", URL: url, Weight: 1}}
}

// short returns options for a brief run.
func short(extra ...load.Option) []load.Option {
	return append([]load.Option{
		load.WithWarmup(100 * time.Millisecond),
		load.WithDuration(300 * time.Millisecond),
		load.WithConnections(4),
	}, extra...)
}
