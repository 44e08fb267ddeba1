// Package instrument is the home of slowpoke's drop-in instrumentation.
//
// Services import one of its sub-packages and wrap what they already have:
//
//   - slowhttp.NewHandler wraps an http.Handler (usually the ServeMux),
//   - slowhttp.NewTransport wraps an http.RoundTripper for outgoing calls,
//   - slowgrpc.NewServerHandler and slowgrpc.NewClientHandler are gRPC
//     stats.Handlers for servers and clients.
//
// Handler signatures never change. When the process was not started by a
// slowpoke controller, the wrappers return what they were given (HTTP) or do
// nothing (gRPC), so the instrumentation can stay in production builds.
package instrument
