// Package experiment orchestrates virtual-speedup experiments on a running
// deployment: pre-profiling (baseline throughput, c1, q1, u1, call graph),
// slowdown runs per reduction point with coordinated pauses, repetitions,
// and the prediction t_opt = 1/(1/t_vs - d c1/q1). It produces a
// report.Results; rendering is the report package's job.
package experiment
