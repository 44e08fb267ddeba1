//go:build e2e

package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/examples/demo"
	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// startDemo builds slowpoke, writes the demo application to a temporary
// directory and starts it with cart as the target.
func startDemo(t *testing.T, target string) *Deployment {
	t.Helper()
	return startDemoWith(t, target, nil)
}

// startDemoWith is startDemo with the spec changed by edit before the start.
func startDemoWith(t *testing.T, target string, edit func(*spec.Spec)) *Deployment {
	t.Helper()
	if testing.Short() {
		t.Skip("builds slowpoke and starts the demo application")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	exe := filepath.Join(bin, "slowpoke")
	if out, err := exec.Command("go", "build", "-o", exe, "github.com/slowpoke-dev/slowpoke/cmd/slowpoke").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Symlink(exe, filepath.Join(bin, "slowpoke-emu")); err != nil {
		t.Fatal(err)
	}
	err := fs.WalkDir(demo.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := demo.Files.ReadFile(path)
		// Ports of its own (1818x, not the demo's 1808x): cmd/slowpoke's
		// tests may run the demo at the same time.
		b = []byte(strings.ReplaceAll(string(b), "1808", "1818"))
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Start(ctx, s, Options{Options: backend.Options{Target: target, Logf: t.Logf}, Executable: exe, LogDir: filepath.Join(dir, "logs"), ExtraPath: []string{bin}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	// The controllers' address files are read once and removed.
	if left, _ := filepath.Glob(filepath.Join(dir, "logs", ".*addr*")); len(left) > 0 {
		t.Errorf("address files left in the log directory: %v", left)
	}
	return d
}

// Retargeting a running deployment moves the old target's threads to the
// shared cores and the new target's to the target's cores, restarting
// nothing; an unknown service is refused and changes nothing.
func TestRetarget(t *testing.T) {
	avail, err := AvailableCPUs()
	if err != nil || len(avail) < 2 {
		t.Skipf("needs 2 CPUs (have %v, %v)", avail, err)
	}
	d := startDemo(t, "cart")
	p0 := d.Placement()
	checkOn(t, d, "cart", p0.TargetCPUs)
	checkOn(t, d, "catalog", p0.CPUs("catalog"))
	pid := d.proc("cart").PID

	if err := d.Retarget("nosuch"); err == nil {
		t.Error("an unknown service was accepted")
	}
	if d.Placement().Target != "cart" {
		t.Fatalf("a refused retarget changed the target to %q", d.Placement().Target)
	}
	if err := d.Retarget("catalog"); err != nil {
		t.Fatal(err)
	}
	p1 := d.Placement()
	if p1.Target != "catalog" {
		t.Fatalf("target %q after retargeting to catalog", p1.Target)
	}
	checkOn(t, d, "catalog", p1.TargetCPUs)
	checkOn(t, d, "cart", p1.CPUs("cart"))
	if slices.Equal(p1.CPUs("cart"), p1.TargetCPUs) {
		t.Errorf("cart still shares the target's CPUs %v", p1.TargetCPUs)
	}
	if d.proc("cart").PID != pid {
		t.Error("cart was restarted")
	}
	// And back.
	if err := d.Retarget("cart"); err != nil {
		t.Fatal(err)
	}
	checkOn(t, d, "cart", p0.TargetCPUs)
	checkOn(t, d, "catalog", p0.CPUs("catalog"))
}

// Unpinned lets every service run on every core while its function runs,
// and puts each back on its placement's cores afterwards, also when the
// function fails.
func TestUnpinned(t *testing.T) {
	avail, err := AvailableCPUs()
	if err != nil || len(avail) < 2 {
		t.Skipf("needs 2 CPUs (have %v, %v)", avail, err)
	}
	d := startDemo(t, "cart")
	p0 := d.Placement()
	failed := errors.New("the measurement failed")
	for _, ret := range []error{nil, failed} {
		err := d.Unpinned(func() error {
			checkOn(t, d, "cart", avail)
			checkOn(t, d, "catalog", avail)
			return ret
		})
		if !errors.Is(err, ret) || (ret == nil) != (err == nil) {
			t.Fatalf("Unpinned = %v, want %v", err, ret)
		}
		checkOn(t, d, "cart", p0.TargetCPUs)
		checkOn(t, d, "catalog", p0.CPUs("catalog"))
	}
}

// TestSpecPoolApplied: a pool in the spec reaches the service's
// instrumentation at start, and again after the service is restarted (as
// for a ground truth).
func TestSpecPoolApplied(t *testing.T) {
	d := startDemoWith(t, "cart", func(s *spec.Spec) {
		for i := range s.Services {
			if s.Services[i].Name == "cart" {
				n := 3
				s.Services[i].Pool = &n
			}
		}
	})
	limitIs := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			st, err := d.Service("cart").Control.Stats()
			if err == nil && st.AgentConnected && st.Limit == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("cart's limit: %+v (err %v), want %d", st, err, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	limitIs(3)
	if st, err := d.Service("frontend").Control.Stats(); err != nil || st.Limit != 0 {
		t.Errorf("frontend has a limit it was not given: %+v %v", st, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Restart(ctx, "cart", map[string]string{"EMU_WORK_OFFSET_US": "-100"}); err != nil {
		t.Fatal(err)
	}
	limitIs(3)
}
