// Package shm makes and maps the small files that slowpoke's processes
// share memory through: a latency what-if's delay store and the held-time
// counter of the cores method. The file is created by one process (mode
// 0600, never over an existing file) and mapped, read and write, by the
// others.
package shm
