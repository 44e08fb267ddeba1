// Package bench holds slowpoke's own benchmark: overhead, what the
// instrumentation and controllers cost at zero pause. It prints figures
// rather than passing or failing; the slowpoke command runs it as
// "slowpoke bench overhead". The lab's research benchmarks (accuracy,
// pausecost) are in internal/lab, built only with the build tag lab.
package bench
