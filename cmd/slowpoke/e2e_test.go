//go:build e2e

package main

// The end-to-end tier: tests that build slowpoke and run it on whole
// applications, behind the build tag e2e (README.md, "Tests"):
//
//	go test -tags e2e -p 1 -timeout 40m ./...
//
// Each binary (slowpoke, the lab's build, slowpoke-emu) is built once per
// test process, the first time a test asks for it, into one directory
// that TestMain removes when the tests end. A test gets a hard link to it
// in a temporary directory of its own, so that what it puts beside the
// binary (a slowpoke-emu link, as after `go build -o bin/ ./cmd/...`) is
// its own and goes with it.

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// binDir holds the binaries built for this test process.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "slowpoke-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// builtBinary is one binary, built at most once.
type builtBinary struct {
	once sync.Once
	path string
	err  error
}

var slowpokeBin, labBin, emuBin builtBinary

// get builds the binary the first time (go build ARGS -o binDir/NAME
// PKG) and returns its path, failing t if the build failed.
func (b *builtBinary) get(t *testing.T, name, pkg string, flags ...string) string {
	t.Helper()
	b.once.Do(func() {
		path := filepath.Join(binDir, name)
		args := append(append([]string{"build", "-buildvcs=false"}, flags...), "-o", path, pkg)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		b.path = path
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// linkTo gives t a link named name to the built binary src, in a
// temporary directory of t's own (a copy where a link cannot be made).
func linkTo(t *testing.T, src, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.Link(src, dst); err == nil {
		return dst
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// buildSlowpoke returns this command, built once per test process, in a
// temporary directory of the test's own.
func buildSlowpoke(t *testing.T) string {
	t.Helper()
	return linkTo(t, slowpokeBin.get(t, "slowpoke", "."), "slowpoke")
}

// buildLab returns the lab's build of this command (lab.go), the one with
// the research benchmarks, built once per test process, in a temporary
// directory of the test's own.
func buildLab(t *testing.T) string {
	t.Helper()
	return linkTo(t, labBin.get(t, labProgram, ".", "-tags", "lab"), labProgram)
}

// buildEmu returns cmd/slowpoke-emu, built once per test process, in a
// temporary directory of the test's own.
func buildEmu(t *testing.T) string {
	t.Helper()
	return linkTo(t, emuBin.get(t, emuName, "../slowpoke-emu"), emuName)
}
