// Package inservice is the in-service half of slowpoke's instrumentation,
// linked into every instrumented service: its Link counts requests per
// endpoint and calls to downstream services, admits calls to a pool, takes
// part in a latency what-if, and reports to the controller that started the
// service over a local Unix socket, the instrumentation socket.
//
// The controller passes the socket path in the SLOWPOKE_AGENT_SOCKET
// environment variable. Without it, Default returns nil and the public
// wrappers in instrument/slowhttp and instrument/slowgrpc do nothing.
//
// The protocol on the socket is newline-delimited JSON (see Message). The
// request path only touches atomics and a lock-free map; all I/O happens on
// the link's own goroutines.
//
// The package was called agent; "agent" now means only the node agent
// that freezes pods on Kubernetes (internal/nodeagent). The environment
// variable and SocketDirKind keep their values: services in other
// languages read the one, and package stale finds the other.
package inservice
