package attach

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// Find returns the processes a spec's attach section names: for a port or
// a PID file, the one process it names (its children are found with Tree);
// for a cgroup, every process in it and in the cgroups below it; for a
// container, every process of its cgroup (ByContainer).
func Find(a *spec.Attach) ([]int, error) {
	switch {
	case a == nil:
		return nil, errors.New("attach: nothing to attach to")
	case a.Port != 0:
		pid, err := ByPort(a.Port)
		if err != nil {
			return nil, err
		}
		return []int{pid}, nil
	case a.PIDFile != "":
		pid, err := ByPIDFile(a.PIDFile)
		if err != nil {
			return nil, err
		}
		return []int{pid}, nil
	case a.Cgroup != "":
		return ByCgroup(a.Cgroup)
	case a.Container != "":
		return ByContainer(a.Container)
	}
	return nil, errors.New("attach: no port, pid_file, cgroup or container given")
}

// ByPort returns the process that listens on TCP port (IPv4 or IPv6, any
// address) in this network namespace. Where several processes hold the
// listening socket (a pre-fork server's workers inherit it), it returns
// the one the others descend from; where they are unrelated, it fails.
func ByPort(port int) (int, error) {
	holders, listening := PortHolders(port)
	if !listening {
		return 0, fmt.Errorf("attach: nothing listens on TCP port %d here (is the service running, in this network namespace?)", port)
	}
	if len(holders) == 0 {
		return 0, fmt.Errorf("attach: port %d is listened on, but no process here holds its socket that this user may see (another user's process needs root)", port)
	}
	root, err := topmost(holders)
	if err != nil {
		return 0, fmt.Errorf("attach: port %d: %w", port, err)
	}
	return root, nil
}

// PortHolders lists, in PID order, the processes that hold a socket
// listening on TCP port (IPv4 or IPv6) in this network namespace, and says
// whether any socket listens there at all (it may be held by processes
// this user cannot see).
func PortHolders(port int) (holders []int, listening bool) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, ino := range listeningInodes(f, port) {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return nil, false
	}
	return socketHolders(inodes), true
}

// listeningInodes returns the inodes of the sockets listening on port in a
// /proc/net/tcp-format file.
func listeningInodes(path string, port int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st ... inode (field 9)
		if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
			out = append(out, fields[9])
		}
	}
	return out
}

// socketHolders lists the processes with a descriptor on one of the
// sockets, in PID order.
func socketHolders(inodes map[string]bool) []int {
	var out []int
	for _, st := range proc.All() {
		dir := "/proc/" + strconv.Itoa(st.PID) + "/fd"
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			link, err := os.Readlink(dir + "/" + fd.Name())
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				out = append(out, st.PID)
				break
			}
		}
	}
	return out
}

// topmost returns the one process of pids that every other descends from.
func topmost(pids []int) (int, error) {
	if len(pids) == 1 {
		return pids[0], nil
	}
	parents := parentMap()
	for _, cand := range pids {
		all := true
		for _, p := range pids {
			if p != cand && !descends(parents, p, cand) {
				all = false
				break
			}
		}
		if all {
			return cand, nil
		}
	}
	return 0, fmt.Errorf("processes %v share it and none is the parent of the others: attach by pid_file or cgroup instead", pids)
}

// descends reports whether pid is a descendant of anc.
func descends(parents map[int]int, pid, anc int) bool {
	for i := 0; i < 4096 && pid > 1; i++ {
		pid = parents[pid]
		if pid == anc {
			return true
		}
	}
	return false
}

func parentMap() map[int]int {
	m := map[int]int{}
	for _, st := range proc.All() {
		m[st.PID] = st.PPID
	}
	return m
}

// ByPIDFile reads a PID file (a decimal PID, optionally followed by
// anything on later lines) and checks that the process runs.
func ByPIDFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("attach: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("attach: %s does not hold a PID (%.40q)", path, line)
	}
	if st, ok := proc.Read(pid); !ok || st.Ended() {
		return 0, fmt.Errorf("attach: %s names PID %d, which is not running (a stale PID file?)", path, pid)
	}
	return pid, nil
}

// ByCgroup lists the processes of a cgroup and of every cgroup below it.
// path is the cgroup's directory, or its path as /proc/PID/cgroup writes
// it, looked up under each mounted cgroup hierarchy (the unified one
// first).
func ByCgroup(path string) ([]int, error) {
	dir, err := CgroupDir(path)
	if err != nil {
		return nil, err
	}
	var out []int
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("attach: cgroup %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("attach: cgroup %s holds no process (is the service running?)", dir)
	}
	slices.Sort(out)
	return out, nil
}

// CgroupDir finds the directory of a cgroup given as a directory or as a
// path inside a hierarchy.
func CgroupDir(path string) (string, error) {
	if isCgroupDir(path) {
		return filepath.Clean(path), nil
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return "", fmt.Errorf("attach: %w", err)
	}
	for _, m := range mounts {
		if p := filepath.Join(m, filepath.Clean("/"+path)); isCgroupDir(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("attach: no cgroup %s (looked in %s)", path, strings.Join(mounts, ", "))
}

func isCgroupDir(p string) bool {
	_, err := os.Stat(filepath.Join(p, "cgroup.procs"))
	return filepath.IsAbs(p) && err == nil
}

// cgroupMounts lists the mount points of cgroup file systems: the unified
// (v2) hierarchy first, then the v1 hierarchies.
func cgroupMounts() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var v2, v1 []string
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if !ok || len(pf) < 5 || len(qf) < 1 {
			continue
		}
		switch qf[0] {
		case "cgroup2":
			v2 = append(v2, pf[4])
		case "cgroup":
			v1 = append(v1, pf[4])
		}
	}
	return append(v2, v1...), nil
}

// Tree returns roots and every process that descends from one of them,
// live ones only (no zombies), in PID order.
func Tree(roots []int) []int {
	all := proc.All()
	children := map[int][]int{}
	alive := map[int]bool{}
	for _, st := range all {
		if !st.Ended() {
			children[st.PPID] = append(children[st.PPID], st.PID)
			alive[st.PID] = true
		}
	}
	seen := map[int]bool{}
	var out []int
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] || !alive[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		queue = append(queue, children[p]...)
	}
	slices.Sort(out)
	return out
}
