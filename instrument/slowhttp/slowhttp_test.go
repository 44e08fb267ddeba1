package slowhttp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/inservice"
)

// controllerSocket is a stand-in for the controller's end of the
// instrumentation socket: a real Unix socket that collects the link's reports.
type controllerSocket struct {
	ln   net.Listener
	mu   sync.Mutex
	last inservice.Message
	conn net.Conn
}

func newControllerSocket(t *testing.T) *controllerSocket {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "link.sock"))
	if err != nil {
		t.Fatal(err)
	}
	c := &controllerSocket{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		c.conn = conn
		c.mu.Unlock()
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			var m inservice.Message
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "report" {
				c.mu.Lock()
				c.last = m
				c.mu.Unlock()
			}
		}
	}()
	return c
}

// report asks the link for a fresh report and returns it.
func (c *controllerSocket) report(t *testing.T, id uint64) inservice.Message {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		conn, last := c.conn, c.last
		c.mu.Unlock()
		if last.ID == id && id != 0 {
			return last
		}
		if conn != nil {
			b, _ := json.Marshal(inservice.Message{Type: "flush", ID: id})
			conn.Write(append(b, '\n'))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no report from the link")
	return inservice.Message{}
}

func TestCountsUnderConcurrency(t *testing.T) {
	sock := newControllerSocket(t)
	a, err := inservice.Dial(sock.ln.Addr().String(), "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	client := &http.Client{Transport: NewTransport(nil, withLink(a))}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		resp, err := client.Get(backend.URL)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(NewHandler(mux, withLink(a)))
	defer srv.Close()

	const workers, each = 16, 50
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				if resp, err := http.Get(srv.URL + "/items/42"); err == nil {
					resp.Body.Close()
				}
				if resp, err := http.Post(srv.URL+"/items", "text/plain", nil); err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	rep := sock.report(t, 7)
	tests := []struct {
		name string
		got  uint64
		want uint64
	}{
		{"total", rep.Total, 2 * workers * each},
		{"GET pattern", rep.Endpoints["GET /items/{id}"], workers * each},
		{"POST pattern", rep.Endpoints["POST /items"], workers * each},
		{"downstream", rep.Downstream[backend.Listener.Addr().String()], workers * each},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d (report %+v)", tt.name, tt.got, tt.want, rep)
		}
	}
	if rep.InFlight != 0 {
		t.Errorf("in flight = %d after all requests finished", rep.InFlight)
	}
}

func TestNoOpWithoutController(t *testing.T) {
	// The test process was not started by a controller: the wrappers
	// must hand back exactly what they were given.
	t.Setenv(inservice.EnvSocket, "")
	h := http.NewServeMux()
	if got := NewHandler(h); got != http.Handler(h) {
		t.Fatalf("NewHandler returned a wrapper without a controller")
	}
	rt := &http.Transport{}
	if got := NewTransport(rt); got != http.RoundTripper(rt) {
		t.Fatalf("NewTransport returned a wrapper without a controller")
	}
	if got := NewTransport(nil); got != http.DefaultTransport {
		t.Fatalf("NewTransport(nil) = %T, want http.DefaultTransport", got)
	}
}

func BenchmarkHandlerNoOp(b *testing.B) {
	h := NewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/x", nil)
	w := httptest.NewRecorder()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

// TestPoolLimit sends a pool limit over the instrumentation socket, as the controller
// does, and checks that the handler never runs more requests at once, that
// every request is served, and that a request whose client leaves while
// queued is answered 503 without reaching the handler.
func TestPoolLimit(t *testing.T) {
	sock := newControllerSocket(t)
	a, err := inservice.Dial(sock.ln.Addr().String(), "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var (
		running, peak, served atomic.Int64
		release               = make(chan struct{})
	)
	srv := httptest.NewServer(NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if r.URL.Path == "/hold" {
			<-release
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		served.Add(1)
	}), withLink(a)))
	defer srv.Close()
	sock.report(t, 1) // connected
	sock.mu.Lock()
	b, _ := json.Marshal(inservice.Message{Type: "pool", Limit: 3, ThresholdNS: int64(time.Second)})
	sock.conn.Write(append(b, '\n'))
	sock.mu.Unlock()
	if rep := sock.report(t, 2); rep.Limit != 3 {
		t.Fatalf("limit %d after the pool message, want 3", rep.Limit)
	}

	// Three requests hold every slot; a fourth, whose client gives up
	// while it waits, is answered 503 and never runs.
	var held sync.WaitGroup
	for range 3 {
		held.Go(func() {
			if resp, err := http.Get(srv.URL + "/hold"); err == nil {
				resp.Body.Close()
			}
		})
	}
	for running.Load() != 3 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/late", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("a request whose client left while queued got %s", resp.Status)
	}
	cancel()
	close(release)
	held.Wait()

	const workers, each = 12, 30
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if resp, err := http.Get(srv.URL + "/x"); err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 3 {
		t.Errorf("%d requests ran at once under a limit of 3", p)
	}
	if got := served.Load(); got != 3+workers*each {
		t.Errorf("served %d requests, want %d (the late one never runs)", got, 3+workers*each)
	}
	rep := sock.report(t, 3)
	if rep.Done != uint64(3+workers*each) || rep.Good == 0 || rep.Queued != 0 {
		t.Errorf("report: done %d good %d queued %d", rep.Done, rep.Good, rep.Queued)
	}
}

// A call is recorded as host:port, the scheme's port where the URL has
// none (http://cart/x, as services call each other on Kubernetes), so
// that the orchestrator can map it to a service.
func TestTransportRecordsHostAndPort(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://cart/items", "cart:80"},
		{"https://cart.shop.svc.cluster.local/x", "cart.shop.svc.cluster.local:443"},
		{"http://cart:8081/items", "cart:8081"},
		{"http://127.0.0.1:18081/", "127.0.0.1:18081"},
		{"http://[::1]/", "[::1]:80"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			ctl := newControllerSocket(t)
			a, err := inservice.Dial(ctl.ln.Addr().String(), "svc")
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			// The call itself goes to a local server, whatever its URL.
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer srv.Close()
			direct := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
			}}
			defer direct.CloseIdleConnections()
			client := &http.Client{Transport: NewTransport(direct, withLink(a), nil)}
			if strings.HasPrefix(tc.url, "https") {
				// No TLS here: the address is recorded before the
				// request goes out, and the request fails.
				client.Get(tc.url)
			} else if resp, err := client.Get(tc.url); err != nil {
				t.Fatal(err)
			} else {
				resp.Body.Close()
			}
			if m := ctl.report(t, 7); m.Downstream[tc.want] != 1 {
				t.Errorf("downstream %v; want one call to %s", m.Downstream, tc.want)
			}
		})
	}
}
