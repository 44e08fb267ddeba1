package local

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/guard"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

// record is what a deployment leaves on disk while it runs (in
// RunsDir()), so that a later run can tell what an earlier one left behind
// if neither its orchestrator nor its guard could end it, and end it.
type record struct {
	guard.Run
	Guard    guard.Proc      `json:"guard"`
	Services []guard.Service `json:"services"`
	Ports    map[string]int  `json:"ports"`
	Started  time.Time       `json:"started"`

	mu   sync.Mutex
	path string
}

// RunsDir is where deployments keep their records:
// $XDG_RUNTIME_DIR/slowpoke/runs, or slowpoke-UID/runs in the temporary
// directory.
func RunsDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "slowpoke", "runs")
	}
	return filepath.Join(os.TempDir(), "slowpoke-"+strconv.Itoa(os.Getuid()), "runs")
}

// checkRunsDir checks that RunsDir and the directory made for it are this
// user's and that no one else can write to them.
func checkRunsDir() error {
	dir := RunsDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := checkPrivate(d, true); err != nil {
			return err
		}
	}
	return nil
}

// checkPrivate checks that path is a directory (dir) or a regular file,
// not a symbolic link, owned by this process's user and writable by no one
// else.
func checkPrivate(path string, dir bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case dir && !fi.IsDir(), !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a %s", path, map[bool]string{true: "directory", false: "regular file"}[dir])
	case !ok:
		return fmt.Errorf("%s: cannot read its owner", path)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to another user (uid %d)", path, st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s can be written by other users (mode %v)", path, fi.Mode().Perm())
	}
	return nil
}

// confine checks that every cgroup the record names is one a run makes,
// a directory of a run-* directory under hier's root.
func (r *record) confine(hier *pause.Hierarchy) error {
	paths := slices.Clone(r.Run.Cgroups)
	for _, s := range r.Services {
		if s.Cgroup != "" {
			paths = append(paths, s.Cgroup)
		}
		if s.Attached != nil && s.Attached.Cgroup != "" {
			paths = append(paths, s.Attached.Cgroup)
		}
	}
	for _, p := range paths {
		if hier == nil {
			return fmt.Errorf("it names cgroup %s, and there is no slowpoke cgroup hierarchy here", p)
		}
		rel, err := filepath.Rel(hier.Root, p)
		parts := strings.Split(rel, string(filepath.Separator))
		if err != nil || !filepath.IsAbs(p) || filepath.Clean(p) != p || len(parts) != 2 || !strings.HasPrefix(parts[0], "run-") {
			return fmt.Errorf("it names cgroup %s, which is not a run's cgroup under %s", p, hier.Root)
		}
	}
	return nil
}

// save writes the record atomically.
func (r *record) save() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(r.path, b, 0o600)
}

// setService adds or updates a service and saves.
func (r *record) setService(s guard.Service) error {
	r.mu.Lock()
	found := false
	for i := range r.Services {
		if r.Services[i].Name == s.Name {
			r.Services[i], found = s, true
		}
	}
	if !found {
		r.Services = append(r.Services, s)
	}
	r.mu.Unlock()
	return r.save()
}

// runOrchestrator is the orchestrator that a run's id (run-PID-START, the
// name of its record and of its cgroups' directory) names; a PID of 0 if
// id is not of that form.
func runOrchestrator(id string) guard.Proc {
	pid, start, ok := strings.Cut(strings.TrimPrefix(id, "run-"), "-")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil || !strings.HasPrefix(id, "run-") {
		return guard.Proc{}
	}
	return guard.Proc{PID: n, Start: start}
}

// cleanLeftovers ends what earlier runs left: the services and controllers
// of every recorded run whose orchestrator and guard are both gone, and
// every slowpoke cgroup of a run that is gone. It returns one line per
// earlier run it cleaned up after. A run whose orchestrator is alive is
// left alone: it is another run in progress.
func cleanLeftovers(hier *pause.Hierarchy) []string {
	var notes []string
	var recs []string
	if err := checkRunsDir(); err == nil {
		recs, _ = filepath.Glob(filepath.Join(RunsDir(), "*.json"))
	}
	// A record half written when its run was killed: removed once that
	// run's orchestrator is gone.
	removeHalfWritten()
	for _, path := range recs {
		if note := cleanRecordedRun(path, hier); note != "" {
			notes = append(notes, note)
		}
	}
	if hier == nil {
		return notes
	}
	// Cgroups of runs without a record: "run-PID-START" names the
	// orchestrator.
	dirs, _ := filepath.Glob(filepath.Join(hier.Root, "run-*"))
	for _, dir := range dirs {
		if note := cleanRunCgroups(hier, dir); note != "" {
			notes = append(notes, note)
		}
	}
	return notes
}

