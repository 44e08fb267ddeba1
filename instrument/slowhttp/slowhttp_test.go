package slowhttp

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/agent"
)

// controllerSocket is a stand-in for the controller's end of the agent
// socket: a real Unix socket that collects the agent's reports.
type controllerSocket struct {
	ln   net.Listener
	mu   sync.Mutex
	last agent.Message
	conn net.Conn
}

func newControllerSocket(t *testing.T) *controllerSocket {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "agent.sock"))
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
			var m agent.Message
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "report" {
				c.mu.Lock()
				c.last = m
				c.mu.Unlock()
			}
		}
	}()
	return c
}

// report asks the agent for a fresh report and returns it.
func (c *controllerSocket) report(t *testing.T, id uint64) agent.Message {
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
			b, _ := json.Marshal(agent.Message{Type: "flush", ID: id})
			conn.Write(append(b, '\n'))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no report from the agent")
	return agent.Message{}
}

func TestCountsUnderConcurrency(t *testing.T) {
	sock := newControllerSocket(t)
	a, err := agent.Dial(sock.ln.Addr().String(), "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	client := &http.Client{Transport: NewTransport(nil, withAgent(a))}

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
	srv := httptest.NewServer(NewHandler(mux, withAgent(a)))
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
	t.Setenv(agent.EnvSocket, "")
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
