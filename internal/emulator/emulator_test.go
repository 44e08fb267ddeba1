package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// counter counts served calls per "service endpoint".
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) hook(service, endpoint string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[service+" "+endpoint]++
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// cluster is a topology whose services run in this process.
type cluster struct {
	topo   *Topology
	client *http.Client
}

// startCluster parses topoYAML (its ports are placeholders), gives every
// service in run a fresh 127.0.0.1:0 listener, rewrites the topology to the
// real ports and runs those services. Services not in run keep a port on
// which nothing listens. Everything is stopped when the test ends.
func startCluster(t *testing.T, topoYAML string, run []string, opts ...Option) *cluster {
	t.Helper()
	topo, err := ParseTopology([]byte(topoYAML))
	if err != nil {
		t.Fatal(err)
	}
	listeners := map[string]net.Listener{}
	for name, svc := range topo.Services {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		svc.Port = l.Addr().(*net.TCPAddr).Port
		topo.Services[name] = svc
		if contains(run, name) {
			listeners[name] = l
		} else {
			l.Close() // a dead service: connections to its port are refused
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, len(listeners))
	for name, l := range listeners {
		o := append([]Option{WithListener(l), WithLogger(testLogger(t))}, opts...)
		wg.Go(func() {
			if err := Run(ctx, topo, name, o...); err != nil {
				errs <- fmt.Errorf("Run(%s): %w", name, err)
			}
		})
	}
	c := &cluster{topo: topo, client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(func() {
		c.client.CloseIdleConnections()
		cancel()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * ShutdownTimeout):
			t.Error("services did not stop")
		}
		for {
			select {
			case err := <-errs:
				t.Error(err)
			default:
				return
			}
		}
	})
	return c
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// testLogger sends the services' log to the test log, and stops doing so
// when the test ends (t.Log after the end panics).
func testLogger(t *testing.T) *log.Logger {
	var mu sync.Mutex
	ended := false
	t.Cleanup(func() { mu.Lock(); ended = true; mu.Unlock() })
	return log.New(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			t.Log(strings.TrimSuffix(string(p), "\n"))
		}
		return len(p), nil
	}), "", 0)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// get sends GET path to the named service and returns status and body.
