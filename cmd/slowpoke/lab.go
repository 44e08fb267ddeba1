//go:build lab

package main

// The lab's build of this command, slowpoke-lab: every command of
// slowpoke, and the research benchmarks besides bench overhead (what the
// lab_*.go files hold). Built by
//
//	go build -tags lab -o slowpoke-lab ./cmd/slowpoke
//
// Every lab_*.go file carries the tag, so slowpoke, built without it,
// does not compile them; attachdemo.go and faulttrial.go, which the
// end-to-end tests share with the lab's benchmarks, are built with either
// tag (lab or e2e), and lab_test.go and lab_bench_test.go test the lab
// (go test -tags lab).
func init() {
	program = labProgram
	benches = append(benches, labBenches()...)
}
