//go:build !(linux && (amd64 || arm64))

package controller

// quietChildStops is a no-op where the kernel's sigaction layout is not
// known here; the controller works the same, at the cost of a SIGCHLD per
// stop and continue.
func quietChildStops() error { return nil }
