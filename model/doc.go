// Package model is the throughput model of virtual speedup, as pure
// functions.
//
// For every resource of every service i, let u_i be the resource used per
// call, c_i the calls to i per user request and q_i its quota (cores). The
// application sustains the largest throughput t with u_i c_i t / q_i <= 1 for
// all i. Reducing the target's per-call cost by d gives t_opt. Adding
// d c_1 / q_1 of pause per user request to every other resource keeps the
// bottleneck in place, and the throughput t_vs measured that way satisfies
//
//	1/t_opt = 1/t_vs - d c_1 / q_1
//
// Pausing every non-target service together for B d / q_1 every B target
// calls adds exactly that pause per request, whatever each service's own
// call ratio.
package model
