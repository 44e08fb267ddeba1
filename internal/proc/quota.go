package proc

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Quota is a CPU bandwidth limit found on a process's cgroup or one of its
// parents.
type Quota struct {
	Cores  float64 // quota / period
	Cgroup string  // the directory that sets it
}

// CPUQuota returns the tightest CPU quota that applies to pid (nil for
// none), from its cpu cgroup (v1: cpu.cfs_quota_us and cpu.cfs_period_us;
// v2: cpu.max) and every parent up to the hierarchy's root.
func CPUQuota(pid int) *Quota {
	cgs, err := Cgroups(pid)
	if err != nil {
		return nil
	}
	mounts, _ := CgroupMounts("cpu")
	var best *Quota
	// The v1 cpu hierarchy first, then the unified one (/proc's order).
	for _, v2 := range []bool{false, true} {
		path, ok := cgs["cpu"]
		if v2 {
			path, ok = cgs[""]
		}
		mnt, mounted := mounts[v2]
		if !ok || !mounted {
			continue
		}
		for dir := filepath.Join(mnt, path); strings.HasPrefix(dir, mnt); dir = filepath.Dir(dir) {
			if q := readQuota(dir, v2); q != nil && (best == nil || q.Cores < best.Cores) {
				best = q
			}
			if dir == mnt {
				break
			}
		}
	}
	return best
}

// readQuota reads the quota set on one cgroup directory (nil for none).
func readQuota(dir string, v2 bool) *Quota {
	if v2 {
		b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return nil
		}
		if cores, ok := parseCPUMax(string(b)); ok {
			return &Quota{Cores: cores, Cgroup: dir}
		}
		return nil
	}
	quota, err1 := readInt(filepath.Join(dir, "cpu.cfs_quota_us"))
	period, err2 := readInt(filepath.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return nil
	}
	return &Quota{Cores: float64(quota) / float64(period), Cgroup: dir}
}

// parseCPUMax parses cgroup v2's cpu.max ("max 100000" for no limit,
// "50000 100000" for half a core).
func parseCPUMax(s string) (cores float64, limited bool) {
	f := strings.Fields(s)
	if len(f) != 2 || f[0] == "max" {
		return 0, false
	}
	quota, err1 := strconv.ParseFloat(f[0], 64)
	period, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0, false
	}
	return quota / period, true
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// CgroupMounts finds the mount points of the v1 hierarchy that has
// controller (false) and of the cgroup2 file system (true), from
// /proc/self/mountinfo; the first of each where there are several.
func CgroupMounts(controller string) (map[bool]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[bool]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		switch {
		case qf[0] == "cgroup2":
			if _, seen := out[true]; !seen {
				out[true] = pf[4]
			}
		case qf[0] == "cgroup" && slices.Contains(strings.Split(qf[2], ","), controller):
			if _, seen := out[false]; !seen {
				out[false] = pf[4]
			}
		}
	}
	return out, sc.Err()
}
