//go:build lab

// Package lab holds the lab's research benchmarks: accuracy (the synthetic
// suite's points against their ground truth, one method or several
// compared on shared truths) and pausecost (what a pause method costs the
// services sharing the paused cores). slowpoke-lab runs them as
// "slowpoke-lab bench NAME" (docs/lab.md).
//
// Every file of the package carries the build tag lab, as does the lab
// API of the packages it drives (internal/experiment's lab_*.go files:
// Compare, Runner.MeasureWindow, LatencyOverhead): slowpoke, built without
// the tag, compiles none of it. The benchmark a user runs, bench overhead,
// is in internal/bench.
package lab
