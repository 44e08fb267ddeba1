package inservice

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/slowpoke-dev/slowpoke/internal/shm"
)

// The delay store holds, for every request of a latency what-if, its
// global delay counter: the total virtual-speedup delay inserted for it so
// far (see docs/latency.md). It is a shared-memory file that the
// orchestrator creates and every instrumented service maps, so that a
// service about to reply reads the counter of its request without a
// message: a read is one atomic load.
//
// The file is an array of StoreSlots 64-bit words. Request id selects word
// id mod StoreSlots; the word holds a tag, the next 24 bits of the id, in
// its top 24 bits and the counter in nanoseconds in its low 40 bits (up to
// about 18 minutes). A word whose tag is not the request's belongs to an
// earlier request and reads as 0; the first add for the request takes the
// word over. Ids given out consecutively therefore never share a word while
// fewer than StoreSlots requests separate them.
const (
	StoreSlots = 1 << 16
	StoreSize  = StoreSlots * 8
	tagShift   = 40
	valueMask  = 1<<tagShift - 1
	tagMask    = 1<<24 - 1
)

// Store is a mapped delay store. Its methods are safe for concurrent use,
// also across processes.
type Store struct {
	path  string
	mem   []byte
	words []atomic.Uint64
}

// CreateStore creates the delay store file at path (which must not exist),
// readable and writable by its owner only, and maps it.
func CreateStore(path string) (*Store, error) {
	mem, err := shm.Create(path, StoreSize)
	if err != nil {
		return nil, fmt.Errorf("create delay store %s: %w", path, err)
	}
	return storeOf(path, mem), nil
}

// OpenStore maps the delay store file at path, which must have been made by
// CreateStore.
func OpenStore(path string) (*Store, error) {
	mem, err := shm.Open(path, StoreSize)
	if err != nil {
		return nil, fmt.Errorf("open delay store: %w", err)
	}
	return storeOf(path, mem), nil
}

func storeOf(path string, mem []byte) *Store {
	words := unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(&mem[0])), StoreSlots)
	return &Store{path: path, mem: mem, words: words}
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close unmaps the store. Nobody may use it afterwards; services never
// close theirs (a request may be reading it), only its creator does.
func (s *Store) Close() error {
	if s.mem == nil {
		return errors.New("delay store already closed")
	}
	err := shm.Unmap(s.mem)
	s.mem, s.words = nil, nil
	return err
}

func slot(id uint64) (int, uint64) {
	return int(id % StoreSlots), (id / StoreSlots) & tagMask
}

// Get returns request id's global counter in nanoseconds (0 for a request
// nothing was added for).
func (s *Store) Get(id uint64) int64 {
	i, tag := slot(id)
	w := s.words[i].Load()
	if w>>tagShift != tag {
		return 0
	}
	return int64(w & valueMask)
}

// Add adds d (>= 0) nanoseconds to request id's counter and returns the new
// value; the counter saturates at its largest value.
func (s *Store) Add(id uint64, d int64) int64 {
	return s.update(id, func(v int64) int64 { return v + max(d, 0) })
}

// Raise sets request id's counter to v if that is more, and returns the
// counter.
func (s *Store) Raise(id uint64, v int64) int64 {
	return s.update(id, func(old int64) int64 { return max(old, v) })
}

func (s *Store) update(id uint64, f func(int64) int64) int64 {
	i, tag := slot(id)
	for {
		w := s.words[i].Load()
		var old int64
		if w>>tagShift == tag {
			old = int64(w & valueMask)
		}
		v := min(max(f(old), 0), valueMask)
		if s.words[i].CompareAndSwap(w, tag<<tagShift|uint64(v)) {
			return v
		}
	}
}
