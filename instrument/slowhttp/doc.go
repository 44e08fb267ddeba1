// Package slowhttp instruments net/http servers and clients for slowpoke.
//
// Wrap the server's handler with NewHandler and the client's transport with
// NewTransport. Under a slowpoke controller the wrappers count calls per
// endpoint and calls to each downstream host, and when slowpoke sets a pool
// limit (slowpoke pools, or a service's pool in the spec) the handler runs
// at most that many requests at once, queueing the rest first in first
// out; otherwise they return their argument unchanged and cost nothing.
package slowhttp
