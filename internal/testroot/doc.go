// Package testroot ends the helper processes of a test binary once the
// test binary is gone.
//
// Many tests here start real processes by re-executing the test binary in
// another role (a service that spins, a controller, a wrapper). A test
// cleans them up as it ends; a test binary that is killed, or that panics
// on its timeout, cannot, and a helper that spins forever would load the
// machine for every later measurement. TestMain calls Mark before running
// the tests; every helper role calls Follow first, and then exits within a
// fraction of a second of the test binary's end. A helper still outlives
// whatever else dies during a test (its controller, an orchestrator): the
// tests that check what ends such orphans still see them.
//
// Serialize, called in TestMain instead of Mark, also makes the packages
// whose tests time real processes run one at a time under plain
// `go test ./...`, which runs packages in parallel: two of them on the
// same two cores failed each other's timing.
package testroot
