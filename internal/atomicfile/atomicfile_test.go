package atomicfile

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	for _, content := range []string{"first\n", "second, longer\n"} {
		if err := Write(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Fatalf("read back %q, %v; want %q", b, err, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v; want 0644", fi.Mode(), err)
	}
	if err := Write(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v; want 0600", fi.Mode())
	}
	onlyFiles(t, dir, "results.json")
}

func TestWriteFuncErrorLeavesDestination(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	if err := Write(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFunc(path, 0o600, func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v; want it to wrap %v", err, boom)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("destination now %q; want it untouched", b)
	}
	onlyFiles(t, dir, "run.json")

	if err := Write(filepath.Join(dir, "no-such-dir", "f"), nil, 0o600); err == nil {
		t.Fatal("write into a missing directory: no error")
	}
}

func TestLeftover(t *testing.T) {
	for _, tc := range []struct {
		name, dest string
		ok         bool
	}{
		{".run-1-2.json.tmp123456", "run-1-2.json", true},
		{".frontend.addr.tmp7", "frontend.addr", true},
		{".x.tmp.tmp42", "x.tmp", true},
		{".a.tmp", "a", true}, // CreateTemp's suffix could in principle be empty
		{"run.json.tmp", "", false},
		{".tmp123", "", false},
		{".a.tmpx1", "", false},
		{".a.tmp12b", "", false},
		{"a", "", false},
		{"", "", false},
	} {
		dest, ok := Leftover(tc.name)
		if dest != tc.dest || ok != tc.ok {
			t.Errorf("Leftover(%q) = %q, %v; want %q, %v", tc.name, dest, ok, tc.dest, tc.ok)
		}
	}
}

// TestKilledWriterLeavesWhatRemoveLeftoversFinds kills a real process in
// the middle of a write: the destination keeps its old content, and the
// temporary file it left is found and removed.
func TestKilledWriterLeavesWhatRemoveLeftoversFinds(t *testing.T) {
	if path := os.Getenv("ATOMICFILE_TEST_WRITER"); path != "" {
		WriteFunc(path, 0o600, func(w io.Writer) error {
			io.WriteString(w, "half")
			os.Stdout.WriteString("writing\n")
			time.Sleep(time.Minute)
			return nil
		})
		os.Exit(0)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "frontend.addr")
	if err := Write(path, []byte("127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.addr")
	if err := Write(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterLeavesWhatRemoveLeftoversFinds$")
	cmd.Env = append(os.Environ(), "ATOMICFILE_TEST_WRITER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 64)
	if n, err := out.Read(buf); err != nil || string(buf[:n]) != "writing\n" {
		t.Fatalf("writer said %q, %v", buf[:n], err)
	}
	cmd.Process.Kill()
	cmd.Wait()

	if b, _ := os.ReadFile(path); string(b) != "127.0.0.1:1\n" {
		t.Fatalf("destination now %q; want it untouched", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Fatalf("%d entries after the killed write, want 3 (destination, other, leftover)", len(ents))
	}
	removed := RemoveLeftovers(path)
	if len(removed) != 1 {
		t.Fatalf("removed %v; want the one leftover", removed)
	}
	if dest, ok := Leftover(filepath.Base(removed[0])); !ok || dest != "frontend.addr" {
		t.Fatalf("removed %s, not a leftover of frontend.addr", removed[0])
	}
	onlyFiles(t, dir, "frontend.addr", "other.addr")
}

func onlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s holds %v; want %v", dir, got, want)
	}
}
