package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/slowpoke-dev/slowpoke/instrument/slowhttp"
	"github.com/slowpoke-dev/slowpoke/internal/cpuwork"
)

// ShutdownTimeout bounds the graceful shutdown when Run's context ends:
// in-flight requests get this long to finish before connections are closed.
const ShutdownTimeout = 3 * time.Second

// maxLoggedErrors is how many downstream failures are logged before the
// rest are only counted; a dead callee under load would flood the log.
const maxLoggedErrors = 10

// Option configures Run.
type Option func(*config)

type config struct {
	plain    bool
	offset   time.Duration
	listener net.Listener
	logger   *log.Logger
	hook     func(service, endpoint string)
	tracing  Tracing
	// grpcConns is how many connections are made to each gRPC callee.
	grpcConns int
}

// WithPlain runs the service without slowpoke's instrumentation wrappers.
func WithPlain(plain bool) Option { return func(c *config) { c.plain = plain } }

// WithWorkOffset adds d (which may be negative) to the work_us of every
// endpoint of the service; the result is floored at 0. mutex_work_us is not
// changed.
func WithWorkOffset(d time.Duration) Option { return func(c *config) { c.offset = d } }

// WithGRPCConns makes n connections (at least 1, the default) to every
// gRPC callee instead of one, and spreads the calls over them in turn. A
// callee reached at a Kubernetes Service's ClusterIP gets one replica per
// connection (kube-proxy balances connections, not calls), so one
// connection would send every call to one replica.
func WithGRPCConns(n int) Option { return func(c *config) { c.grpcConns = n } }

// WithListener makes the service serve on l instead of listening on its
// topology address. Run closes l.
func WithListener(l net.Listener) Option { return func(c *config) { c.listener = l } }

// WithLogger sets where the ready line and errors are written; the default
// is standard error. A nil logger discards them.
func WithLogger(l *log.Logger) Option {
	return func(c *config) {
		if l == nil {
			l = log.New(io.Discard, "", 0)
		}
		c.logger = l
	}
}

// withHook makes every served call first call fn; tests use it to count and
// synchronise calls.
func withHook(fn func(service, endpoint string)) Option { return func(c *config) { c.hook = fn } }

// Run serves the named service of t until ctx ends, then shuts down
// gracefully (at most ShutdownTimeout) and returns nil. Once listening it
// logs "slowpoke-emu: NAME listening on ADDR (PROTOCOL)".
func Run(ctx context.Context, t *Topology, service string, opts ...Option) (err error) {
	cfg := config{logger: log.New(os.Stderr, "", 0)}
	for _, o := range opts {
		o(&cfg)
	}
	ln := cfg.listener
	defer func() {
		if ln != nil && err != nil {
			ln.Close()
		}
	}()
	if err := t.Validate(); err != nil {
		return err
	}
	svc, ok := t.Services[service]
	if !ok {
		return fmt.Errorf("unknown service %q; services: %s", service, strings.Join(sortedKeys(t.Services), ", "))
	}
	s, err := newServer(t, service, &cfg)
	if err != nil {
		return err
	}
	defer s.close()
	if ln == nil {
		if ln, err = net.Listen("tcp", svc.Addr()); err != nil {
			return err
		}
	}
	switch svc.Protocol {
	case ProtocolGRPC:
		return s.serveGRPC(ctx, ln)
	default:
		return s.serveHTTP(ctx, ln)
	}
}

// server is one running service.
type server struct {
	name      string
	protocol  string
	plain     bool
	log       *log.Logger
	hook      func(service, endpoint string)
	tracing   Tracing              // nil: no spans exported
	endpoints map[string]*endpoint // by HTTP path or gRPC method name

	mu    sync.Mutex        // the service-wide lock of mutex_work_us
	calls cpuwork.Contended // calls in handle: wait_us, work_us and contention_us

	httpClient *http.Client
	grpcConns  []*grpc.ClientConn
	errCount   atomic.Int64
}

