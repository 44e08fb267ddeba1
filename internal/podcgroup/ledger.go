package podcgroup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/stale"
)

// LedgerKind starts the name of a ledger file: LedgerKind-<pid>-<name>,
// the pid (in the node's PID namespace: the agent's pod shares the host's)
// of the agent that writes it.
const LedgerKind = "slowpoke-ledger"

// ledgerFile is a ledger's content: the pods' cgroups, relative to the
// hierarchy's root, that its agent may have frozen.
type ledgerFile struct {
	// Start is the agent's start time (proc.Stat.Start): a process that
	// has its pid but started at another time is not the agent, which is
	// gone.
	Start   string   `json:"start"`
	V2      bool     `json:"v2"`
	Cgroups []string `json:"cgroups"`
}

// Ledger records the pods' cgroups that this process may freeze, in a file
// of a directory on the node, before it freezes them.
type Ledger struct {
	path string
	n    Node
	mu   sync.Mutex
	rels []string
}

// OpenLedger makes dir (private to root) and returns a ledger in it for
// this process; nothing is written until Add.
func OpenLedger(dir, name string, n Node) (*Ledger, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("podcgroup: ledger: %w", err)
	}
	return &Ledger{path: filepath.Join(dir, stale.Prefix(LedgerKind)+name), n: n}, nil
}

// Path is the ledger's file.
func (l *Ledger) Path() string { return l.path }

// Add records pods and returns once the record is on disk: only then may
// they be frozen.
func (l *Ledger) Add(pods ...Pod) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	grew := false
	for _, p := range pods {
		if !slices.Contains(l.rels, p.Rel) {
			l.rels = append(l.rels, p.Rel)
			grew = true
		}
	}
	if !grew {
		return nil
	}
	self, _ := proc.Read(os.Getpid())
	b, _ := json.Marshal(ledgerFile{Start: self.Start, V2: l.n.V2, Cgroups: l.rels})
	if err := atomicfile.Write(l.path, b, 0o600); err != nil {
		return fmt.Errorf("podcgroup: ledger: %w", err)
	}
	return nil
}

// Close thaws every cgroup the ledger records and removes its file. It
// returns what it could not thaw (a pod gone meanwhile is no failure).
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := thawAll(l.n, l.rels)
	if err == nil {
		if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = rerr
		}
		l.rels = nil
	}
	return err
}

// ThawRecorded thaws what every ledger in dir whose agent is gone records,
// and removes those ledgers; it returns the cgroups it thawed. A ledger
// whose agent still runs (another run's, on the same node) is left to it.
// A ledger that cannot be read is removed; one whose cgroups cannot all be
// thawed is kept, for the next try.
func ThawRecorded(dir string, n Node) (thawed []string, err error) {
	ents, rerr := os.ReadDir(dir)
	if errors.Is(rerr, fs.ErrNotExist) {
		return nil, nil
	}
	if rerr != nil {
		return nil, fmt.Errorf("podcgroup: ledgers: %w", rerr)
	}
	var errs []error
	for _, e := range ents {
		pid, ok := stale.Creator(e.Name(), LedgerKind)
		if !ok || e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, rerr := os.ReadFile(p)
		var lf ledgerFile
		if rerr != nil || json.Unmarshal(b, &lf) != nil {
			os.Remove(p)
			continue
		}
		if pid != os.Getpid() && alive(pid, lf.Start) {
			continue
		}
		if lf.V2 != n.V2 {
			errs = append(errs, fmt.Errorf("podcgroup: ledger %s is for a v2=%v hierarchy, this node's is v2=%v", p, lf.V2, n.V2))
			continue
		}
		if terr := thawAll(n, lf.Cgroups); terr != nil {
			errs = append(errs, terr)
			continue
		}
		for _, rel := range lf.Cgroups {
			thawed = append(thawed, filepath.Join(n.Freezer, rel))
		}
		os.Remove(p)
	}
	return thawed, errors.Join(errs...)
}

// thawAll thaws the pods' cgroups at rels (those that still exist), each
// checked to be a pod's cgroup under the freezer hierarchy.
func thawAll(n Node, rels []string) error {
	var errs []error
	for _, rel := range rels {
		if !filepath.IsLocal(rel) {
			errs = append(errs, fmt.Errorf("podcgroup: %q is not a path under the hierarchy", rel))
			continue
		}
		if _, ok := PodDirName(filepath.Base(rel)); !ok {
			errs = append(errs, fmt.Errorf("podcgroup: %q is not a pod's cgroup", rel))
			continue
		}
		cg := pause.Cgroup{Path: filepath.Join(n.Freezer, rel), V2: n.V2}
		if err := cg.Thaw(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// alive says whether process pid runs (and is no zombie), started at
// start: a recycled pid is another process's.
func alive(pid int, start string) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	s, ok := proc.Read(pid)
	return ok && !s.Ended() && s.Start == start
}
