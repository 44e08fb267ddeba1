package podcgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Node is a node's cgroup file system, as the kubelet lays pods out in it.
type Node struct {
	// Freezer is the root of the hierarchy that freezes: the v1 freezer
	// hierarchy, or the unified one.
	Freezer string
	// CPU is the root of the hierarchy that accounts CPU time: the v1
	// cpuacct hierarchy, or the unified one.
	CPU string
	// V2 says whether both are the unified (v2) hierarchy.
	V2 bool
}

// Open finds the hierarchies under root, a cgroup file system as mounted
// at /sys/fs/cgroup (on a node, or the node's mounted into an agent's
// pod): the unified hierarchy where root is one (v2 only), the v1 freezer
// and cpuacct hierarchies otherwise.
func Open(root string) (Node, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return Node{Freezer: root, CPU: root, V2: true}, nil
	}
	n := Node{Freezer: filepath.Join(root, "freezer")}
	if _, err := os.Stat(filepath.Join(n.Freezer, "cgroup.procs")); err != nil {
		return Node{}, fmt.Errorf("podcgroup: %s is neither a cgroup2 file system nor holds a v1 freezer hierarchy: %w", root, err)
	}
	for _, name := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
		if _, err := os.Stat(filepath.Join(root, name, "cpuacct.usage")); err == nil {
			n.CPU = filepath.Join(root, name)
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("podcgroup: no v1 cpuacct hierarchy under %s", root)
}

// ValidUID says whether uid has the form of a pod's UID (wire.PodUID),
// the only form used in paths.
func ValidUID(uid string) bool { return wire.PodUID(uid) }

// isPodDir says whether a cgroup directory's name is that of the pod
// uid's cgroup, with the cgroupfs or the systemd driver.
func isPodDir(name, uid string) bool {
	return name == "pod"+uid || strings.HasSuffix(name, "-pod"+strings.ReplaceAll(uid, "-", "_")+".slice")
}

// PodDirName says whether name is a pod's cgroup directory, of either
// driver, and returns the pod's UID.
func PodDirName(name string) (uid string, ok bool) {
	if u, found := strings.CutPrefix(name, "pod"); found && ValidUID(u) {
		return u, true
	}
	if rest, found := strings.CutSuffix(name, ".slice"); found {
		if i := strings.LastIndex(rest, "-pod"); i >= 0 {
			u := strings.ReplaceAll(rest[i+4:], "_", "-")
			if ValidUID(u) {
				return u, true
			}
		}
	}
	return "", false
}

// maxDepth bounds the walk for a pod's cgroup: kubepods/<qos>/pod<uid> is
// 3 deep, under a kubelet cgroup root of up to 3 more.
const maxDepth = 6

// Pod is one pod's cgroup on the node.
type Pod struct {
	UID string
	// Rel is the pod's cgroup, relative to each hierarchy's root.
	Rel string
	n   Node
}

// Find finds the cgroup of the pod whose UID is uid. It fails where the
// pod has no cgroup on this node.
func (n Node) Find(uid string) (Pod, error) {
	if !ValidUID(uid) {
		return Pod{}, fmt.Errorf("podcgroup: %.60q is not a pod UID", uid)
	}
	var found []string
	err := filepath.WalkDir(n.Freezer, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == n.Freezer {
				return err
			}
			return nil // a cgroup removed meanwhile
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(n.Freezer, p)
		if isPodDir(d.Name(), uid) {
			found = append(found, rel)
			return filepath.SkipDir
		}
		if _, ok := PodDirName(d.Name()); ok || (rel != "." && strings.Count(rel, "/")+1 >= maxDepth) {
			return filepath.SkipDir // another pod's, or too deep
		}
		return nil
	})
	switch {
	case err != nil:
		return Pod{}, fmt.Errorf("podcgroup: %w", err)
	case len(found) == 0:
		return Pod{}, fmt.Errorf("podcgroup: no cgroup of pod %s under %s (is the pod on this node?)", uid, n.Freezer)
	case len(found) > 1:
		return Pod{}, fmt.Errorf("podcgroup: pod %s has several cgroups: %s", uid, strings.Join(found, ", "))
	}
	return Pod{UID: uid, Rel: found[0], n: n}, nil
}

// Freezer is the pod's cgroup in the hierarchy that freezes.
func (p Pod) Freezer() pause.Cgroup {
	return pause.Cgroup{Path: filepath.Join(p.n.Freezer, p.Rel), V2: p.n.V2}
}

// CPU returns the CPU time every process of the pod has used, those that
// have ended included.
func (p Pod) CPU() (time.Duration, error) {
	dir := filepath.Join(p.n.CPU, p.Rel)
	if !p.n.V2 {
		b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(ns), err
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	return 0, errors.New("podcgroup: no usage_usec in " + filepath.Join(dir, "cpu.stat"))
}
