// Package experiment orchestrates virtual-speedup experiments on a running
// deployment: pre-profiling (baseline throughput, c1, q1, u1, call graph),
// slowdown runs per reduction point with coordinated pauses, repetitions,
// and the prediction t_opt = 1/(1/t_vs - d c1/q1). It produces a
// report.Results; rendering is the report package's job.
//
// The lab_*.go files carry the build tag lab: the API only the lab's
// benchmarks use (Compare and its Variant, Runner.MeasureWindow,
// LatencyOverhead, Tuning.CheckPauseLead; see internal/lab), which
// slowpoke, built without the tag, neither compiles nor exports.
package experiment
