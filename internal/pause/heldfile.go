package pause

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// heldFileSize is a held-time file's size: one page, of which the first
// word is used.
const heldFileSize = 4096

// HeldFile is a counter of the time a Holder held its cores (WithHeldTotal)
// in a file that two processes map: the controller whose Holder holds, and
// the orchestrator whose load generator runs on the held cores and keeps
// its clock in their time.
type HeldFile struct {
	path string
	mem  []byte
}

// CreateHeldFile creates the file at path (which must not exist), readable
// and writable by its owner only, and maps it.
func CreateHeldFile(path string) (*HeldFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("held-time file: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(heldFileSize); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("held-time file: %w", err)
	}
	h, err := mapHeldFile(f, path)
	if err != nil {
		os.Remove(path)
	}
	return h, err
}

// OpenHeldFile maps the file at path, which CreateHeldFile made.
func OpenHeldFile(path string) (*HeldFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("held-time file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("held-time file: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() != heldFileSize {
		return nil, fmt.Errorf("held-time file %s: not one (%v, %d bytes)", path, fi.Mode().Type(), fi.Size())
	}
	return mapHeldFile(f, path)
}

func mapHeldFile(f *os.File, path string) (*HeldFile, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, heldFileSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("held-time file %s: %w", path, err)
	}
	return &HeldFile{path: path, mem: mem}, nil
}

// Path is the file's path.
func (h *HeldFile) Path() string { return h.path }

// Total is the counter, in nanoseconds: a Holder adds to it, a reader
// loads it.
func (h *HeldFile) Total() *atomic.Int64 { return (*atomic.Int64)(unsafe.Pointer(&h.mem[0])) }

// Close unmaps the file; nobody may use Total's counter afterwards.
func (h *HeldFile) Close() error {
	if h.mem == nil {
		return errors.New("held-time file already closed")
	}
	err := syscall.Munmap(h.mem)
	h.mem = nil
	return err
}
