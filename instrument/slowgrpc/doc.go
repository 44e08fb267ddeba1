// Package slowgrpc instruments gRPC servers and clients for slowpoke with
// stats.Handlers, the same way otelgrpc does:
//
//	grpc.NewServer(grpc.StatsHandler(slowgrpc.NewServerHandler()))
//	grpc.NewClient(addr, grpc.WithStatsHandler(slowgrpc.NewClientHandler()), ...)
//
// Under a slowpoke controller the server handler counts calls per full
// method name and the client handler records calls per remote address;
// when slowpoke sets a pool limit, the server handler holds each RPC at its
// start (on the RPC's own goroutine, before the method runs) until fewer
// than that many run. Otherwise both do nothing.
package slowgrpc
