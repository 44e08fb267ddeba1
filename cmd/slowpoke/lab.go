//go:build lab

package main

// The lab's build of this command, slowpoke-lab: every command of
// slowpoke, and the research benchmarks besides bench overhead (what the
// lab_*.go files hold). Built by
//
//	go build -tags lab -o slowpoke-lab ./cmd/slowpoke
//
// In slowpoke, built without the tag, nothing refers to them and the
// linker leaves them out.
func init() {
	program = labProgram
	benches = append(benches, labBenches()...)
}
