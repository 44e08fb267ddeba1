// Package load is slowpoke's HTTP load generator.
//
// It drives a workload mix (a weighted set of [Request] types) against one or
// more HTTP/1.1 endpoints and reports throughput and latency measured over a
// well-defined measurement window. Two load models are provided:
//
//   - [RunClosed] is a closed loop: exactly N workers, each owning exactly one
//     keep-alive TCP connection, each sending its next request as soon as the
//     previous response has been read to the end. Throughput is whatever the
//     system under test sustains at concurrency N.
//   - [RunOpen] is an open loop: requests are issued on a fixed schedule
//     (request k is due at start + k/rate) regardless of how fast responses
//     come back, and latency is measured from the intended send time, so it
//     does not suffer from coordinated omission.
//
// # Timeline and measurement window
//
// Every run consists of a warm-up phase ([WithWarmup], default 1s) followed by
// the measurement window ([WithDuration], default 5s). When the warm-up has
// elapsed, the onStart hook of [WithWindowHooks] is called synchronously and
// the window opens at the instant it returns. When the configured duration
// has elapsed, the window closes at the instant the run's control goroutine
// observes it, and the onEnd hook is called immediately afterwards, before
// outstanding requests are cancelled. Server-side counters read by the hooks
// are therefore aligned with the client-side window up to the requests in
// flight at its edges, whatever the scheduling delays of the control
// goroutine. [Result.Window] is the actual window length: the configured
// duration plus that wake-up delay (typically well under a few milliseconds).
//
// A response is attributed to the window if and only if it completes (its body
// has been read to the end, or the request failed) at an instant inside
// [windowStart, windowEnd). The decision is exact: completions whose
// attribution is not yet known when they happen (because they race with the
// publication of a window bound) are held back and resolved once the bound is
// known. Responses completing during warm-up or after the window are ignored;
// requests still outstanding when the window closes are cancelled and not
// counted.
//
// Only 2xx responses count as Completed and contribute to latency statistics.
// Non-2xx responses and transport errors (including per-request timeouts,
// [WithTimeout]) are counted separately, overall and per request type.
// Redirects are not followed: a 3xx response counts as non-2xx.
//
// # Overhead
//
// The hot path takes no locks for the default configuration: each closed-loop
// worker has its own counters and HdrHistograms, merged when the run ends.
// Request objects are reused between sends and a single timer per worker
// enforces the per-request timeout. With more than 64 connections, or in open
// loop mode, workers share a bounded set of recorders (to bound memory) and
// take an uncontended-in-practice mutex per response.
//
// In open loop mode the dispatcher sleeps with sub-millisecond precision on
// Linux (the Go runtime's timers can fire up to a millisecond late), and
// [Result.SendLag] reports how late requests actually left compared with
// their schedule.
//
// Proxies from the environment (HTTP_PROXY and friends) are deliberately not
// used, HTTP/2 is never negotiated and transparent compression is disabled.
package load
