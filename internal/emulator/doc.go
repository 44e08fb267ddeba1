// Package emulator runs one service of a synthetic microservice application
// described by a topology file.
//
// A topology names every service of the application, the port and protocol
// (HTTP or gRPC) it serves, and for each of its endpoints the CPU work done
// per call and the downstream calls made. One emulator process runs one
// service; the cmd/slowpoke-emu binary is a thin command line over Run.
//
// All emulated work is CPU time burnt with cpuwork.Spin, so that a service
// paused by slowpoke's virtual speedup (SIGSTOP/SIGCONT) does exactly the
// work it was asked for; only wait_us, a wait on something outside the
// application, sleeps. Per call, an endpoint does, in order:
//
//  1. wait_us of waiting without CPU,
//  2. work_us of CPU work, plus contention_us for every other call then in
//     flight in the service,
//  3. mutex_work_us of CPU work while holding one service-wide sync.Mutex,
//  4. its downstream calls, one after the other or all at once (concurrent).
//
// Unless run plain, a service uses slowpoke's instrumentation
// (instrument/slowhttp, instrument/slowgrpc), which is a no-op when the
// process was not started by a slowpoke controller. Given a Tracing
// (WithTracing; cmd/slowpoke-emu's -otel, through package emuotel), it
// also exports OpenTelemetry spans.
//
// The file format and the command are documented in docs/emulator.md.
package emulator
