package local

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/guard"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

func TestCheckPrivate(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, mode os.FileMode, isDir bool) string {
		p := filepath.Join(dir, name)
		var err error
		if isDir {
			err = os.Mkdir(p, 0o700)
		} else {
			err = os.WriteFile(p, []byte("{}"), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(mk("target", 0o700, true), link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		dir  bool
		want string // "" when accepted
	}{
		{"own directory", mk("ok", 0o700, true), true, ""},
		{"own file", mk("ok.json", 0o600, false), false, ""},
		{"others may read", mk("read.json", 0o644, false), false, ""},
		{"group writable directory", mk("gw", 0o770, true), true, "can be written by other users"},
		{"world writable file", mk("ww.json", 0o666, false), false, "can be written by other users"},
		{"symbolic link", link, true, "is not a directory"},
		{"file for a directory", mk("f", 0o600, false), true, "is not a directory"},
		{"directory for a file", mk("d.json", 0o700, true), false, "is not a regular file"},
		{"missing", filepath.Join(dir, "none"), true, "no such file"},
	}
	if os.Geteuid() == 0 {
		p := mk("theirs.json", 0o600, false)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct {
			name string
			path string
			dir  bool
			want string
		}{"another user's file", p, false, "belongs to another user (uid 65534)"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPrivate(tc.path, tc.dir)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestRecordConfine(t *testing.T) {
	hier := &pause.Hierarchy{Root: "/sys/fs/cgroup/freezer/slowpoke"}
	for _, tc := range []struct {
		cgroup string
		ok     bool
	}{
		{"/sys/fs/cgroup/freezer/slowpoke/run-12-345/cart", true},
		{"/sys/fs/cgroup/freezer/slowpoke/run-12-345", false},
		{"/sys/fs/cgroup/freezer/slowpoke/run-12-345/cart/deeper", false},
		{"/sys/fs/cgroup/freezer/slowpoke/test-12/cart", false},
		{"/sys/fs/cgroup/freezer/system.slice/sshd.service", false},
		{"/sys/fs/cgroup/freezer/slowpoke/run-1/../../system.slice", false},
		{"slowpoke/run-12-345/cart", false},
	} {
		for _, where := range []string{"run", "service"} {
			r := &record{}
			if where == "run" {
				r.Run.Cgroups = []string{tc.cgroup}
			} else {
				r.Services = []guard.Service{{Name: "s", Cgroup: tc.cgroup}}
			}
			if err := r.confine(hier); (err == nil) != tc.ok {
				t.Errorf("%s cgroup %s: %v, want accepted %v", where, tc.cgroup, err, tc.ok)
			}
			if tc.ok {
				if err := r.confine(nil); err == nil {
					t.Errorf("%s cgroup %s accepted without a hierarchy", where, tc.cgroup)
				}
			}
		}
	}
}

// A record that other users could have written is not acted on: the
// process it names as a dead run's controller goes on running; once the
// record is private, the same record ends that process.
func TestCleanLeftoversTrustsOnlyPrivateRecords(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if err := os.MkdirAll(RunsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Skip("cannot run sleep:", err)
	}
	exited := make(chan struct{})
	go func() { victim.Wait(); close(exited) }()
	t.Cleanup(func() { victim.Process.Kill(); <-exited })
	ctl, ok := guard.Identify(victim.Process.Pid)
	if !ok {
		t.Skip("cannot read start times from /proc")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip(err)
	}
	rec := record{Run: guard.Run{Orchestrator: guard.Proc{PID: gone.Process.Pid, Start: "1"}},
		Services: []guard.Service{{Name: "planted", Controller: ctl}}}
	b, _ := json.Marshal(&rec)
	path := filepath.Join(RunsDir(), "run-1-1.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)

	notes := cleanLeftovers(nil)
	if len(notes) != 1 || !strings.Contains(notes[0], "ignored run record "+path) {
		t.Errorf("notes for a world-writable record: %q", notes)
	}
	select {
	case <-exited:
		t.Fatal("a world-writable record's process was ended")
	case <-time.After(100 * time.Millisecond):
	}

	os.Chmod(path, 0o600)
	notes = cleanLeftovers(nil)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("a private record's process was not ended; notes %q", notes)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "the controller of planted") {
		t.Errorf("notes for a private record: %q", notes)
	}
}

func TestRunOrchestrator(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want guard.Proc
	}{
		{"run-42-12345", guard.Proc{PID: 42, Start: "12345"}},
		{"run-42", guard.Proc{}},
		{"run-x-1", guard.Proc{}},
		{"42-12345", guard.Proc{}},
		{"", guard.Proc{}},
	} {
		if got := runOrchestrator(tc.id); got != tc.want {
			t.Errorf("runOrchestrator(%q) = %+v, want %+v", tc.id, got, tc.want)
		}
	}
}

// A record half written by a run killed mid-write is removed once its
// orchestrator is gone, and kept while it runs.
func TestCleanLeftoversRemovesDeadRunsTempRecords(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if err := os.MkdirAll(RunsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	me, ok := guard.Identify(os.Getpid())
	if !ok {
		t.Skip("cannot read start times from /proc")
	}
	liveID := fmt.Sprintf("run-%d-%s", me.PID, me.Start)
	deadID := fmt.Sprintf("run-%d-%s1", me.PID, me.Start) // another start: gone
	files := []struct {
		name string
		kept bool
	}{
		{"." + liveID + ".json.tmp4242", true},
		{"." + deadID + ".json.tmp4242", false},
		{liveID + ".json.tmp", true},          // as slowpoke named them before atomicfile
		{deadID + ".json.tmp", false},         //
		{"." + deadID + ".txt.tmp4242", true}, // not a record's
		{"notes.tmp", true},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(RunsDir(), f.name), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cleanLeftovers(nil)
	for _, f := range files {
		_, err := os.Stat(filepath.Join(RunsDir(), f.name))
		if f.kept && err != nil {
			t.Errorf("%s was removed: %v", f.name, err)
		}
		if !f.kept && !os.IsNotExist(err) {
			t.Errorf("%s, a dead run's half-written record, is still there: %v", f.name, err)
		}
	}
}
