package inservice

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// bell is the write end of the FIFO a target's controller holds cores
// from: one byte a round, written from the call that crosses a batch
// boundary, wakes the controller's holding threads directly (no message
// through the controller's Go code, which would run on the cores being
// held).
type bell struct {
	f  *os.File
	rc syscall.RawConn
}

// maxBellPath bounds the path a controller may name.
const maxBellPath = 4096

// openBell opens the FIFO at path for writing, without blocking.
func openBell(path string) (*bell, error) {
	if !filepath.IsAbs(path) || len(path) > maxBellPath {
		return nil, fmt.Errorf("bell path %.100q: want an absolute path of at most %d bytes", path, maxBellPath)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		f.Close()
		return nil, fmt.Errorf("bell %s is not a FIFO", path)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &bell{f: f, rc: rc}, nil
}

// ring writes one round. It never blocks: a full FIFO (a controller that
// stopped reading) drops the round. It returns false only when the bell
// was closed meanwhile, so that the caller can tick instead.
func (b *bell) ring() bool {
	one := [1]byte{1}
	err := b.rc.Write(func(fd uintptr) bool {
		// Raw: a write to a non-blocking FIFO never blocks, and a call
		// through the scheduler could wake the runtime's monitor thread.
		syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&one[0])), 1)
		return true
	})
	return err == nil
}

// setBell rings rounds on the FIFO at path from now on, or as ticks where
// path is "" or cannot be opened.
func (a *Link) setBell(path string) {
	var b *bell
	if path != "" {
		var err error
		if b, err = openBell(path); err != nil {
			fmt.Fprintf(os.Stderr, "slowpoke: rounds go as messages to the controller: %v\n", err)
		}
	}
	if old := a.bell.Swap(b); old != nil {
		old.f.Close()
	}
}
