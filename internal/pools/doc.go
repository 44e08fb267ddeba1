// Package pools is the math of slowpoke's pool-size advisor (the Sora
// method): a polynomial fit of goodput against concurrency whose degree is
// chosen by cross-validation, and the Kneedle knee of that fit, which is the
// recommended concurrency. It does no I/O; the sweep that collects the
// samples lives in internal/experiment.
package pools
