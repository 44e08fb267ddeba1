package svc

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/slowpoke-dev/slowpoke/instrument/slowgrpc"
)

// JSONCodec is the gRPC codec of the applications: messages are plain Go
// structs marshalled as JSON, so no generated protobuf code is needed. It is
// registered under the content-subtype "json" (application/grpc+json);
// servers pick it by the subtype of each call, clients from DialGRPC ask for
// it.
type JSONCodec struct{}

// Name implements encoding.Codec.
func (JSONCodec) Name() string { return "json" }

// Marshal implements encoding.Codec.
func (JSONCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal implements encoding.Codec.
func (JSONCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func init() { encoding.RegisterCodec(JSONCodec{}) }

// UnaryMethod builds the descriptor of a unary method, the part protoc would
// generate: service is the full service name ("boutique.CartService") and fn
// the method expression of the server interface (CartServer.AddItem).
func UnaryMethod[S, Req, Resp any](service, method string, fn func(S, context.Context, *Req) (*Resp, error)) grpc.MethodDesc {
	full := "/" + service + "/" + method
	return grpc.MethodDesc{
		MethodName: method,
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(Req)
			if err := dec(in); err != nil {
				return nil, err
			}
			if interceptor == nil {
				return fn(srv.(S), ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: full}
			return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return fn(srv.(S), ctx, req.(*Req))
			})
		},
	}
}

// NewGRPCServer returns a gRPC server instrumented for slowpoke, doing work
// once per incoming call before the method runs, and serving the standard
// health service. Register the application's services on it, then pass it to
// GRPCService.
func NewGRPCServer(work *PerCall) *grpc.Server {
	s := grpc.NewServer(
		grpc.StatsHandler(slowgrpc.NewServerHandler()),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := work.do(ctx); err != nil {
				return nil, status.FromContextError(err).Err()
			}
			defer work.done()
			return h(ctx, req)
		}),
	)
	healthpb.RegisterHealthServer(s, health.NewServer())
	return s
}

// GRPCService adapts s to Server. closers run at Shutdown, after the server
// has stopped.
func GRPCService(s *grpc.Server, closers ...func()) Server {
	return &grpcServer{srv: s, closers: closers}
}

type grpcServer struct {
	srv     *grpc.Server
	closers []func()
}

// Serve serves until Shutdown. A Shutdown that comes before Serve has
// started makes Serve return ErrServerStopped: that is a clean stop too.
func (s *grpcServer) Serve(l net.Listener) error {
	if err := s.srv.Serve(l); !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

func (s *grpcServer) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		s.srv.Stop()
		<-done
		err = ctx.Err()
	}
	for _, c := range s.closers {
		c()
	}
	return err
}

// DialGRPC returns a client connection to the gRPC service at addr,
// instrumented for slowpoke and using JSONCodec. It connects lazily.
func DialGRPC(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(slowgrpc.NewClientHandler()),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(JSONCodec{}.Name())),
	)
}

// HTTPStatusFromGRPC maps the status of a gRPC error to an HTTP status, for
// HTTP front ends of gRPC services; other errors map as StatusOf does.
func HTTPStatusFromGRPC(err error) error {
	st, ok := status.FromError(err)
	if !ok || errors.Is(err, context.Canceled) {
		return err
	}
	code := http.StatusInternalServerError
	switch st.Code() {
	case codes.InvalidArgument, codes.OutOfRange:
		code = http.StatusBadRequest
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted:
		code = http.StatusConflict
	case codes.PermissionDenied:
		code = http.StatusForbidden
	case codes.Unauthenticated:
		code = http.StatusUnauthorized
	case codes.ResourceExhausted:
		code = http.StatusTooManyRequests
	case codes.Unavailable:
		code = http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		code = http.StatusGatewayTimeout
	case codes.Canceled:
		code = 499
	}
	return &StatusError{Code: code, Msg: st.Message()}
}
