// Package record is the format of the lab's recorded benchmark runs and
// the page generated from them.
//
// A benchmark run of slowpoke-lab (bench methods, bench accuracy) writes
// one Record, a JSON file, into the repository's records/ directory: when
// and where it ran (date, machine, commit), the command as typed, the
// placement, and every point's figures. docs/accuracy.md's section of
// recorded runs is generated from those files by RenderAccuracy, and a
// test fails when the committed page differs from what the records
// generate, so that no figure there is copied by hand:
//
//	go test ./internal/record -run TestAccuracyPage -update
//
// rewrites the section after a new record.
package record
