package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/load"
)

// Measure runs one measurement window: without slowdown when batch is 0,
// otherwise with rounds every batch target calls and the given pause per
// round on every other service. It returns the load generator's result and
// the target controller's counters after the run (nil without slowdown).
func (r *Runner) Measure(ctx context.Context, batch int, pause time.Duration, neighbours map[string][]string) (*load.Result, *wire.Stats, error) {
	var sd *slowdown
	if batch > 0 {
		sd = &slowdown{batch: batch, pause: pause}
	}
	s, err := r.run(ctx, sd, neighbours, r.opts.Warmup, false)
	if err != nil {
		return nil, nil, err
	}
	return s.res, s.rounds[r.opts.Target], nil
}

// sample is one measured run.
type sample struct {
	res      *load.Result
	before   map[string]*wire.Stats // at the edges of the measurement window
	after    map[string]*wire.Stats
	idle0    map[string]*wire.Stats // before the load started and after it drained (pre-profiling only)
	idle1    map[string]*wire.Stats
	rounds   map[string]*wire.Stats // controller counters after the slowdown stopped
	from     time.Time              // when the measurement window began
	window   time.Duration
	idle     time.Duration // idle time of the shared cores in the window, summed over them
	loadCPU  time.Duration // this process's CPU time in the window: the load generator's, mostly
	parallel []float64     // pre-profiling: the target's CPU per interval, in cores (see parallelism)
	slowdown *slowdown
}

type slowdown struct {
	batch int
	pause time.Duration
}

func (s *sample) delta(svc string) (calls uint64, cpu time.Duration) {
	return statsDelta(s.before[svc], s.after[svc])
}

// idleDelta counts from before the load started to after it drained:
// nothing moves while these snapshots are taken, so counts read from
// different services, at slightly different moments, agree exactly.
func (s *sample) idleDelta(svc string) (calls uint64, cpu time.Duration) {
	if s.idle0 == nil {
		return s.delta(svc)
	}
	return statsDelta(s.idle0[svc], s.idle1[svc])
}

func statsDelta(b, a *wire.Stats) (calls uint64, cpu time.Duration) {
	if a == nil || b == nil {
		return 0, 0
	}
	return a.Calls - b.Calls, time.Duration(a.CPUNS - b.CPUNS)
}

// responses counts the user requests that completed in the window, failed
// or not: all of them reached the services.
func (s *sample) responses() uint64 { return s.res.Completed + s.res.Non2xx }

// progress prints a line of a throughput experiment: after the caller's
// prefix (ProgressPrefix), or "[step/steps ETA left] "; latency and pool
// runs print theirs with stepper.progress.
func (r *Runner) progress(format string, args ...any) {
	if r.opts.Progress == nil {
		return
	}
	prefix := ""
	if r.opts.ProgressPrefix != nil {
		prefix = r.opts.ProgressPrefix(r.step, r.steps)
	} else if r.steps > 0 {
		eta := ""
		if left, ok := timeLeft(r.start, r.step, r.steps); ok {
			eta = " ETA " + left.String()
		}
		prefix = fmt.Sprintf("[%2d/%d%s] ", r.step, r.steps, eta)
	}
	fmt.Fprintf(r.opts.Progress, prefix+format+"\n", args...)
}

// snapshot reads every controller's stats in parallel.
func (r *Runner) snapshot() map[string]*wire.Stats { return snapshot(r.d) }