type endpoint struct {
	name       string
	work       time.Duration
	mutexWork  time.Duration
	contention time.Duration
	wait       time.Duration
	concurrent bool
	calls      []call
	body       []byte // the response
}

type call struct {
	service, endpoint string
	repeat            int
	probability       float64
	// Exactly one of url (HTTP callee) and conns (gRPC callee) is set.
	url    string
	conns  *grpcConns
	method string // full gRPC method name
}

// grpcConns are the connections to one gRPC callee, used in turn.
type grpcConns struct {
	conns []*grpc.ClientConn
	next  atomic.Uint64
}

func (g *grpcConns) pick() *grpc.ClientConn {
	if len(g.conns) == 1 {
		return g.conns[0]
	}
	return g.conns[(g.next.Add(1)-1)%uint64(len(g.conns))]
}

func us(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Microsecond))) }

func newServer(t *Topology, name string, cfg *config) (*server, error) {
	svc := t.Services[name]
	s := &server{
		name:      name,
		protocol:  svc.Protocol,
		plain:     cfg.plain,
		log:       cfg.logger,
		hook:      cfg.hook,
		tracing:   cfg.tracing,
		endpoints: make(map[string]*endpoint, len(svc.Endpoints)),
	}
	conns := map[string]*grpcConns{}
	for epName, e := range svc.Endpoints {
		body, err := json.Marshal(struct {
			Service  string `json:"service"`
			Endpoint string `json:"endpoint"`
		}{name, epName})
		if err != nil {
			return nil, err
		}
		ep := &endpoint{
			name:       epName,
			work:       max(0, us(e.WorkUS)+cfg.offset),
			mutexWork:  us(e.MutexWorkUS),
			contention: us(e.ContentionUS),
			wait:       us(e.WaitUS),
			concurrent: e.Concurrent,
			body:       append(body, '\n'),
		}
		for _, c := range e.Calls {
			callee := t.Services[c.Service]
			cl := call{service: c.Service, endpoint: c.Endpoint, repeat: c.Repeat, probability: c.Probability}
			switch callee.Protocol {
			case ProtocolGRPC:
				g := conns[c.Service]
				if g == nil {
					g = &grpcConns{}
					for range max(1, cfg.grpcConns) {
						conn, err := s.dialGRPC(callee.Addr())
						if err != nil {
							s.close()
							return nil, fmt.Errorf("connect to service %q: %w", c.Service, err)
						}
						g.conns = append(g.conns, conn)
						s.grpcConns = append(s.grpcConns, conn)
					}
					conns[c.Service] = g
				}
				cl.conns = g
				cl.method = "/" + GRPCService + "/" + c.Endpoint
			default:
				cl.url = "http://" + callee.Addr() + c.Endpoint
				if s.httpClient == nil {
					s.httpClient = s.newHTTPClient()
				}
			}
			ep.calls = append(ep.calls, cl)
		}
		s.endpoints[epName] = ep
	}
	return s, nil
}

// close releases the downstream clients.
func (s *server) close() {
	for _, c := range s.grpcConns {
		c.Close()
	}
	if s.httpClient != nil {
		s.httpClient.CloseIdleConnections()
	}
}

