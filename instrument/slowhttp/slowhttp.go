package slowhttp

import (
	"net"
	"net/http"
	"net/url"

	"github.com/slowpoke-dev/slowpoke/internal/inservice"
)

// Option configures NewHandler and NewTransport.
type Option func(*config)

type config struct {
	link     *inservice.Link
	endpoint func(*http.Request) string
}

// WithEndpointName sets how an incoming request is named in per-endpoint
// counts. The default uses the ServeMux pattern when the wrapped handler is
// a *http.ServeMux, and "METHOD /path" otherwise. Keep the number of
// distinct names small: beyond 256 they are folded together under
// "(other)", as is a name longer than 200 bytes.
func WithEndpointName(fn func(*http.Request) string) Option {
	return func(c *config) { c.endpoint = fn }
}

// withLink makes the wrappers report to a instead of the process-wide
// link; tests use it.
func withLink(a *inservice.Link) Option {
	return func(c *config) { c.link = a }
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	if c.link == nil {
		c.link = inservice.Default()
	}
	return c
}

// NewHandler wraps h so that every request it serves is counted. Without a
// controller it returns h itself.
func NewHandler(h http.Handler, opts ...Option) http.Handler {
	c := newConfig(opts)
	if c.link == nil {
		return h
	}
	if c.endpoint == nil {
		c.endpoint = defaultEndpoint(h)
	}
	return &handler{next: h, link: c.link, endpoint: c.endpoint}
}

type handler struct {
	next     http.Handler
	link     *inservice.Link
	endpoint func(*http.Request) string
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := h.link.ServerStart(r.Context(), h.endpoint(r))
	if err != nil {
		// The client gave up while the call waited for admission under a
		// pool limit: it is not served.
		http.Error(w, "slowpoke: request ended while queued for admission", http.StatusServiceUnavailable)
		return
	}
	defer h.link.ServerEnd(c)
	req := h.link.BeginRequest(r.Header.Get(inservice.HeaderRequest), r.Header.Get(inservice.HeaderDelay))
	if req == nil {
		h.next.ServeHTTP(w, r)
		return
	}
	// A latency what-if is under way: calls made for this request carry
	// its id and counter, and the response waits for its branch to catch
	// up (docs/latency.md).
	lw := &latencyWriter{ResponseWriter: w, req: req}
	h.next.ServeHTTP(lw, r.WithContext(inservice.ContextWithRequest(r.Context(), req)))
	lw.catchUp()
}

func defaultEndpoint(h http.Handler) func(*http.Request) string {
	if mux, ok := h.(*http.ServeMux); ok {
		return func(r *http.Request) string {
			if _, pattern := mux.Handler(r); pattern != "" {
				return pattern
			}
			return r.Method + " " + r.URL.Path
		}
	}
	return func(r *http.Request) string { return r.Method + " " + r.URL.Path }
}

// NewTransport wraps base (http.DefaultTransport when nil) so that every
// outgoing request is recorded as a call to its host. Without a controller it
// returns base itself.
func NewTransport(base http.RoundTripper, opts ...Option) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	c := newConfig(opts)
	if c.link == nil {
		return base
	}
	return &transport{next: base, link: c.link}
}

type transport struct {
	next http.RoundTripper
	link *inservice.Link
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.link.ClientCall(hostPort(r.URL))
	if !t.link.LatencyActive() {
		return t.next.RoundTrip(r)
	}
	req := inservice.RequestFromContext(r.Context())
	if req == nil {
		return t.next.RoundTrip(r)
	}
	// A latency what-if: the call carries the request's id and this
	// call's delay counter, and takes the callee's counter from its reply.
	// The request is cloned, as a RoundTripper must not change it.
	r = r.Clone(r.Context())
	r.Header.Set(inservice.HeaderRequest, req.ID())
	r.Header.Set(inservice.HeaderDelay, req.Local())
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		req.Adopt(resp.Header.Get(inservice.HeaderDelay))
	}
	return resp, err
}

// hostPort is the address a request goes to, as host:port: a URL without
// a port (http://cart/x, as services call each other on Kubernetes) gets
// its scheme's.
func hostPort(u *url.URL) string {
	if u.Port() != "" || u.Host == "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
