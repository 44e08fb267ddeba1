// Package spans receives the OpenTelemetry traces that the services of a
// run export (OTLP over HTTP, protobuf or JSON, and over gRPC, on one
// port) and counts, per service, the SERVER spans that started in a window
// of time, and which service called which. A service in any language that
// exports spans, through its SDK or its language's zero-code agent, thus
// gives slowpoke its calls per request and its place in the call graph
// without any slowpoke code.
//
// Memory is bounded: counts are kept per service in coarse time buckets
// for a limited span of time, the span identities that link a caller to a
// callee are kept in two generations of bounded size, and at most
// MaxServices distinct service names are tracked. Payloads over the size
// limit, of an unknown content type or that do not decode are refused and
// counted, never a crash.
package spans