func (s *server) newHTTPClient() *http.Client {
	var rt http.RoundTripper = &http.Transport{
		Proxy: nil, // never route loopback calls through a proxy from the environment
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        0, // no global limit
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	if !s.plain {
		rt = slowhttp.NewTransport(rt)
	}
	if s.tracing != nil {
		rt = s.tracing.Transport(rt)
	}
	// No client timeout: a callee paused by the controller is slow, not dead.
	// Calls end with the incoming request's context.
	return &http.Client{Transport: rt}
}

// handle does the work of one call to ep and its downstream calls.
func (s *server) handle(ctx context.Context, ep *endpoint) error {
	if s.hook != nil {
		s.hook(s.name, ep.name)
	}
	if err := s.calls.Do(ctx, ep.wait, ep.work, ep.contention); err != nil {
		return err
	}
	defer s.calls.Done()
	if ep.mutexWork > 0 {
		s.mu.Lock()
		cpuwork.Spin(ep.mutexWork)
		s.mu.Unlock()
	}
	if len(ep.calls) == 0 {
		return nil
	}
	if !ep.concurrent {
		for i := range ep.calls {
			c := &ep.calls[i]
			for range c.repeat {
				if c.probability < 1 && rand.Float64() >= c.probability {
					continue
				}
				if err := s.invoke(ctx, c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for i := range ep.calls {
		c := &ep.calls[i]
		for range c.repeat {
			if c.probability < 1 && rand.Float64() >= c.probability {
				continue
			}
			wg.Go(func() {
				if err := s.invoke(ctx, c); err != nil {
					errOnce.Do(func() { firstErr = err })
				}
			})
		}
	}
	wg.Wait()
	return firstErr
}

func (s *server) invoke(ctx context.Context, c *call) error {
	var err error
	if c.conns != nil {
		err = c.conns.pick().Invoke(ctx, c.method, &emptyMessage, &discardMessage)
	} else {
		err = s.httpCall(ctx, c.url)
	}
	if err != nil {
		err = fmt.Errorf("call to service %q endpoint %q: %w", c.service, c.endpoint, err)
		if n := s.errCount.Add(1); n <= maxLoggedErrors {
			s.log.Printf("slowpoke-emu: %s: %v", s.name, err)
			if n == maxLoggedErrors {
				s.log.Printf("slowpoke-emu: %s: further downstream errors are not logged", s.name)
			}
		}
	}
	return err
}

func (s *server) httpCall(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := s.httpClient.Do(req)
	if err != nil {
		return err
	}
	// Drain so that the connection is reused.
	_, copyErr := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return copyErr
}

// Response headers, shared read-only by all responses to avoid allocating
// them per request.
var (
	jsonContentType = []string{"application/json"}
	healthBody      = []byte("ok\n")
	textContentType = []string{"text/plain; charset=utf-8"}
)

func (s *server) serveHTTP(ctx context.Context, ln net.Listener) error {
	var inner http.Handler = http.HandlerFunc(s.serveEndpoint)
	if !s.plain {
		inner = slowhttp.NewHandler(inner, slowhttp.WithEndpointName(s.endpointName))
	}
	if s.tracing != nil {
		inner = s.tracing.Handler(inner)
	}
	// The health check bypasses the instrumentation: it must not count as a
	// call to the service.
	outer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == HealthPath {
			w.Header()["Content-Type"] = textContentType
			w.Write(healthBody)
			return
		}
		inner.ServeHTTP(w, r)
	})
	srv := &http.Server{
		Handler:           outer,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          s.log,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Printf("slowpoke-emu: %s listening on %s (%s)", s.name, ln.Addr(), s.protocol)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Printf("slowpoke-emu: %s: graceful shutdown: %v; closing connections", s.name, err)
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// endpointName names a request for the instrumentation: the endpoint path,
// or one shared name for paths that are not endpoints.
func (s *server) endpointName(r *http.Request) string {
	if ep, ok := s.endpoints[r.URL.Path]; ok {
		return ep.name
	}
	return "(unknown)"
}

func (s *server) serveEndpoint(w http.ResponseWriter, r *http.Request) {
	ep, ok := s.endpoints[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if err := s.handle(r.Context(), ep); err != nil {
		b, _ := json.Marshal(struct {
			Error string `json:"error"`
		}{err.Error()})
		w.Header()["Content-Type"] = jsonContentType
		w.WriteHeader(http.StatusBadGateway)
		w.Write(append(b, '\n'))
		return
	}
	w.Header()["Content-Type"] = jsonContentType
	w.Write(ep.body)
}
