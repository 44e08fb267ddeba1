package stale

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deadPID returns the pid of a process that ran and ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	return cmd.Process.Pid
}

func TestSweep(t *testing.T) {
	dir := t.TempDir()
	dead, live := strconv.Itoa(deadPID(t)), strconv.Itoa(os.Getpid())
	target := filepath.Join(t.TempDir(), "kept-target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		make    func(p string) error
		removed bool
	}{
		{"slowpoke-x-" + dead + "-ab12", file, true},
		{"slowpoke-x-" + dead + "-dir", dirWithFiles, true},
		{"slowpoke-x-" + live + "-cd34", file, false},
		{"slowpoke-x-" + live + "-dir", dirWithFiles, false},
		{"slowpoke-x-1-init", file, false}, // pid 1 runs (perhaps as another user)
		{"slowpoke-x-" + dead + "-link", func(p string) error { return os.Symlink(target, p) }, false},
		{"slowpoke-x-0" + dead + "-zero", file, false}, // not how Prefix writes a pid
		{"slowpoke-x-abc-1", file, false},
		{"slowpoke-x-" + dead, file, false}, // no suffix
		{"slowpoke-y-" + dead + "-other", file, false},
		{"other-file", file, false},
	} {
		if err := tc.make(filepath.Join(dir, tc.name)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, err := os.Lstat(filepath.Join(dir, tc.name))
			if gone := os.IsNotExist(err); gone != tc.removed {
				t.Errorf("%s: removed %v, want %v", tc.name, gone, tc.removed)
			}
		})
	}
	got := Sweep(dir, "slowpoke-x")
	slices.Sort(got)
	want := []string{filepath.Join(dir, "slowpoke-x-"+dead+"-ab12"), filepath.Join(dir, "slowpoke-x-"+dead+"-dir")}
	if !slices.Equal(got, want) {
		t.Errorf("Sweep returned %q, want %q", got, want)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("a symlink's target was touched: %v", err)
	}
}

func TestSweepMissingDir(t *testing.T) {
	if got := Sweep(filepath.Join(t.TempDir(), "none"), "slowpoke-x"); got != nil {
		t.Errorf("Sweep of a missing directory: %q", got)
	}
}

// Names made with Prefix are swept once their process has ended, and only
// then.
func TestPrefixRoundTrip(t *testing.T) {
	p := Prefix("slowpoke-x")
	if want := "slowpoke-x-" + strconv.Itoa(os.Getpid()) + "-"; p != want {
		t.Fatalf("Prefix = %q, want %q", p, want)
	}
	dir := t.TempDir()
	d, err := os.MkdirTemp(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := Sweep(dir, "slowpoke-x"); len(got) != 0 {
		t.Fatalf("a live process's directory was swept: %q", got)
	}
	pid, ok := Creator(filepath.Base(d), "slowpoke-x")
	if !ok || pid != os.Getpid() {
		t.Errorf("Creator(%q) = %d, %v", filepath.Base(d), pid, ok)
	}
	if !strings.HasPrefix(filepath.Base(d), p) {
		t.Errorf("%s does not start with %s", d, p)
	}
}

func file(p string) error { return os.WriteFile(p, []byte("x"), 0o600) }

func dirWithFiles(p string) error {
	if err := os.MkdirAll(filepath.Join(p, "sub"), 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p, "sub", "agent.sock"), nil, 0o600)
}

// A process that has ended but that its parent has not reaped yet (a
// zombie) runs no more: its entries are swept.
func TestSweepZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot run true:", err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); !ended(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d never showed as ended in /proc", pid)
		}
	}
	dir := t.TempDir()
	name := "slowpoke-x-" + strconv.Itoa(pid) + "-z"
	if err := file(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	if got := Sweep(dir, "slowpoke-x"); len(got) != 1 {
		t.Errorf("Sweep of a zombie's file: %q, want it removed", got)
	}
	if ended(os.Getpid()) {
		t.Error("this process shows as ended")
	}
}
