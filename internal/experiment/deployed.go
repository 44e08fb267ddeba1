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
	workloadDefaults(s, &connections, &warmup, &duration)
	mix, err := mixOf(s)
	if err != nil {
		return nil, err
	}
	var b report.Baseline
	var p50, p99 []float64
	var use cpuUse
	for range max(1, runs) {
		opts := []load.Option{load.WithConnections(connections), load.WithWarmup(warmup), load.WithDuration(duration)}
		if cpu != nil {
			opts = append(opts, load.WithWindowHooks(func() { use.start(cpu) }, func() { use.end(cpu) }))
		}
		res, err := load.RunClosed(ctx, mix, opts...)
		if err != nil {
			return nil, fmt.Errorf("measure %q as it runs: %w", s.Name, err)
		}
		if res.Completed == 0 {
			return nil, fmt.Errorf("measure %q as it runs: no request completed (%d errors, %d non-2xx): is it running at %s?", s.Name, res.Errors, res.Non2xx, s.Entry)
		}
		use.completed += res.Completed
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
	return &b, nil
}

// cpuUse adds up, over measurement windows, the services' CPU time, the
// machine's idle time and the windows' length.
type cpuUse struct {
	services  map[string]time.Duration
	idle      time.Duration
	window    time.Duration
	completed uint64

	// at the open window's start
	services0 map[string]time.Duration
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

func (u *cpuUse) start(cpu func() map[string]time.Duration) {
	u.services0, u.idle0 = cpu(), proc.CoresIdle(allCPUs())
	u.t0 = time.Now()
}

func (u *cpuUse) end(cpu func() map[string]time.Duration) {
	u.window += time.Since(u.t0)
	u.idle += proc.CoresIdle(allCPUs()) - u.idle0
	if u.services == nil {
		u.services = map[string]time.Duration{}
	}
	for name, t := range cpu() {
		if t0, ok := u.services0[name]; ok && t >= t0 {
			u.services[name] += t - t0
		}
	}
}

// perRequest is what u added up, per completed request; nil where no
// window ended or nothing completed.
func (u *cpuUse) perRequest() *report.CPUUse {
	if u.completed == 0 || u.window <= 0 {
		return nil
	}
	n := float64(u.completed)
	cores := len(allCPUs())
	busy := max(0, time.Duration(cores)*u.window-u.idle)
	c := &report.CPUUse{ServicesUS: map[string]float64{}, Cores: cores,
		MachineUS: busy.Seconds() * 1e6 / n,
		BusyPct:   100 * float64(busy) / float64(time.Duration(cores)*u.window)}
	for name, t := range u.services {
		c.ServicesUS[name] = t.Seconds() * 1e6 / n
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
	return fmt.Sprintf("the application as it runs, before slowpoke placed anything, measured %.0f req/s; under slowpoke's placement (the target on cores of its own, the others sharing the rest) its baseline is %.0f req/s, %.0f%% %s: "+
		"the predictions are for slowpoke's placement, where a different resource may bind than in yours, so the gain they show may not be the gain in your deployment",
		deployed.RPS, base.RPS, math.Abs(diff), more), true
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
