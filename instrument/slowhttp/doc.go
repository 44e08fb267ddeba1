// Package slowhttp instruments net/http servers and clients for slowpoke.
//
// Wrap the server's handler with NewHandler and the client's transport with
// NewTransport. Under a slowpoke controller the wrappers count calls per
// endpoint and calls to each downstream host; otherwise they return their
// argument unchanged and cost nothing.
package slowhttp
