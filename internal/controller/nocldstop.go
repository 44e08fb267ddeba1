//go:build linux && (amd64 || arm64)

package controller

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// saNoCldStop is SA_NOCLDSTOP from the kernel's headers.
const saNoCldStop = 0x1

// kernelSigaction is the kernel's struct sigaction on amd64 and arm64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// quietChildStops sets SA_NOCLDSTOP on the SIGCHLD handler the Go runtime
// installed, so that the kernel signals this process when its child exits
// but no longer every time the child is stopped or continued: a signal that
// interrupts the thread waiting for the child's exit and wakes the runtime
// twice per round, on the cores the paused services share. The handler
// itself is left as it is. The controller never asks os/signal for
// SIGCHLD, which would reinstall the handler without the flag (harmless:
// the signals would only come back).
func quietChildStops() error { return childStopSignals(false) }

// childStopSignals sets (on false) or clears (on true) SA_NOCLDSTOP on the
// SIGCHLD handler, if there is one.
func childStopSignals(on bool) error {
	var sa kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0, uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa.mask), 0, 0); e != 0 {
		return e
	}
	if sa.handler <= 1 {
		return nil // default or ignored; the runtime's handler is neither
	}
	if on {
		sa.flags &^= saNoCldStop
	} else {
		sa.flags |= saNoCldStop
	}
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), uintptr(unsafe.Pointer(&sa)), 0, unsafe.Sizeof(sa.mask), 0, 0); e != 0 {
		return e
	}
	return nil
}
