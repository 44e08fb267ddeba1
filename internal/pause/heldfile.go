package pause

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/slowpoke-dev/slowpoke/internal/shm"
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
	mem, err := shm.Create(path, heldFileSize)
	if err != nil {
		return nil, fmt.Errorf("held-time file: %w", err)
	}
	return &HeldFile{path: path, mem: mem}, nil
}

// OpenHeldFile maps the file at path, which CreateHeldFile made.
func OpenHeldFile(path string) (*HeldFile, error) {
	mem, err := shm.Open(path, heldFileSize)
	if err != nil {
		return nil, fmt.Errorf("held-time file: %w", err)
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
	err := shm.Unmap(h.mem)
	h.mem = nil
	return err
}
