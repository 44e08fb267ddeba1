// Package svc is the small runtime shared by the benchmark applications under
// apps/: the command line and environment of a service binary, HTTP/JSON and
// gRPC servers with the per-call extra-CPU-work knob, clients wrapped by the
// slowpoke instrumentation, and an in-process cluster for tests.
//
// Every service of an application is built into one binary and selected with
// -service. Its listening port comes from -port (or $PORT), the address of
// every other service from -<name>-addr (or $<NAME>_ADDR, e.g. CART_ADDR,
// COMPOSE_POST_ADDR), defaulting to 127.0.0.1 and the application's port
// table. $EXTRA_WORK_US (float µs, default 0) is burnt as thread CPU time with
// cpuwork.Spin once per incoming call, before the handler runs. Two more
// knobs, off by default, give a service a best concurrency for slowpoke
// pools: $STORE_WAIT_US is waited per call without CPU first (a data store
// round trip), and $CONTENTION_US is burnt per call for every other call in
// flight (lock or cache contention).
package svc