// snapshot reads the stats of every controller of d in parallel; a
// controller that does not answer is left out.
func snapshot(d backend.Backend) map[string]*wire.Stats {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]*wire.Stats{}
	for _, svc := range d.Services() {
		if svc.Control == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, err := svc.Control.Stats(); err == nil {
				mu.Lock()
				out[svc.Name] = st
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// drainTime lets in-flight work finish before the idle snapshot.
const drainTime = 300 * time.Millisecond

// run measures one window, with a slowdown when sd is not nil. With idle, it
// also snapshots the counters before the load starts and after it drained.
func (r *Runner) run(ctx context.Context, sd *slowdown, neighbours map[string][]string, warmup time.Duration, idle bool) (*sample, error) {
	svcs := r.d.Services()
	if err := resetAll(svcs); err != nil {
		return nil, err
	}
	if sd != nil {
		// Sorts svcs: non-targets first, target last.
		if err := r.startSlowdown(svcs, sd, neighbours); err != nil {
			return nil, err
		}
	}
	s := &sample{slowdown: sd}
	if idle {
		s.idle0 = r.snapshot()
	}
	res, err := r.runLoad(ctx, s, warmup, idle)
	if sd != nil {
		// Target first: no new rounds, then everyone resumes.
		slices.Reverse(svcs)
		for _, svc := range svcs {
			if svc.Control != nil {
				svc.Control.Stop()
			}
		}
		s.rounds = r.snapshot()
	}
	if err != nil {
		return nil, err
	}
	if err := r.checkSlowed(s); err != nil {
		return nil, err
	}
	if idle {
		// Requests cancelled at the end of the run may still be working
		// their way through the services.
		time.Sleep(drainTime)
		s.idle1 = r.snapshot()
	}
	s.res = res
	return s, nil
}

// checkSlowed returns an error where the target's controller did not
// answer at the end of s's slowdown window, or where the slowdown ended
// before its measurement window did: the target's controller no longer ran it when
// the window closed (its lease lapsed, the orchestrator's renewals held up,
// or something else stopped it), so the window measured the application
// partly without it, and nothing in the throughput would say so.
func (r *Runner) checkSlowed(s *sample) error {
	if s.slowdown == nil {
		return nil
	}
	st := s.after[r.opts.Target]
	if st == nil {
		return fmt.Errorf("%s's controller did not answer when the slowdown's measurement window closed: what the window's pauses inserted, and the target's calls and CPU time, are unknown", r.opts.Target)
	}
	if !st.Active {
		return fmt.Errorf("the slowdown ended before the measurement window did: %s's controller was no longer running it when the window closed (its lease lapsed, or something stopped it; see its log), so the window measured the application partly without it", r.opts.Target)
	}
	return nil
}

// resetAll resets the counters of every service's controller.
func resetAll(svcs []*backend.Service) error {
	for _, svc := range svcs {
		if svc.Control != nil {
			if err := svc.Control.Reset(); err != nil {
				return fmt.Errorf("reset %s: %w", svc.Name, err)
			}
		}
	}
	return nil
}

// startSlowdown configures and starts sd on every service that takes part,
// in the order it sorts svcs to: non-targets first, target last, so that
// every pauser is listening before the first round. A failed start stops
// the slowdowns already started (target first, as at the end of a run),
// so that the next run, or the next target's experiment under rank,
// starts from rest.
func (r *Runner) startSlowdown(svcs []*backend.Service, sd *slowdown, neighbours map[string][]string) error {
	if r.d.Service(r.opts.Target).Control == nil {
		return errors.New("a slowdown needs the services to run under controllers")
	}
	r.epoch++
	sort.SliceStable(svcs, func(i, j int) bool { return svcs[j].Name == r.opts.Target && svcs[i].Name != r.opts.Target })
	var started []*backend.Service
	undo := func() {
		for _, svc := range slices.Backward(started) {
			svc.Control.Stop()
		}
	}
	for _, svc := range svcs {
		if svc.Control == nil {
			continue
		}
		cf, skip := r.configure(svc.Name, sd, neighbours)
		if skip {
			continue
		}
		if err := svc.Control.Configure(cf); err != nil {
			undo()
			return fmt.Errorf("configure %s: %w", svc.Name, err)
		}
		started = append(started, svc)
		if err := svc.Control.Start(); err != nil {
			undo()
			return fmt.Errorf("start slowdown on %s: %w", svc.Name, err)
		}
	}
	return nil
}

// runLoad runs the workload (closed loop, or open loop at the tuning's
// rate) and records in s what the window's edges saw: the controllers'
// counters, the paused cores' idle time, the load generator's CPU time
// and, with idle (pre-profiling), the target's parallelism.
func (r *Runner) runLoad(ctx context.Context, s *sample, warmup time.Duration, idle bool) (*load.Result, error) {
	var t0 time.Time
	var idle0 time.Duration
	// Worked out once, not in the window's edge hooks: under dedicated
	// placement it is a sorted union of the services' cores.
	paused := r.d.Placement().PausedCPUs()
	var par *parallelism
	opts := []load.Option{load.WithWarmup(warmup), load.WithDuration(r.opts.Duration),
		// The controllers' snapshots are the last thing before the
		// window opens and the first after it closes: what they count
		// between them and the window's edges is scaled away (inWindow),
		// so the less there is, the better.
		load.WithWindowHooks(func() {
			idle0 = r.d.IdleTime(paused)
			s.loadCPU = -processCPUTime()
			if idle {
				par = r.sampleTarget()
			}
			s.before = r.snapshot()
			t0 = time.Now()
			s.from = t0
		}, func() {
			s.window = time.Since(t0)
			s.after = r.snapshot()
			s.loadCPU += processCPUTime()
			if par != nil {
				s.parallel = par.end()
				par = nil
			}
			s.idle = r.d.IdleTime(paused) - idle0
		})}
	defer func() {
		if par != nil { // the run failed before its window ended
			par.end()
		}
	}()
	if r.opts.Tuning.OpenLoopRate > 0 {
		return load.RunOpen(ctx, r.mix, r.opts.Tuning.OpenLoopRate, opts...)
	}
	return load.RunClosed(ctx, r.mix, append(opts, load.WithConnections(r.opts.Connections))...)
}

// configure is a service's part of a slowdown run (skip: it takes none):
// what every method shares, and what the run's method adds (pausing).
func (r *Runner) configure(name string, sd *slowdown, neighbours map[string][]string) (cf wire.Configure, skip bool) {
	target := name == r.opts.Target
	cf = wire.Configure{Epoch: r.epoch, Target: target, Batch: sd.batch, PausePerRoundNS: int64(sd.pause)}
	if target && r.trigger == TriggerCPU && r.prof != nil {
		cf.CPUPerCallNS = max(1, int64(r.prof.u1))
	}
	return cf, pausings[r.method].configure(r, &cf, name, neighbours)
}

// colocated lists the never-paused processes whose CPU use during a stop
// of svc extends it: this process, which runs the load generator, when it
// shares svc's cores (always, but under dedicated placement). In the ground
// truth that work competes with the service, so a stop must leave the
// service the time it took. The controllers are not listed: their work
// during a stop is the stop's own handling (signals, timers, rounds), which
// the ground truth does not have, and extending stops by it made every
// stop on a 9-service chain 30-45% longer than asked at 1 ms pauses, an
// under-prediction of up to 15%.
func (r *Runner) colocated(svc string) []int {
	if r.opts.Tuning.NoColocatedExtension || !r.d.Placement().SharesLoadCores(svc) {
		return nil
	}
	return []int{os.Getpid()}
}

// corePeers lists the other paused services that share a core with svc
// (none with --no-peer-extension): a stop is extended by the CPU they used
// during it (wire.SignalPause.CorePeers).
//
// Why: with a pause lead, the stops of services on one core are due at the
// same moment, but their controllers wake in turn on that core and start
// them 0.5-0.7 ms late on average (stop_late_min_us, stop_late_max_us, on
// a 7-service configuration with 3-4 ms pauses), and a service still
// running uses the core that the pause should leave idle. None for the
// target, which never pauses, and in uncoordinated mode, where stops are
// not meant to coincide.
func (r *Runner) corePeers(svc string) []int {
	if r.opts.Tuning.NoPeerExtension || r.opts.Tuning.Uncoordinated || svc == r.opts.Target {
		return nil
	}
	p := r.d.Placement()
	var pids []int
	for _, o := range r.d.Services() {
		if o.Name == svc || o.Name == r.opts.Target || !p.SharesCores(svc, o.Name) {
			continue
		}
		pids = append(pids, r.d.ProcessIDs(o.Name)...)
	}
	// An attached service may have many processes: those past the bound
	// are left out (a stop is extended by less than they used).
	return pids[:min(len(pids), wire.MaxColocated)]
}

// processCPUTime is this process's CPU time, all threads: the load
// generator's, mostly.
func processCPUTime() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// summarised says whether k summarises rounds, or a loss (not only the
// running sum of a run under way).
func summarised(k wire.NodeSkew) bool { return k.Rounds > 0 || k.Missing > 0 || k.Lost != "" }

// nodeSkews is the round skew across nodes over the run (a run on
// Kubernetes whose pods span nodes): the target controller's NodeSkews
// in the latest snapshot of its counters, which count every round since
// its agent started; nil where no snapshot has them.
func (r *Runner) nodeSkews(points []*measuredPoint) []report.NodeSkew {
	var latest *wire.Stats
	consider := func(samples []*sample) {
		for _, s := range samples {
			if st := s.after[r.opts.Target]; st != nil && slices.ContainsFunc(st.NodeSkews, summarised) && (latest == nil || st.TakenUnixNS > latest.TakenUnixNS) {
				latest = st
			}
		}
	}
	consider(r.base)
	for _, p := range points {
		consider(p.samples)
		consider(p.truth)
	}
	if latest == nil {
		return nil
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	var out []report.NodeSkew
	for _, k := range latest.NodeSkews {
		if !summarised(k) {
			continue // the rounds of a run under way: summarised when it ends
		}
		out = append(out, report.NodeSkew{Node: k.Node, Rounds: k.Rounds, Missing: k.Missing, Capped: k.Capped, Timed: k.Timed, Refrozen: k.Refrozen,
			StartP50US: us(k.StartP50NS), StartP99US: us(k.StartP99NS), StartMaxUS: us(k.StartMaxNS),
			EndP50US: us(k.EndP50NS), EndP99US: us(k.EndP99NS), EndMaxUS: us(k.EndMaxNS),
			LateStartP50US: us(k.LateStartP50NS), LateEndP50US: us(k.LateEndP50NS),
			LongerP1US: us(k.LongerP1NS), LongerP50US: us(k.LongerP50NS), LongerP99US: us(k.LongerP99NS), Lost: k.Lost,
			DeliverStartP50US: us(k.DeliverStartP50NS), DeliverStartP99US: us(k.DeliverStartP99NS),
			DeliverEndP50US: us(k.DeliverEndP50NS), DeliverEndP99US: us(k.DeliverEndP99NS)})
	}
	return out
}
