package experiment

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/load"
	"github.com/slowpoke-dev/slowpoke/model"
)

// MeasureAsDeployed measures the application of s as it runs, before
// slowpoke starts, attaches to or re-places anything: runs closed-loop
// runs of the spec's workload against its entry (connections, warmup and
// duration at zero take the spec's). It is the throughput of the user's
// own placement, which a run's baseline, measured under slowpoke's
// placement, is compared with.
//
// With cpu (a reader of each service's CPU time so far; nil for none) it
// also measures where the CPU went per request (Baseline.CPU): each
// service's, and the busy time of all the machine's cores.
func MeasureAsDeployed(ctx context.Context, s *spec.Spec, connections int, warmup, duration time.Duration, runs int, cpu func() map[string]time.Duration) (*report.Baseline, error) {
	b, _, err := measureAsDeployed(ctx, s, connections, warmup, duration, runs, cpu)
	return b, err
}

// measureAsDeployed is MeasureAsDeployed with more options for each
// run's load; it also returns the last run's window.
func measureAsDeployed(ctx context.Context, s *spec.Spec, connections int, warmup, duration time.Duration, runs int, cpu func() map[string]time.Duration, more ...load.Option) (*report.Baseline, time.Duration, error) {
	workloadDefaults(s, &connections, &warmup, &duration)
	mix, err := mixOf(s)
	if err != nil {
		return nil, 0, err
	}
	var b report.Baseline
	var window time.Duration
	var p50, p99 []float64
	var use cpuUse
	for range max(1, runs) {
		opts := append([]load.Option{load.WithConnections(connections), load.WithWarmup(warmup), load.WithDuration(duration)}, more...)
		if cpu != nil {
			opts = append(opts, load.WithWindowHooks(func() { use.start(cpu) }, func() { use.ended(cpu) }))
		}
		res, err := load.RunClosed(ctx, mix, opts...)
		if err != nil {
			return nil, 0, fmt.Errorf("measure %q as it runs: %w", s.Name, err)
		}
		if res.Completed == 0 {
			return nil, 0, fmt.Errorf("measure %q as it runs: no request completed (%d errors, %d non-2xx): is it running at %s?", s.Name, res.Errors, res.Non2xx, s.Entry)
		}
		window = res.Window
		use.add(res.Completed + res.Non2xx)
		b.Runs = append(b.Runs, res.Throughput)
		b.Errors += res.Errors
		b.Non2xx += res.Non2xx
		p50 = append(p50, float64(res.Latency.P50)/1e6)
		p99 = append(p99, float64(res.Latency.P99)/1e6)
	}
	b.RPS = report.Median(b.Runs)
	b.SpreadPct = report.SpreadPct(b.Runs)
	b.P50MS, b.P99MS = report.Median(p50), report.Median(p99)
	if cpu != nil {
		b.CPU = use.perRequest()
	}
	return &b, window, nil
}

// cpuUse adds up, over measurement windows, each service's CPU time per
// request and the machine's idle time.
type cpuUse struct {
	services map[string]float64 // CPU seconds, scaled to the windows
	served   map[string]uint64  // requests of the windows each service was read over
	idle     time.Duration
	window   time.Duration
	requests uint64

	pending window // the window that ended last, until add
	cpus    []int  // the machine's, read once

	// at the open window's start
	services0 map[string]time.Duration
	read0     time.Time // when services0 was read
	idle0     time.Duration
	t0        time.Time
}

