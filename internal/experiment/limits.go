package experiment

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ---- CPU quotas ----

// cpuQuota is a CPU bandwidth limit found on a process's cgroup or one of
// its parents.
type cpuQuota struct {
	Cores  float64 // quota / period
	Cgroup string  // the directory that sets it
}

// findCPUQuota returns the tightest CPU quota that applies to pid (nil for
// none), from its cpu cgroup (v1: cpu.cfs_quota_us and cpu.cfs_period_us;
// v2: cpu.max) and every parent up to the hierarchy's root.
func findCPUQuota(pid int) *cpuQuota {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil
	}
	mounts := cpuMounts()
	var best *cpuQuota
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		v2 := parts[0] == "0" && parts[1] == ""
		if !v2 && !slices.Contains(strings.Split(parts[1], ","), "cpu") {
			continue
		}
		mnt, ok := mounts[v2]
		if !ok {
			continue
		}
		for dir := filepath.Join(mnt, parts[2]); strings.HasPrefix(dir, mnt); dir = filepath.Dir(dir) {
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
func readQuota(dir string, v2 bool) *cpuQuota {
	if v2 {
		b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return nil
		}
		if cores, ok := parseCPUMax(string(b)); ok {
			return &cpuQuota{Cores: cores, Cgroup: dir}
		}
		return nil
	}
	quota, err1 := readInt(filepath.Join(dir, "cpu.cfs_quota_us"))
	period, err2 := readInt(filepath.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return nil
	}
	return &cpuQuota{Cores: float64(quota) / float64(period), Cgroup: dir}
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

// cpuMounts finds the mount points of the v1 cpu hierarchy (false) and of
// the cgroup2 file system (true).
func cpuMounts() map[bool]string {
	out := map[bool]string{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return out
	}
	defer f.Close()
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
		case qf[0] == "cgroup" && slices.Contains(strings.Split(qf[2], ","), "cpu"):
			if _, seen := out[false]; !seen {
				out[false] = pf[4]
			}
		}
	}
	return out
}

// quotaWarnings names every service (and the load generator) that runs
// under a CPU quota: a throttled process is already stopped, so a pause
// that lands while it is throttled takes nothing from it, and the
// prediction comes out too high.
func (r *Runner) quotaWarnings() []string {
	var out []string
	check := func(who string, pid int) {
		if q := findCPUQuota(pid); q != nil {
			out = append(out, fmt.Sprintf("%s runs under a CPU quota of %.2f cores (set in %s): a throttled process is already stopped, so pauses that land while it is throttled take nothing from it and the predictions come out too high; remove the limit for the experiment (pin with CPU affinity or cpusets instead)", who, q.Cores, q.Cgroup))
		}
	}
	for _, svc := range r.d.Services() {
		if svc.PID > 0 {
			check(fmt.Sprintf("service %q", svc.Name), svc.PID)
		}
	}
	check("the load generator (this process)", os.Getpid())
	return out
}

// ---- the target's parallelism ----

// parallelismEvery is how often the target's CPU clock is read during
// pre-profiling to see how many cores it uses at once.
const parallelismEvery = 20 * time.Millisecond

// Rules for concluding that a target never used more than one core: it
// was busy enough on average to show its parallelism, and even its
// busiest intervals stayed at about one core.
const (
	singleBusyMin   = 0.8  // the target's mean CPU use, in cores, at least this
	singleCoreBound = 1.15 // its 95th percentile per interval at most this
	overCoresShare  = 1.1  // a target on a cluster using this times its cpus on average is warned of
)

// parallelism samples a process's CPU clock every parallelismEvery until
// stop is called, and returns the CPU it used per interval, in cores.
type parallelism struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []float64
}

func sampleParallelism(pid int) *parallelism {
	p := &parallelism{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		clock := int32((^pid)<<3 | 2) // the process's CPU clock
		read := func() time.Duration {
			var ts unix.Timespec
			if unix.ClockGettime(clock, &ts) != nil {
				return -1
			}
			return time.Duration(ts.Nano())
		}
		t := time.NewTicker(parallelismEvery)
		defer t.Stop()
		last, lastAt := read(), time.Now()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				// The wall clock is read with the CPU clock, not when the
				// tick was due: on a busy core this goroutine runs late, and
				// the tick's time would inflate the rate.
				cpu, now := read(), time.Now()
				if cpu < 0 || last < 0 {
					return
				}
				if wall := now.Sub(lastAt); wall > 0 {
					p.mu.Lock()
					p.samples = append(p.samples, float64(cpu-last)/float64(wall))
					p.mu.Unlock()
				}
				last, lastAt = cpu, now
			}
		}
	}()
	return p
}

// end stops the sampling and returns the samples.
func (p *parallelism) end() []float64 {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.samples)
}

// usableCores decides how many cores the target really uses: q as
// assigned, or 1 when it was busy and never used more than one (a
// single-threaded target given more cores). It returns the measured 95th
// percentile and mean too, and a warning when it corrects q.
func usableCores(name string, q float64, samples []float64) (q1, p95, mean float64, warning string) {
	if len(samples) == 0 {
		return q, 0, 0, ""
	}
	sorted := slices.Sorted(slices.Values(samples))
	p95 = sorted[min(len(sorted)-1, int(0.95*float64(len(sorted))))]
	for _, s := range samples {
		mean += s
	}
	mean /= float64(len(samples))
	if q > 1 && mean >= singleBusyMin && p95 <= singleCoreBound {
		return 1, p95, mean, fmt.Sprintf("target %q has %g cores but never used more than one: busy %.2f cores on average during pre-profiling, at most %.2f in 95%% of %v intervals; predicting with q1 = 1 (a single-threaded service gains nothing from its other cores)", name, q, mean, p95, parallelismEvery)
	}
	return q, p95, mean, ""
}

// overCoresWarning says when a target that a cluster placed (where q1 is
// the spec's cpus, not a count of cores slowpoke pinned it to) used more
// cores on average during pre-profiling than q: the model then credits
// each call's reduction to too few cores, and the prediction overshoots
// (a test service without a CPU limit, cpus 1, used about 1.5 cores and
// was over-predicted by 112%). "" otherwise.
func overCoresWarning(name string, q, used float64) string {
	if math.IsInf(q, 1) || q <= 0 || used <= overCoresShare*q {
		return ""
	}
	return fmt.Sprintf("target %q used %.2f cores on average during pre-profiling, more than its cpus (%g), which the prediction takes as its cores: "+
		"the prediction overshoots; give its container a CPU limit and set cpus in the spec to it", name, used, q)
}
