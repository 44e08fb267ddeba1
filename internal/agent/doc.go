// Package agent is the in-service half of slowpoke's instrumentation: it
// counts requests per endpoint and calls to downstream services, and reports
// them to the controller that started the service over a local Unix socket.
//
// The controller passes the socket path in the SLOWPOKE_AGENT_SOCKET
// environment variable. Without it, Default returns nil and the public
// wrappers in instrument/slowhttp and instrument/slowgrpc do nothing.
//
// The protocol on the socket is newline-delimited JSON (see Message). The
// request path only touches atomics and a lock-free map; all I/O happens on
// the agent's own goroutines.
package agent