// allCPUs is every online CPU of the machine, whether or not this
// process may run on it.
func allCPUs() []int {
	if cpus := proc.OnlineCPUs(); len(cpus) > 0 {
		return cpus
	}
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// start reads, as a window opens, the services' CPU clocks (cpu) and the
// machine's idle time.
func (u *cpuUse) start(cpu func() map[string]time.Duration) {
	u.services0 = cpu()
	u.read0 = time.Now()
	if u.cpus == nil {
		u.cpus = allCPUs()
	}
	u.idle0 = proc.CoresIdle(u.cpus)
	u.t0 = time.Now()
}

// ended reads them again as the window closes. Finding a service's
// processes takes time before its clocks are read, so what the services
// used between the reads is scaled to the window by the reads' times, as
// the pauses are (inWindow).
func (u *cpuUse) ended(cpu func() map[string]time.Duration) {
	u.pending = window{length: time.Since(u.t0)}
	u.pending.idle = proc.CoresIdle(u.cpus) - u.idle0
	now := cpu()
	span := time.Since(u.read0)
	if u.pending.length <= 0 || span <= 0 {
		u.pending = window{}
		return
	}
	scale := min(1, u.pending.length.Seconds()/span.Seconds())
	u.pending.services = map[string]float64{}
	for name, t := range now {
		if t0, ok := u.services0[name]; ok && t >= t0 {
			u.pending.services[name] = (t - t0).Seconds() * scale
		}
	}
}

// add adds up the window that ended last, which served requests. A
// service not read at both its edges is left out of it.
func (u *cpuUse) add(requests uint64) {
	w := u.pending
	u.pending = window{}
	if w.length <= 0 || requests == 0 {
		return
	}
	u.window += w.length
	u.idle += w.idle
	u.requests += requests
	if u.services == nil {
		u.services, u.served = map[string]float64{}, map[string]uint64{}
	}
	for name, t := range w.services {
		u.services[name] += t
		u.served[name] += requests
	}
}

// window is one measurement window's reads, until its requests are known.
type window struct {
	length   time.Duration
	idle     time.Duration
	services map[string]float64 // CPU seconds, scaled to the window
}

// perRequest is what u added up, per request; nil where no window ended
// or nothing was served.
func (u *cpuUse) perRequest() *report.CPUUse {
	if u.requests == 0 || u.window <= 0 {
		return nil
	}
	cores := len(u.cpus)
	busy := max(0, time.Duration(cores)*u.window-u.idle)
	c := &report.CPUUse{ServicesUS: map[string]float64{}, Cores: cores,
		MachineUS: busy.Seconds() * 1e6 / float64(u.requests),
		BusyPct:   100 * float64(busy) / float64(time.Duration(cores)*u.window)}
	for name, t := range u.services {
		if n := u.served[name]; n > 0 {
			c.ServicesUS[name] = t * 1e6 / float64(n)
		}
	}
	return c
}

// placementChanged says, where the application was measured as it runs
// (Options.AsDeployed), whether slowpoke's placement changed its
// throughput beyond the two baselines' noise (and by more than
// placementChangePct), and in words what that means for the answer.
func placementChanged(deployed, base report.Baseline) (string, bool) {
	if deployed.RPS <= 0 || base.RPS <= 0 {
		return "", false
	}
	diff := (base.RPS/deployed.RPS - 1) * 100
	noise := 100 * math.Hypot(relStdErr(deployed.Runs), relStdErr(base.Runs))
	if math.Abs(diff) <= max(placementChangePct, 2*noise) {
		return "", false
	}
	more := "more"
	if diff < 0 {
		more = "less"
	}
	return fmt.Sprintf("the application %s measured %.0f req/s; under slowpoke's placement (the target on cores of its own, the others sharing the rest) its baseline is %.0f req/s, %.0f%% %s: "+
		"the predictions are for slowpoke's placement, where a different resource may bind than in yours, so the gain they show may not be the gain in your deployment (--placement keep asks the question in yours)",
		deployed.DeployedWords(), deployed.RPS, base.RPS, math.Abs(diff), more), true
}

// placementChangePct is the smallest difference (%) between the baseline
// as deployed and under slowpoke's placement that is reported as a change
// of what binds, whatever the noise.
const placementChangePct = 5

// deployedBounds sets each point's DeployedBoundRPS from the deployed
// baseline's CPU use: the most the user's placement could reach with the
// target that much cheaper per request (d times its calls per request).
func (r *Runner) deployedBounds(out *report.Results) {
	d := out.DeployedBaseline
	if d == nil || d.CPU == nil {
		return
	}
	target := d.CPU.ServicesUS[r.opts.Target] / 1e6
	for i := range out.Points {
		p := &out.Points[i]
		cut := p.ReductionUS / 1e6 * r.prof.c1
		if b := model.DeployedBound(d.RPS, d.CPU.MachineUS/1e6, target, cut, d.CPU.Cores); b > 0 && !math.IsInf(b, 0) {
			p.DeployedBoundRPS = b
		}
	}
}
