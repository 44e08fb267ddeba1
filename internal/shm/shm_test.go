package shm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What one mapping writes, another mapping of the same file reads.
func TestCreateOpenShare(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	a, err := Create(p, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(a)
	b, err := Open(p, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(b)
	a[100] = 42
	if b[100] != 42 {
		t.Error("a write through one mapping is not seen through the other")
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestRefused(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists")
	os.WriteFile(exists, make([]byte, 4096), 0o600)
	small := filepath.Join(dir, "small")
	os.WriteFile(small, make([]byte, 10), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(exists, link)
	if _, err := Create(exists, 4096); err == nil {
		t.Error("Create over an existing file")
	}
	for _, tc := range []struct{ path, want string }{
		{small, "not one"},
		{dir, "is a directory"},
		{link, "too many levels"},
		{filepath.Join(dir, "none"), "no such file"},
	} {
		if _, err := Open(tc.path, 4096); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s) = %v, want an error with %q", tc.path, err, tc.want)
		}
	}
}
