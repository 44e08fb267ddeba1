package experiment

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/model"
)

// runCase is one Runner.Run against a fakeApp.
type runCase struct {
	name     string
	services func(s []fakeService) // changes threeServices
	app      func(a *fakeApp)      // changes the app before the run
	reduce   string                // --reduce
	opts     func(o *Options)      // changes the options
	// check looks at the results and at what the controllers were told.
	check func(t *testing.T, a *fakeApp, res *report.Results)
}

// runFake runs c against a fresh fakeApp: one repetition, short windows.
func runFake(t *testing.T, c runCase) (*fakeApp, *report.Results, error) {
	t.Helper()
	svcs := threeServices()
	if c.services != nil {
		c.services(svcs)
	}
	app := newFakeApp(t, sharedPlacement, svcs...)
	if c.app != nil {
		c.app(app)
	}
	var reds []model.Reduction
	if c.reduce != "" {
		var err error
		if reds, err = model.ParseReductions(c.reduce); err != nil {
			t.Fatal(err)
		}
	}
	var texts []string
	for _, r := range reds {
		texts = append(texts, r.Text)
	}
	o := Options{Target: "t", Reductions: reds, ReductionsText: texts, Repetitions: 1}
	if c.opts != nil {
		c.opts(&o)
	}
	r, err := New(app, o)
	if err != nil {
		return app, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Run(ctx)
	return app, res, err
}

// Runner.Run against a backend without processes: what each point is
// made of, what every controller is told, the flags the controllers'
// counters raise and the warnings the backend's readings give.
func TestRunFakeBackend(t *testing.T) {
	const u1 = 100 * time.Microsecond
	tests := []runCase{
		{name: "signals, two points", reduce: "20,50%", check: func(t *testing.T, a *fakeApp, res *report.Results) {
			if res.C1 != 1 || res.Q1 != 1 || math.Abs(res.U1US-100) > 1e-9 || !res.CallsCounted || res.Trigger != TriggerCalls {
				t.Errorf("c1 %v q1 %v u1 %v µs, counted %v, trigger %s: want 1, 1, 100, true, calls", res.C1, res.Q1, res.U1US, res.CallsCounted, res.Trigger)
			}
			if len(res.Points) != 2 || len(res.Baseline.Runs) != 1 {
				t.Fatalf("%d points, %d baseline runs: want 2 and 1", len(res.Points), len(res.Baseline.Runs))
			}
			for i, pct := range []float64{20, 50} {
				p := res.Points[i]
				d := time.Duration(pct / 100 * float64(u1))
				b := chooseBatch(d, u1, 1, res.Settings.Connections, 0)
				if math.Abs(p.ReductionPct-pct) > 1e-9 || p.Batch != b || p.Diagnostics.PausePerRoundUS != float64(model.PausePerRound(b, d, 1))/1e3 {
					t.Errorf("point %d: %.0f%%, batch %d, pause %.1f µs; want %.0f%%, %d, %v", i, p.ReductionPct, p.Batch, p.Diagnostics.PausePerRoundUS, pct, b, model.PausePerRound(b, d, 1))
				}
				if p.PredictedRPS <= 0 || len(p.Flags) != 0 {
					t.Errorf("point %d: predicted %.0f req/s, flags %v: want a prediction, no flag", i, p.PredictedRPS, p.Flags)
				}
			}
			// Every controller is told each point's slowdown, by signals,
			// the target's rounds going to every other service.
			for name, c := range a.ctls {
				msgs, cfs := c.received()
				if len(cfs) != 2 {
					t.Fatalf("%s: %d configures, want 2 (one per point)", name, len(cfs))
				}
				for i, cf := range cfs {
					if cf.Pause.Signal == nil || cf.Target != (name == "t") || cf.Batch != res.Points[i].Batch {
						t.Errorf("%s: configure %+v", name, cf)
					}
				}
				if name == "t" && len(cfs[0].Pause.Signal.Neighbours) != 2 {
					t.Errorf("the target sends rounds to %v, want the 2 others", cfs[0].Pause.Signal.Neighbours)
				}
				// A paused service's stops are extended by what its peer on
				// core 0 used meanwhile, and by the load generator there.
				if sig := cfs[0].Pause.Signal; name == "a" && (!slices.Equal(sig.CorePeers, a.ProcessIDs("front")) || len(sig.Colocated) != 1) {
					t.Errorf("a's stops are extended by peers %v and %v, want front's process group and the load generator", sig.CorePeers, sig.Colocated)
				}
				if n := count(msgs, wire.TStart); n != 2 || count(msgs, wire.TStop) != 2 {
					t.Errorf("%s: %d starts, %d stops: want 2 each", name, n, count(msgs, wire.TStop))
				}
			}
		}},
		{name: "cgroups", reduce: "50%", app: func(a *fakeApp) { a.method = pause.MethodCgroup }, check: func(t *testing.T, a *fakeApp, res *report.Results) {
			_, cfs := a.ctls["t"].received()
			g := cfs[0].Pause.Cgroup
			want := []string{"/sys/fs/cgroup/slowpoke/front", "/sys/fs/cgroup/slowpoke/a"}
			if g == nil || !slices.Equal(g.Freeze, want) || len(g.Colocated) != 1 {
				t.Errorf("the target freezes %+v, want %v extended by the load generator", g, want)
			}
			if res.Settings.PauseMethod != "cgroup" || len(res.Points[0].Flags) != 0 {
				t.Errorf("method %s, flags %v", res.Settings.PauseMethod, res.Points[0].Flags)
			}
		}},
		{name: "cores", reduce: "50%", app: func(a *fakeApp) { a.method = pause.MethodCores }, check: func(t *testing.T, a *fakeApp, res *report.Results) {
			_, cfs := a.ctls["t"].received()
			if h := cfs[0].Pause.Cores; h == nil || !slices.Equal(h.Cores, []int{0}) {
				t.Errorf("the target holds %+v, want core 0", h)
			}
			if _, others := a.ctls["a"].received(); others[0].Pause.Cores == nil || len(others[0].Pause.Cores.Cores) != 0 {
				t.Errorf("a paused service is told %+v, want no cores to hold", others[0].Pause)
			}
		}},
		{name: "pauses cut short", reduce: "50%", services: func(s []fakeService) { s[2].actualShare = 0.5 }, check: wantFlags(report.FlagPauseShortfall)},
		{name: "rounds lost", reduce: "50%", services: func(s []fakeService) { s[2].receivedShare = 0.5 }, check: wantFlags(report.FlagNeighbourUnreachable)},
		// Taking 90% of 20 ms a call off a request that takes about a
		// millisecond (anything under 36 ms will do) leaves less than
		// nothing: no throughput can be predicted.
		{name: "infeasible", reduce: "90%", services: func(s []fakeService) { s[1].cpuPerCall = 20 * time.Millisecond }, check: func(t *testing.T, _ *fakeApp, res *report.Results) {
			if p := res.Points[0]; p.PredictedRPS != 0 || !slices.Contains(p.Flags, report.FlagInfeasible) {
				t.Errorf("predicted %.0f req/s, flags %v: want 0, infeasible", p.PredictedRPS, p.Flags)
			}
		}},
		{name: "shared cores never idle", reduce: "50%", app: func(a *fakeApp) { a.idleShare = 0 }, check: wantFlags(report.FlagSharedBound)},
		{name: "quota", reduce: "50%", app: func(a *fakeApp) {
			a.quotas = []backend.Quota{{Service: "a", Cores: 0.5, Cgroup: "/sys/fs/cgroup/a"}, {Cores: 1, Cgroup: "/sys/fs/cgroup/me"}}
		}, check: func(t *testing.T, _ *fakeApp, res *report.Results) {
			for _, want := range []string{`service "a" runs under a CPU quota of 0.50 cores (set in /sys/fs/cgroup/a)`, "the load generator (this process) runs under a CPU quota of 1.00 cores"} {
				if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
					t.Errorf("warnings %q: none starts %q", res.Warnings, want)
				}
			}
		}},
		// A target on two cores whose CPU clock never moves faster than
		// one core's is predicted with q1 = 1.
		{name: "single-threaded target", reduce: "50%", services: func(s []fakeService) { s[1].cpus = 2 }, app: func(a *fakeApp) {
			a.pl = backend.Placement{Target: "t", TargetCPUs: []int{1, 2}, OtherCPUs: []int{0}}
			start := time.Now()
			a.cpuTime = func() time.Duration { return time.Since(start) }
		}, check: func(t *testing.T, _ *fakeApp, res *report.Results) {
			if res.Q1 != 1 || res.Q1Assigned != 2 || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "never used more than one") }) {
				t.Errorf("q1 %v of %v, warnings %q: want 1 of 2, and why", res.Q1, res.Q1Assigned, res.Warnings)
			}
		}},
		{name: "two cores, CPU clock unknown", reduce: "50%", services: func(s []fakeService) { s[1].cpus = 2 }, app: func(a *fakeApp) {
			a.pl = backend.Placement{Target: "t", TargetCPUs: []int{1, 2}, OtherCPUs: []int{0}}
		}, check: func(t *testing.T, _ *fakeApp, res *report.Results) {
			if res.Q1 != 2 || res.TargetCoresMean != 0 {
				t.Errorf("q1 %v, mean cores %v: want 2 as placed, unmeasured", res.Q1, res.TargetCoresMean)
			}
		}},
		// Where a cluster placed the services, q1 is the spec's cpus and
		// no stop is extended by the load generator's CPU.
		{name: "cluster", reduce: "50%", services: func(s []fakeService) { s[1].cpus = 3 }, app: func(a *fakeApp) {
			a.pl = backend.Placement{Target: "t", Cluster: true}
		}, check: func(t *testing.T, a *fakeApp, res *report.Results) {
			if res.Q1 != 3 || res.Settings.PlacementMode != string(backend.ModeCluster) {
				t.Errorf("q1 %v, placement %s: want 3, cluster", res.Q1, res.Settings.PlacementMode)
			}
			for name, c := range a.ctls {
				if _, cfs := c.received(); len(cfs[0].Pause.Signal.Colocated) != 0 || len(cfs[0].Pause.Signal.CorePeers) != 0 {
					t.Errorf("%s: stops extended on a cluster: %+v", name, cfs[0].Pause.Signal)
				}
			}
		}},
		// Not instrumented: the target's rounds follow its CPU time, a
		// "call" is a request.
		{name: "uninstrumented target", reduce: "50%", services: func(s []fakeService) { s[1].uninstrument = true }, check: func(t *testing.T, a *fakeApp, res *report.Results) {
			_, cfs := a.ctls["t"].received()
			if res.Trigger != TriggerCPU || res.CallsCounted || res.C1 != 1 || cfs[0].CPUPerCallNS <= 0 {
				t.Errorf("trigger %s, counted %v, c1 %v, CPU per call %d ns: want cpu, false, 1, > 0", res.Trigger, res.CallsCounted, res.C1, cfs[0].CPUPerCallNS)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			app, res, err := runFake(t, tt)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, app, res)
		})
	}
}

