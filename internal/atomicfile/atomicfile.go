package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// tmpInfix separates a destination's name from the random suffix of its
// temporary files: ".NAME.tmp123456".
const tmpInfix = ".tmp"

// Write writes data to path through a temporary file, with permissions
// perm.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc writes what write writes to path through a temporary file,
// with permissions perm. The file is synced before it is renamed into
// place; on any error the temporary file is removed and path is left as
// it was.
func WriteFunc(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tmpInfix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600 whatever the umask.
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Leftover says whether name, a file's base name, is a temporary file of
// Write or WriteFunc, and returns the base name of the destination it was
// being written for. Such a file outlives its write only when the writer
// was killed before renaming it.
func Leftover(name string) (dest string, ok bool) {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, tmpInfix)
	if i <= 0 {
		return "", false
	}
	for _, c := range rest[i+len(tmpInfix):] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return rest[:i], true
}

// RemoveLeftovers removes the temporary files that writes to path left
// (see Leftover), and returns those it removed. It is for a path that no
// one is writing now.
func RemoveLeftovers(path string) []string {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		if dest, ok := Leftover(e.Name()); ok && dest == base && e.Type().IsRegular() {
			p := filepath.Join(dir, e.Name())
			if os.Remove(p) == nil {
				removed = append(removed, p)
			}
		}
	}
	return removed
}