func (c *cluster) get(t *testing.T, service, path string) (int, string) {
	t.Helper()
	resp, err := c.client.Get("http://" + c.topo.Services[service].Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func (c *cluster) mustGet(t *testing.T, service, path string) string {
	t.Helper()
	code, body := c.get(t, service, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s %s: %d %s", service, path, code, body)
	}
	return body
}

// processCPU returns the CPU time (user + system) used by this process.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestHTTPChainDoesItsWork(t *testing.T) {
	var cnt counter
	c := startCluster(t, `
services:
  a:
    port: 1
    endpoints:
      /a: {work_us: 4000, calls: [{service: b, endpoint: /b}]}
  b:
    port: 2
    endpoints:
      /b: {work_us: 3000, calls: [{service: c, endpoint: /c}]}
  c:
    port: 3
    endpoints:
      /c: {work_us: 2000}
`, []string{"a", "b", "c"}, withHook(cnt.hook))

	body := c.mustGet(t, "a", "/a") // warm up connections
	if want := `{"service":"a","endpoint":"/a"}` + "\n"; body != want {
		t.Errorf("body = %q, want %q", body, want)
	}
	const n = 30
	before := processCPU(t)
	for range n {
		c.mustGet(t, "a", "/a")
	}
	used := processCPU(t) - before
	want := n * 9 * time.Millisecond
	t.Logf("%d requests used %v of CPU; work alone is %v", n, used, want)
	if used < want*7/10 || used > want*2 {
		t.Errorf("CPU used = %v, want about %v", used, want)
	}
	for _, k := range []string{"a /a", "b /b", "c /c"} {
		if got := cnt.get(k); got != n+1 {
			t.Errorf("%s served %d calls, want %d", k, got, n+1)
		}
	}
}

func TestHealthAndUnknownPath(t *testing.T) {
	var cnt counter
	c := startCluster(t, `
services:
  a:
    port: 1
    endpoints: {/a: {work_us: 1}}
`, []string{"a"}, withHook(cnt.hook))
	if body := c.mustGet(t, "a", HealthPath); body != "ok\n" {
		t.Errorf("health body = %q", body)
	}
	if code, _ := c.get(t, "a", "/nope"); code != http.StatusNotFound {
		t.Errorf("unknown path: status %d, want 404", code)
	}
	if got := cnt.get("a /a"); got != 0 {
		t.Errorf("health check or 404 did endpoint work (%d calls)", got)
	}
}

func TestGRPCHops(t *testing.T) {
	var cnt counter
	c := startCluster(t, `
services:
  front:
    port: 1
    endpoints:
      /f: {work_us: 100, calls: [{service: cart, endpoint: Get, repeat: 2}]}
  cart:
    port: 2
    protocol: grpc
    endpoints:
      Get: {work_us: 100, calls: [{service: stock, endpoint: Check}, {service: db, endpoint: /q}]}
      Put: {work_us: 100}
  stock:
    port: 3
    protocol: grpc
    endpoints:
      Check: {work_us: 100}
  db:
    port: 4
    endpoints:
      /q: {work_us: 100}
`, []string{"front", "cart", "stock", "db"}, withHook(cnt.hook))
	const n = 5
	for range n {
		c.mustGet(t, "front", "/f")
	}
	for k, want := range map[string]int{"front /f": n, "cart Get": 2 * n, "stock Check": 2 * n, "db /q": 2 * n, "cart Put": 0} {
		if got := cnt.get(k); got != want {
			t.Errorf("%s served %d calls, want %d", k, got, want)
		}
	}

	// A gRPC client with its own raw codec sees distinct methods of the
	// emulator service.
	conn, err := grpc.NewClient("passthrough:///"+c.topo.Services["cart"].Addr(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []byte
	if err := conn.Invoke(ctx, "/slowpoke.emu.Emulator/Put", &emptyMessage, &out); err != nil {
		t.Fatal(err)
	}
	if want := `{"service":"cart","endpoint":"Put"}` + "\n"; string(out) != want {
		t.Errorf("Put response = %q, want %q", out, want)
	}
	err = conn.Invoke(ctx, "/slowpoke.emu.Emulator/Nope", &emptyMessage, &out)
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("unknown method: %v, want Unimplemented", err)
	}
}

func TestDownstreamFailure(t *testing.T) {
	c := startCluster(t, `
services:
  front:
    port: 1
    endpoints:
      /http: {calls: [{service: deadhttp, endpoint: /x}]}
      /grpc: {calls: [{service: cart, endpoint: Get}]}
      /fan: {concurrent: true, calls: [{service: cart, endpoint: Ok}, {service: deadhttp, endpoint: /x}]}
  cart:
    port: 2
    protocol: grpc
    endpoints:
      Get: {calls: [{service: deadgrpc, endpoint: Get}]}
      Ok: {}
  deadhttp:
    port: 3
    endpoints: {/x: {}}
  deadgrpc:
    port: 4
    protocol: grpc
    endpoints: {Get: {}}
`, []string{"front", "cart"})
	for _, path := range []string{"/http", "/grpc", "/fan"} {
		code, body := c.get(t, "front", path)
		if code != http.StatusBadGateway || !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %s, want 502 with an error", path, code, body)
		}
	}
	// The gRPC service itself answers Unavailable.
	conn, err := grpc.NewClient("passthrough:///"+c.topo.Services["cart"].Addr(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = conn.Invoke(ctx, "/slowpoke.emu.Emulator/Get", &emptyMessage, &discardMessage)
	if status.Code(err) != codes.Unavailable {
		t.Errorf("cart Get: %v, want Unavailable", err)
	}
}

func TestConcurrentFanOut(t *testing.T) {
	// Every callee call waits until all four are in progress: if the calls
	// were made one after the other, the first would wait in vain.
	const calls = 4
	var (
		cnt     counter
		arrived atomic.Int32
		all     = make(chan struct{})
		late    atomic.Bool
	)
	hook := func(service, endpoint string) {
		cnt.hook(service, endpoint)
		if service == "front" {
			return
		}
		if arrived.Add(1) == calls {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			late.Store(true)
		}
	}
	c := startCluster(t, `
services:
  front:
    port: 1
    endpoints:
      /fan:
        concurrent: true
        calls:
          - {service: b, endpoint: /b}
          - {service: c, endpoint: C}
          - {service: d, endpoint: /d, repeat: 2}
  b:
    port: 2
    endpoints: {/b: {work_us: 100}}
  c:
    port: 3
    protocol: grpc
    endpoints: {C: {work_us: 100}}
  d:
    port: 4
    endpoints: {/d: {work_us: 100}}
`, []string{"front", "b", "c", "d"}, withHook(hook))
	c.mustGet(t, "front", "/fan")
	if late.Load() {
		t.Error("fan-out calls were not all in progress at once")
	}
	for k, want := range map[string]int{"front /fan": 1, "b /b": 1, "c C": 1, "d /d": 2} {
		if got := cnt.get(k); got != want {
			t.Errorf("%s served %d calls, want %d", k, got, want)
		}
	}
}

func TestProbability(t *testing.T) {
	var cnt counter
	c := startCluster(t, `
services:
  front:
    port: 1
    endpoints:
      /p: {calls: [{service: b, endpoint: /b, repeat: 4, probability: 0.5}]}
      /q: {concurrent: true, calls: [{service: b, endpoint: /c, probability: 0.5}]}
  b:
    port: 2
    endpoints: {/b: {}, /c: {}}
`, []string{"front", "b"}, withHook(cnt.hook))
	const n = 100
	for range n {
		c.mustGet(t, "front", "/p")
		c.mustGet(t, "front", "/q")
	}
	// Binomial(400, 0.5): mean 200, sd 10; Binomial(100, 0.5): mean 50, sd 5.
	if got := cnt.get("b /b"); got < 130 || got > 270 {
		t.Errorf("sequential: b /b served %d calls, want about 200", got)
	}
	if got := cnt.get("b /c"); got < 15 || got > 85 {
		t.Errorf("concurrent: b /c served %d calls, want about 50", got)
	}
}

func TestMutexWorkIsSerialized(t *testing.T) {
	// Both requests are inside the handler before either starts its mutex
	// work, so only the lock can keep them from overlapping.
	var (
		arrived atomic.Int32
		both    = make(chan struct{})
	)
	hook := func(string, string) {
		if arrived.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
		case <-time.After(10 * time.Second):
		}
	}
	c := startCluster(t, `
services:
  m:
    port: 1
    endpoints:
      /m: {mutex_work_us: 20000}
`, []string{"m"}, withHook(hook), WithWorkOffset(-time.Second)) // the offset must not touch mutex work
	c.mustGet(t, "m", HealthPath) // connection set-up out of the timing
	start := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			resp, err := c.client.Get("http://" + c.topo.Services["m"].Addr() + "/m")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	if wall := time.Since(start); wall < 39*time.Millisecond {
		t.Errorf("two requests with 20ms of mutex work took %v, want >= 40ms", wall)
	}
}

func TestWorkOffset(t *testing.T) {
	const n = 20
	measure := func(offset time.Duration) time.Duration {
		c := startCluster(t, `
services:
  w:
    port: 1
    endpoints: {/w: {work_us: 10000}}
`, []string{"w"}, WithWorkOffset(offset))
		c.mustGet(t, "w", "/w")
		before := processCPU(t)
		for range n {
			c.mustGet(t, "w", "/w")
		}
		return processCPU(t) - before
	}
	if got := measure(-8 * time.Millisecond); got > n*5*time.Millisecond {
		t.Errorf("offset -8ms: %d requests used %v of CPU, want about %v", n, got, n*2*time.Millisecond)
	}
	if got := measure(-time.Second); got > n*2*time.Millisecond {
		t.Errorf("offset -1s: %d requests used %v of CPU, want little (work floored at 0)", n, got)
	}
}

func TestRunErrors(t *testing.T) {
	topo, err := ParseTopology([]byte("services:\n  a:\n    port: 1\n    endpoints: {/a: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), topo, "b", WithLogger(nil))
	if err == nil || !strings.Contains(err.Error(), `unknown service "b"; services: a`) {
		t.Errorf("unknown service: %v", err)
	}
	bad := &Topology{Services: map[string]Service{"a": {Port: 0, Protocol: ProtocolHTTP, Endpoints: map[string]Endpoint{"/a": {}}}}}
	if err := Run(context.Background(), bad, "a", WithLogger(nil)); err == nil {
		t.Error("invalid topology accepted")
	}
	// The topology port is taken: Run reports the listen error.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	svc := topo.Services["a"]
	svc.Port = l.Addr().(*net.TCPAddr).Port
	topo.Services["a"] = svc
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Run(ctx, topo, "a", WithLogger(nil)); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("port in use: %v", err)
	}
}

// nullWriter is a ResponseWriter that keeps nothing.
type nullWriter struct{ h http.Header }

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nullWriter) WriteHeader(int)             {}

func TestServeEndpointDoesNotAllocate(t *testing.T) {
	topo, err := ParseTopology([]byte("services:\n  a:\n    port: 1\n    endpoints: {/a: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := newServer(topo, "a", &config{logger: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &nullWriter{h: http.Header{"Content-Type": nil}}
	if allocs := testing.AllocsPerRun(100, func() { s.serveEndpoint(w, req) }); allocs > 0 {
		t.Errorf("serving an endpoint allocates %v times per call", allocs)
	}
}

func TestContentionAndWait(t *testing.T) {
	// Two requests meet in the hook, so the second to start its work sees
	// the first in flight and pays contention_us once; a lone request
	// pays none. wait_us holds each request without CPU.
	var (
		arrived atomic.Int32
		both    = make(chan struct{})
	)
	hook := func(_, endpoint string) {
		if endpoint != "/c" {
			return
		}
		if arrived.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
		case <-time.After(10 * time.Second):
		}
	}
	c := startCluster(t, `
services:
  m:
    port: 1
    endpoints:
      /c: {contention_us: 40000, wait_us: 30000}
      /lone: {contention_us: 40000, wait_us: 30000}
`, []string{"m"}, withHook(hook))
	get := func(path string) {
		resp, err := c.client.Get("http://" + c.topo.Services["m"].Addr() + path)
		if err != nil {
			t.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c.mustGet(t, "m", HealthPath)
	cpu0, start := processCPU(t), time.Now()
	get("/lone")
	lone, loneCPU := time.Since(start), processCPU(t)-cpu0
	if lone < 29*time.Millisecond || loneCPU > 30*time.Millisecond {
		t.Errorf("a lone request took %v with %v of CPU, want >= 30ms waited and no contention", lone, loneCPU)
	}
	cpu0 = processCPU(t)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { get("/c") })
	}
	wg.Wait()
	if used := processCPU(t) - cpu0; used < 38*time.Millisecond {
		t.Errorf("two requests at once used %v of CPU, want >= 40ms of contention", used)
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// TestGRPCConns: a caller makes WithGRPCConns' number of connections to a
// gRPC callee (one by default) and uses every one of them.
func TestGRPCConns(t *testing.T) {
	for _, n := range []int{0, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			topo, err := ParseTopology([]byte(`
services:
  front:
    port: 1
    endpoints:
      /f: {calls: [{service: cart, endpoint: Get}]}
  cart:
    port: 2
    protocol: grpc
    endpoints:
      Get: {}
`))
			if err != nil {
				t.Fatal(err)
			}
			lns := map[string]net.Listener{}
			for _, name := range []string{"front", "cart"} {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				svc := topo.Services[name]
				svc.Port = l.Addr().(*net.TCPAddr).Port
				topo.Services[name] = svc
				lns[name] = l
			}
			cart := &countingListener{Listener: lns["cart"]}
			lns["cart"] = cart
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for name, l := range lns {
				opts := []Option{WithListener(l), WithLogger(testLogger(t)), WithPlain(true)}
				if n > 0 {
					opts = append(opts, WithGRPCConns(n))
				}
				wg.Go(func() {
					if err := Run(ctx, topo, name, opts...); err != nil {
						t.Errorf("Run(%s): %v", name, err)
					}
				})
			}
			defer func() { cancel(); wg.Wait() }()
			c := &cluster{topo: topo, client: &http.Client{Timeout: 30 * time.Second}}
			defer c.client.CloseIdleConnections()
			for range 2*n + 1 {
				c.mustGet(t, "front", "/f")
			}
			if got, want := cart.n.Load(), int64(max(1, n)); got != want {
				t.Errorf("cart accepted %d connections from front, want %d", got, want)
			}
		})
	}
}
