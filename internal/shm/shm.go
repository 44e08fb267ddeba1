package shm

import (
	"fmt"
	"os"
	"syscall"
)

// Create creates the file at path, which must not exist, with size bytes of
// zeros, readable and writable by its owner only, and maps it. On error
// nothing is left at path.
func Create(path string, size int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return nil, err
	}
	mem, err := mapFile(f, size)
	if err != nil {
		os.Remove(path)
	}
	return mem, err
}

// Open maps the file at path, which must be a regular file (not a link) of
// size bytes.
func Open(path string, size int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != int64(size) {
		return nil, fmt.Errorf("%s is not one (%v, %d bytes, want a file of %d)", path, fi.Mode().Type(), fi.Size(), size)
	}
	return mapFile(f, size)
}

func mapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

// Unmap unmaps memory from Create or Open.
func Unmap(mem []byte) error { return syscall.Munmap(mem) }
