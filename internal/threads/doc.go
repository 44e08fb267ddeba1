// Package threads applies per-thread settings (affinity, priority) to every
// thread of the calling process. Linux sets both per thread, and a Go
// process runs on several threads, so a setting for "the process" has to
// visit each of them; threads created later inherit it from their creator.
package threads
