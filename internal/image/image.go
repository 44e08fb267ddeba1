package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Binary is where the image holds the slowpoke binary, and its
// entrypoint.
const Binary = "/slowpoke"

// Add puts the file, symbolic link or directory tree Src of this machine
// at Dst in the image (an absolute path).
type Add struct{ Src, Dst string }

// ParseAdd reads SRC:DST.
func ParseAdd(s string) (Add, error) {
	src, dst, ok := strings.Cut(s, ":")
	if !ok || src == "" || !path.IsAbs(dst) {
		return Add{}, fmt.Errorf("add %q: want LOCAL-PATH:/PATH-IN-IMAGE", s)
	}
	return Add{Src: src, Dst: path.Clean(dst)}, nil
}

// CheckStatic refuses a binary that needs a dynamic loader (built with
// cgo): the image holds nothing else, so it could not start there.
func CheckStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("%s: not an ELF binary: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (built with cgo), and the image holds no libraries to run it: build it static, CGO_ENABLED=0 go build ./cmd/slowpoke, and give it with --binary", bin)
		}
	}
	return nil
}

// Build makes the image: bin at Binary as its entrypoint, /tmp, and adds.
func Build(bin string, adds []Add) (v1.Image, error) {
	if err := CheckStatic(bin); err != nil {
		return nil, err
	}
	layer, err := makeLayer(append([]Add{{Src: bin, Dst: Binary}}, adds...))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{Binary}
	return mutate.ConfigFile(img, cf)
}

// WriteArchive writes img tagged tag to file, in the format of `docker
// save`.
func WriteArchive(file, tag string, img v1.Image) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	return tarball.WriteToFile(file, ref, img)
}

// Push pushes img to tag's registry, with the credentials that docker,
// podman and the cloud tools leave in the usual places.
func Push(ctx context.Context, tag string, img v1.Image, opts ...remote.Option) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.Write(ref, img, opts...); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}

// entry is one file, link or directory of the layer.
type entry struct {
	dst string
	src string // regular files: where to read them
	hdr tar.Header
}

// makeLayer tars adds, every parent directory included, sorted and with
// fixed owners and times so that the same inputs give the same digest.
func makeLayer(adds []Add) (v1.Layer, error) {
	entries := map[string]*entry{}
	dir := func(p string, mode int64) {
		for d := p; d != "/" && d != "."; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = &entry{dst: d, hdr: tar.Header{Typeflag: tar.TypeDir, Mode: 0o755}}
			}
		}
		if mode != 0 {
			entries[p].hdr.Mode = mode
		}
	}
	dir("/tmp", 0o1777)
	for _, a := range adds {
		err := filepath.WalkDir(a.Src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(a.Src, p)
			if err != nil {
				return err
			}
			dst := path.Join(a.Dst, filepath.ToSlash(rel))
			info, err := os.Lstat(p)
			if err != nil {
				return err
			}
			dir(path.Dir(dst), 0)
			switch {
			case info.IsDir():
				dir(dst, int64(info.Mode().Perm()))
			case info.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				entries[dst] = &entry{dst: dst, hdr: tar.Header{Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}}
			case info.Mode().IsRegular():
				entries[dst] = &entry{dst: dst, src: p, hdr: tar.Header{Typeflag: tar.TypeReg, Mode: int64(info.Mode().Perm()), Size: info.Size()}}
			default:
				return fmt.Errorf("%s: not a file, link or directory", p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("add %s: %w", a.Src, err)
		}
	}
	var b bytes.Buffer
	if err := writeTar(&b, entries); err != nil {
		return nil, err
	}
	data := b.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

func writeTar(w io.Writer, entries map[string]*entry) error {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		e := entries[n]
		h := e.hdr
		h.Name = strings.TrimPrefix(n, "/")
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		h.ModTime, h.Format = time.Unix(0, 0), tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return err
		}
		if e.src == "" {
			continue
		}
		if err := copyFile(tw, e.src, h.Size); err != nil {
			return err
		}
	}
	return tw.Close()
}

func copyFile(w io.Writer, src string, size int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err == nil && n != size {
		err = errors.New("changed size while being read")
	}
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}