// wantFlags checks that the only point has exactly the given flags.
func wantFlags(flags ...string) func(t *testing.T, _ *fakeApp, res *report.Results) {
	return func(t *testing.T, _ *fakeApp, res *report.Results) {
		t.Helper()
		if got := res.Points[0].Flags; !slices.Equal(got, flags) {
			t.Errorf("flags %v, want %v", got, flags)
		}
	}
}

func count(msgs []wire.Type, t wire.Type) int {
	n := 0
	for _, m := range msgs {
		if m == t {
			n++
		}
	}
	return n
}

// What New and Run refuse, and how a failed start of a slowdown is
// undone.
func TestRunFakeBackendErrors(t *testing.T) {
	refused := errors.New("no such method here")
	tests := []struct {
		runCase
		want    string // in the error
		wantIs  error
		setting string   // the setting refused (a backend.SettingError), if any
		started []string // the services whose slowdown started and was stopped again
	}{
		{runCase: runCase{name: "no reductions"}, want: "no reductions given"},
		{runCase: runCase{name: "unknown target", reduce: "50%", opts: func(o *Options) { o.Target = "nosuch" }}, want: `unknown target service "nosuch"`},
		{runCase: runCase{name: "target without controller", reduce: "50%", services: func(s []fakeService) { s[1].noController = true }}, want: `target "t" does not run under a controller`},
		{runCase: runCase{name: "method refused", reduce: "50%", app: func(a *fakeApp) { a.methodErr = refused }}, wantIs: refused},
		{runCase: runCase{name: "graph rounds by cgroups", reduce: "50%", app: func(a *fakeApp) { a.method = pause.MethodCgroup },
			opts: func(o *Options) { o.Tuning.GraphRounds = true }}, want: "made with signals, not with the cgroup method"},
		{runCase: runCase{name: "target not called", reduce: "50%", services: func(s []fakeService) { s[1].uncalled = true }}, wantIs: ErrNotCalled},
		{runCase: runCase{name: "pause over the cap", reduce: "50%", opts: func(o *Options) { o.Batch, o.MaxPause = 100, time.Millisecond }}, want: "over the hard cap 1ms", setting: SettingReduction},
		{runCase: runCase{name: "time per call, calls not counted", reduce: "20us", services: func(s []fakeService) { s[1].uninstrument = true }}, want: "is a time per call"},
		{runCase: runCase{name: "calls trigger, calls not counted", reduce: "50%", services: func(s []fakeService) { s[1].uninstrument = true },
			opts: func(o *Options) { o.Trigger = TriggerCalls }}, want: "its calls cannot be counted", setting: SettingTrigger},
		{runCase: runCase{name: "validate without ground truth", reduce: "50%", opts: func(o *Options) { o.Validate = true }},
			want: `validate needs a way to really reduce "t"'s work: add ground_truth (env, base_us) to it in the spec (docs/spec.md)`},
		{runCase: runCase{name: "validate on an attached target without a command", reduce: "50%", opts: func(o *Options) { o.Validate = true },
			app: func(a *fakeApp) { a.spec.Services[1].Attach = &spec.Attach{Port: 9} }},
			want: `validate: service "t" is attached to (attach: {port: 9}) and has no command`},
		// Non-targets start first; "a" refuses, and "front", started, is
		// stopped again.
		{runCase: runCase{name: "configure refused", reduce: "50%", services: func(s []fakeService) { s[2].failConfigure = true }},
			want: "configure a:", started: []string{"front"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			app, _, err := runFake(t, tt.runCase)
			if err == nil || !strings.Contains(err.Error(), tt.want) || tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Fatalf("error %v, want one with %q (is %v)", err, tt.want, tt.wantIs)
			}
			var se *backend.SettingError
			if tt.setting != "" && (!errors.As(err, &se) || se.Setting != tt.setting) {
				t.Errorf("error %v (%#v), want a backend.SettingError for %s", err, se, tt.setting)
			}
			for _, name := range tt.started {
				msgs, _ := app.ctls[name].received()
				if count(msgs, wire.TStart) != 1 || count(msgs, wire.TStop) != 1 || slices.Index(msgs, wire.TStop) < slices.Index(msgs, wire.TStart) {
					t.Errorf("%s was told %v: want a start undone by a stop", name, msgs)
				}
			}
		})
	}
}

// A slowdown that its target's controller no longer ran when the window
// closed (a lapsed lease) fails the run instead of passing for one.
func TestCheckSlowed(t *testing.T) {
	r := &Runner{opts: Options{Target: "t"}}
	sd := &slowdown{batch: 4, pause: time.Millisecond}
	for _, tt := range []struct {
		name  string
		s     *sample
		fails bool
	}{
		{"running", &sample{slowdown: sd, after: map[string]*wire.Stats{"t": {Active: true}}}, false},
		{"ended early", &sample{slowdown: sd, after: map[string]*wire.Stats{"t": {Active: false}, "o": {Active: true}}}, true},
		{"baseline", &sample{after: map[string]*wire.Stats{"t": {Active: false}}}, false},
		{"target unread", &sample{slowdown: sd, after: map[string]*wire.Stats{"o": {Active: true}}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := r.checkSlowed(tt.s); (err != nil) != tt.fails {
				t.Fatalf("checkSlowed = %v; want an error: %v", err, tt.fails)
			}
		})
	}
}
