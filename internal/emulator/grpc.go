package emulator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/slowpoke-dev/slowpoke/instrument/slowgrpc"
)

// rawCodec moves messages as opaque bytes, so the emulator needs no
// generated protobuf code. It is forced on the emulator's own servers and
// calls only (never registered globally).
//
// Marshal accepts *[]byte; Unmarshal accepts *[]byte (the bytes are copied)
// or *discard (the bytes are dropped).
type rawCodec struct{}

// discard is a message whose content is ignored.
type discard struct{}

var (
	emptyMessage   []byte
	discardMessage discard
)

// Name is used as the content-subtype: the wire says application/grpc+proto
// like any ordinary gRPC client.
func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *[]byte:
		if len(*m) == 0 {
			return nil, nil
		}
		return mem.BufferSlice{mem.SliceBuffer(*m)}, nil
	default:
		return nil, fmt.Errorf("emulator: cannot marshal %T", v)
	}
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *discard:
		return nil
	case *[]byte:
		*m = data.Materialize()
		return nil
	default:
		return fmt.Errorf("emulator: cannot unmarshal into %T", v)
	}
}

func (s *server) dialGRPC(addr string) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})),
	}
	if !s.plain {
		opts = append(opts, grpc.WithStatsHandler(slowgrpc.NewClientHandler()))
	}
	if s.tracing != nil {
		opts = append(opts, s.tracing.DialOptions()...)
	}
	// passthrough: the address is dialled as is, with no resolver in between.
	return grpc.NewClient("passthrough:///"+addr, opts...)
}

// serviceDesc builds the gRPC service with one unary method per endpoint.
func (s *server) serviceDesc() *grpc.ServiceDesc {
	desc := &grpc.ServiceDesc{
		ServiceName: GRPCService,
		HandlerType: (*any)(nil),
	}
	for _, name := range sortedKeys(s.endpoints) {
		ep := s.endpoints[name]
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: name,
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				if err := dec(&discardMessage); err != nil {
					return nil, err
				}
				if err := s.handle(ctx, ep); err != nil {
					return nil, status.Error(codes.Unavailable, err.Error())
				}
				return &ep.body, nil
			},
		})
	}
	return desc
}

func (s *server) serveGRPC(ctx context.Context, ln net.Listener) error {
	opts := []grpc.ServerOption{grpc.ForceServerCodecV2(rawCodec{})}
	if !s.plain {
		opts = append(opts, grpc.StatsHandler(slowgrpc.NewServerHandler()))
	}
	if s.tracing != nil {
		opts = append(opts, s.tracing.ServerOptions()...)
	}
	gs := grpc.NewServer(opts...)
	gs.RegisterService(s.serviceDesc(), s)
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(ln) }()
	s.log.Printf("slowpoke-emu: %s listening on %s (%s)", s.name, ln.Addr(), s.protocol)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(ShutdownTimeout):
		s.log.Printf("slowpoke-emu: %s: graceful shutdown timed out; closing connections", s.name)
		gs.Stop()
		<-stopped
	}
	// A stop that comes before Serve has begun makes Serve return
	// ErrServerStopped: that is a clean end too.
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}