// removeHalfWritten removes from RunsDir the temporary files of records
// that were being written when their runs were killed, each once its run's
// orchestrator is gone (and only those this user owns).
func removeHalfWritten() {
	if err := checkRunsDir(); err != nil {
		return
	}
	ents, _ := os.ReadDir(RunsDir())
	for _, e := range ents {
		dest, ok := atomicfile.Leftover(e.Name())
		if !ok {
			// Written by slowpoke before atomicfile named its
			// temporary files.
			dest, ok = strings.CutSuffix(e.Name(), ".tmp")
		}
		id, isRecord := strings.CutSuffix(dest, ".json")
		path := filepath.Join(RunsDir(), e.Name())
		if ok && isRecord && !runOrchestrator(id).Alive() && checkPrivate(path, false) == nil {
			os.Remove(path)
		}
	}
}

// cleanRecordedRun ends what the run recorded at path left, if its
// orchestrator is gone, once its guard has had the time to end it. It
// returns a line saying what it ended, or why it ignored the record; ""
// for neither.
func cleanRecordedRun(path string, hier *pause.Hierarchy) string {
	// A record names processes and cgroups to end: only one this
	// user wrote, in a directory no one else can write to, is read.
	if err := checkPrivate(path, false); err != nil {
		return fmt.Sprintf("ignored run record %s: %v", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		os.Remove(path)
		return ""
	}
	if err := r.confine(hier); err != nil {
		return fmt.Sprintf("ignored run record %s: %v", path, err)
	}
	r.Record = path
	if r.Orchestrator.Alive() {
		return ""
	}
	// A guard still alive is ending the run: give it the time it needs.
	for deadline := time.Now().Add(2*guard.Grace + 2*time.Second); r.Guard.Alive() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	quiet := func(string, ...any) {}
	ended := guard.End(r.Run, r.Services, nil, quiet)
	if len(ended) == 0 {
		return ""
	}
	return fmt.Sprintf("an earlier run (orchestrator PID %d, started %s) did not end cleanly; ended what it left: %s",
		r.Orchestrator.PID, r.Started.Local().Format(time.DateTime), strings.Join(ended, ", "))
}

// cleanRunCgroups ends what the cgroups in dir, a run's directory under
// hier's root, still hold if that run's orchestrator is gone (attached
// processes are continued and moved out, never ended), and removes them
// and dir. It returns a line saying what it ended, or "".
func cleanRunCgroups(hier *pause.Hierarchy, dir string) string {
	orch := runOrchestrator(filepath.Base(dir))
	if orch.Alive() {
		return ""
	}
	pid := orch.PID
	leaves, _ := filepath.Glob(filepath.Join(dir, "*"))
	var cgs []string
	for _, l := range leaves {
		if st, err := os.Stat(l); err == nil && st.IsDir() {
			cgs = append(cgs, l)
		}
	}
	var ended []string
	for _, p := range cgs {
		cg := pause.Cgroup{Path: p, V2: hier.V2}
		if strings.HasPrefix(filepath.Base(p), AttachedPrefix) {
			// Processes slowpoke did not start: never ended. Without
			// the record, where they came from is not known: they go
			// to the cgroup slowpoke's own directory is in.
			if pids, _ := attach.Release(cg, filepath.Dir(hier.Root)); len(pids) > 0 {
				ended = append(ended, fmt.Sprintf("%s (PIDs %v, attached: continued and moved to %s, not ended)", filepath.Base(p), pids, filepath.Dir(hier.Root)))
			}
			cg.Remove()
			continue
		}
		if pids := cg.Kill(guard.Grace); len(pids) > 0 {
			ended = append(ended, fmt.Sprintf("%s (PIDs %v)", filepath.Base(p), pids))
		}
		cg.Remove()
	}
	os.Remove(dir)
	if len(ended) == 0 {
		return ""
	}
	return fmt.Sprintf("cgroups of an earlier run (orchestrator PID %d) still held processes; ended %s", pid, strings.Join(ended, ", "))
}
