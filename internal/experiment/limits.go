package experiment

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// quotaWarnings names every service (and the load generator) that runs
// under a CPU quota (backend.Meter's CPUQuotas): a throttled process is
// already stopped, so a pause that lands while it is throttled takes
// nothing from it, and the prediction comes out too high.
func (r *Runner) quotaWarnings() []string {
	var out []string
	for _, q := range r.d.CPUQuotas() {
		who := "the load generator (this process)"
		if q.Service != "" {
			who = fmt.Sprintf("service %q", q.Service)
		}
		out = append(out, fmt.Sprintf("%s runs under a CPU quota of %.2f cores (set in %s): a throttled process is already stopped, so pauses that land while it is throttled take nothing from it and the predictions come out too high; remove the limit for the experiment (pin with CPU affinity or cpusets instead)", who, q.Cores, q.Cgroup))
	}
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

// sampleTarget samples the target's CPU time (backend.Meter's CPUTime), or
// returns nil where the backend cannot read it.
func (r *Runner) sampleTarget() *parallelism {
	cpuTime := func() (time.Duration, error) { return r.d.CPUTime(r.opts.Target) }
	if _, err := cpuTime(); err != nil {
		return nil
	}
	return sampleParallelism(cpuTime)
}

// sampleParallelism samples cpuTime, a process's CPU time, every
// parallelismEvery until the sampler ends or cpuTime fails.
func sampleParallelism(cpuTime func() (time.Duration, error)) *parallelism {
	p := &parallelism{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		read := func() time.Duration {
			cpu, err := cpuTime()
			if err != nil {
				return -1
			}
			return cpu
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
