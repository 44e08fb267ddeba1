// Package stale names the files and directories a slowpoke process leaves
// in shared places (the temporary directory, /dev/shm) after its own
// process id, and removes those whose process no longer runs.
//
// A process removes what it made when it ends normally; one that is
// killed (SIGKILL, a crash, a parent-death signal) cannot. The next
// process that makes the same kind of file sweeps them: a name carries its
// creator's pid, and an entry whose pid runs no process is stale. An entry
// whose pid runs a process, whatever that process is, is kept: a pid that
// was reused costs a leftover, never a live process's file.
package stale
