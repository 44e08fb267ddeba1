package image

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary builds a small static Go program for the image.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() { println(\"hi\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "slowpoke")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// files lists the image's single layer: name -> header.
func files(t *testing.T, archive, tag string) (map[string]*tar.Header, []string) {
	t.Helper()
	ref, _ := name.NewTag(tag)
	img, err := tarball.ImageFromPath(archive, &ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tar.Header{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = h
	}
	return out, cf.Config.Entrypoint
}

func TestBuildArchive(t *testing.T) {
	bin := staticBinary(t)
	extra := t.TempDir()
	os.MkdirAll(filepath.Join(extra, "demo"), 0o755)
	os.WriteFile(filepath.Join(extra, "demo", "topology.yaml"), []byte("services: []\n"), 0o644)
	os.Symlink("slowpoke", filepath.Join(extra, "slowpoke-emu"))
	adds := []Add{{Src: filepath.Join(extra, "demo"), Dst: "/apps/demo"}, {Src: filepath.Join(extra, "slowpoke-emu"), Dst: "/slowpoke-emu"}}
	img, err := Build(bin, adds)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "image.tar")
	const tag = "slowpoke.local/slowpoke:test"
	if err := WriteArchive(archive, tag, img); err != nil {
		t.Fatal(err)
	}
	got, entry := files(t, archive, tag)
	if len(entry) != 1 || entry[0] != Binary {
		t.Errorf("entrypoint %v, want [%s]", entry, Binary)
	}
	for _, c := range []struct {
		name string
		typ  byte
		mode int64
	}{
		{"slowpoke", tar.TypeReg, 0o755},
		{"tmp", tar.TypeDir, 0o1777},
		{"apps", tar.TypeDir, 0o755},
		{"apps/demo/topology.yaml", tar.TypeReg, 0o644},
		{"slowpoke-emu", tar.TypeSymlink, 0o777},
	} {
		h := got[c.name]
		if h == nil {
			t.Errorf("%s missing from the image (has %v)", c.name, keys(got))
			continue
		}
		if h.Typeflag != c.typ || h.Mode&0o7777 != c.mode {
			t.Errorf("%s: type %c mode %o, want %c %o", c.name, h.Typeflag, h.Mode, c.typ, c.mode)
		}
	}
	if h := got["slowpoke-emu"]; h != nil && h.Linkname != "slowpoke" {
		t.Errorf("slowpoke-emu links to %q", h.Linkname)
	}
	// The same inputs give the same image.
	again, err := Build(bin, adds)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: %s and %s", d1, d2)
	}
}

func keys(m map[string]*tar.Header) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestPushToRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	img, err := Build(staticBinary(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tag := strings.TrimPrefix(srv.URL, "http://") + "/team/slowpoke:v1"
	if err := Push(context.Background(), tag, img); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(tag)
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, _ := pulled.Digest(); got != want {
		t.Errorf("pulled %s, pushed %s", got, want)
	}
}

func TestRefuses(t *testing.T) {
	dynamic := ""
	for _, p := range []string{"/bin/ls", "/usr/bin/env"} {
		if CheckStatic(p) != nil {
			dynamic = p
			break
		}
	}
	if dynamic == "" {
		t.Skip("no dynamically linked binary found")
	}
	if _, err := Build(dynamic, nil); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamically linked binary: %v", err)
	}
	notELF := filepath.Join(t.TempDir(), "script")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	if _, err := Build(notELF, nil); err == nil {
		t.Error("a script was accepted as the binary")
	}
	for _, bad := range []string{"nocolon", ":/x", "src:relative"} {
		if _, err := ParseAdd(bad); err == nil {
			t.Errorf("ParseAdd(%q) accepted", bad)
		}
	}
	if a, err := ParseAdd("apps/bin:/apps/bin/"); err != nil || a.Dst != "/apps/bin" {
		t.Errorf("ParseAdd: %+v %v", a, err)
	}
}
