package slowgrpc

import (
	"context"
	"net"
	"sync/atomic"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"

	"github.com/slowpoke-dev/slowpoke/internal/inservice"
)

// Option configures the handlers. None is offered to users yet: the
// handlers need no configuration, and the variadic parameter lets options
// come later without changing their signatures.
type Option func(*config)

type config struct{ link *inservice.Link }

// withLink makes a handler report to a instead of the process-wide link;
// tests use it.
func withLink(a *inservice.Link) Option { return func(c *config) { c.link = a } }

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

type callKey struct{}

// rpc is what a server RPC carries from TagRPC to its End.
type rpc struct {
	method string
	call   inservice.Call
	req    *inservice.Request // the call's part in a latency what-if, or nil
	// caughtUp is set once the reply has waited for its branch: a
	// streaming reply waits before its first message only.
	caughtUp atomic.Bool
}

// NewServerHandler returns a stats.Handler that counts incoming RPCs per
// full method name.
func NewServerHandler(opts ...Option) stats.Handler {
	return &serverHandler{link: newConfig(opts).link}
}

type serverHandler struct{ link *inservice.Link }

func (h *serverHandler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if h.link == nil {
		return ctx
	}
	r := &rpc{method: info.FullMethodName}
	if h.link.LatencyActive() {
		// A latency what-if: the calls the method makes (with the
		// context derived from this one) carry the request's id and
		// counter.
		md, _ := metadata.FromIncomingContext(ctx)
		if r.req = h.link.NewRequest(first(md, inservice.MDRequest), first(md, inservice.MDDelay)); r.req != nil {
			ctx = inservice.ContextWithRequest(ctx, r.req)
		}
	}
	return context.WithValue(ctx, callKey{}, r)
}

// first returns md's first value for key, or "".
func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h *serverHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if h.link == nil {
		return
	}
	r, _ := ctx.Value(callKey{}).(*rpc)
	if r == nil {
		return
	}
	switch s.(type) {
	case *stats.Begin:
		// Under a pool limit, Begin waits for admission: gRPC calls it
		// on the RPC's own goroutine before the method handler runs.
		// It waits even if the client cancels, so as never to run a
		// handler beyond the limit; the handler then sees the
		// cancelled context and ends quickly.
		r.call, _ = h.link.ServerStart(context.Background(), r.method)
		r.req.Start()
	case *stats.OutPayload:
		// Under a latency what-if the reply waits here for its branch to
		// catch up: for a unary RPC the client's call ends with the
		// trailer, which gRPC sends after this returns. A stats handler
		// cannot add to the trailer, so the caller reads the global
		// counter instead of receiving the call's (docs/latency.md).
		if !r.caughtUp.Swap(true) {
			r.req.CatchUp()
		}
	case *stats.End:
		h.link.ServerEnd(r.call)
	}
}

func (h *serverHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (h *serverHandler) HandleConn(context.Context, stats.ConnStats) {}

// NewClientHandler returns a stats.Handler that records each outgoing RPC as
// a call to the remote address it was sent to.
func NewClientHandler(opts ...Option) stats.Handler {
	return &clientHandler{link: newConfig(opts).link}
}

type clientHandler struct{ link *inservice.Link }

func (h *clientHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	if h.link == nil {
		return ctx
	}
	// Under a latency what-if, a call made for a served request carries
	// its id and the caller's delay counter.
	if !h.link.LatencyActive() {
		return ctx
	}
	if req := inservice.RequestFromContext(ctx); req != nil {
		// Set, not appended: a service that forwards its incoming
		// metadata would otherwise pass on its caller's values, which
		// the callee, reading the first, would take for this call's.
		md, _ := metadata.FromOutgoingContext(ctx)
		md = md.Copy()
		md.Set(inservice.MDRequest, req.ID())
		md.Set(inservice.MDDelay, req.Local())
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	return ctx
}

func (h *clientHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if h.link == nil {
		return
	}
	if _, ok := s.(*stats.End); ok {
		if h.link.LatencyActive() {
			inservice.RequestFromContext(ctx).AdoptGlobal()
		}
		return
	}
	// OutHeader is sent once per RPC and is the first event that knows the
	// remote address.
	if oh, ok := s.(*stats.OutHeader); ok && oh.Client {
		if addr := calleeAddr(oh); addr != "" {
			h.link.ClientCall(addr)
		}
	}
}

func (h *clientHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (h *clientHandler) HandleConn(context.Context, stats.ConnStats) {}

// calleeAddr is where an RPC goes, as host:port: its authority, the name
// the client dialled (cart:50051, as services call each other on
// Kubernetes, where the remote address is a cluster IP any service could
// share a port with), with the remote address's port if it has none; the
// remote address where there is no authority.
func calleeAddr(oh *stats.OutHeader) string {
	remote := ""
	if oh.RemoteAddr != nil {
		remote = oh.RemoteAddr.String()
	}
	if oh.Authority == "" {
		return remote
	}
	if _, _, err := net.SplitHostPort(oh.Authority); err == nil {
		return oh.Authority
	}
	if _, port, err := net.SplitHostPort(remote); err == nil {
		return net.JoinHostPort(oh.Authority, port)
	}
	return oh.Authority
}
