// Package backendtest has a fake of backend.Control, a service's
// controller, for unit tests of the experiment flow's bookkeeping and
// error paths: what it was told, in order, and a refusal or an outage on
// any call.
//
// It stands in for no behaviour of a real controller (pausing, counting,
// rounds): those are tested against real processes, in
// internal/controller and in the end-to-end tier (go test -tags e2e
// ./cmd/slowpoke). A test that needs the wire protocol itself uses a
// real controller.
package backendtest
