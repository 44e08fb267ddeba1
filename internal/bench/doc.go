// Package bench holds slowpoke's benchmarks: experiments that print
// figures (overheads, accuracy) rather than pass or fail. The slowpoke
// command runs them as "slowpoke bench NAME".
package bench
