//go:build lab

package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// PauseCostOptions configure the pause-cost benchmark.
type PauseCostOptions struct {
	Dir        string   // specs, logs, results
	ExtraPath  []string // where slowpoke-emu is found
	Services   []int    // numbers of services sharing the paused cores
	Methods    []pause.Method
	Reps       int
	Warmup     time.Duration
	Duration   time.Duration
	Load       float64       // share of the paused cores the load keeps busy without pauses
	RoundsPerS float64       // rounds a second
	Pause      time.Duration // pause per round
	WorkUS     float64       // CPU work per call of each paused service
	Progress   io.Writer
	Placement  local.Mode
}

// PauseCostRow is one (services, method) cell.
type PauseCostRow struct {
	Services int     `json:"services"`
	Method   string  `json:"method"`
	RateRPS  float64 `json:"rate_rps"`
	// CostPerRoundUS is the paused cores' extra busy time per round, the
	// pauses themselves (a holder's spinning) left out: what pausing costs
	// those cores beyond the pause (median over repetitions, and each
	// repetition's).
	CostPerRoundUS float64   `json:"cost_per_round_us"`
	CostRunsUS     []float64 `json:"cost_runs_us"`
	// The same split by who spent it: the services, the controllers (a
	// holder's spinning left out) and the load generator.
	ServicesUS    float64 `json:"services_us"`
	ControllersUS float64 `json:"controllers_us"`
	LoadUS        float64 `json:"load_us"`
	RoundsPerS    float64 `json:"rounds_per_s"`
	// SharePct is the cost per round times the rounds a second, as a share
	// of the paused cores' capacity.
	SharePct float64 `json:"share_pct"`
}

// PauseCostResult is the benchmark's output.
type PauseCostResult struct {
	PauseUS    float64        `json:"pause_us"`
	RoundsPerS float64        `json:"rounds_per_s"`
	WorkUS     float64        `json:"work_us"`
	Reps       int            `json:"reps"`
	Rows       []PauseCostRow `json:"rows"`
}

// PauseCost measures what one round of pauses costs the cores the paused
// services share, for each pause method, as the number of services on
// those cores grows. An entry service calls the target (on a core of its
// own) and then every other service in turn; the load is open loop at a
// fixed rate, so that what rounds cost shows up as CPU time rather than
// as throughput. Each repetition measures a run without rounds and one
// with rounds of every method, interleaved, and the cost is the paused
// cores' extra busy time per round (the holding threads' spinning, which
// is the pause itself, left out).
func PauseCost(ctx context.Context, o PauseCostOptions) (*PauseCostResult, error) {
	if len(o.Services) == 0 {
		o.Services = []int{2, 5, 10, 20}
	}
	if len(o.Methods) == 0 {
		o.Methods = []pause.Method{pause.MethodSignal, pause.MethodCgroup, pause.MethodCores}
	}
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Second
	}
	if o.Load <= 0 {
		o.Load = 0.5
	}
	if o.RoundsPerS <= 0 {
		o.RoundsPerS = 100
	}
	if o.Pause <= 0 {
		o.Pause = time.Millisecond
	}
	if o.WorkUS <= 0 {
		o.WorkUS = 20
	}
	say := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	out := &PauseCostResult{PauseUS: float64(o.Pause.Microseconds()), RoundsPerS: o.RoundsPerS, WorkUS: o.WorkUS, Reps: o.Reps}
	for _, n := range o.Services {
		rows, err := pauseCostFor(ctx, o, n, say)
		if err != nil {
			return nil, err
		}
		out.Rows = append(out.Rows, rows...)
	}
	return out, nil
}

func pauseCostFor(ctx context.Context, o PauseCostOptions, n int, say func(string, ...any)) ([]PauseCostRow, error) {
	dir := filepath.Join(o.Dir, fmt.Sprintf("n%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s, err := pauseCostSpec(dir, n, o.WorkUS)
	if err != nil {
		return nil, err
	}
	d, err := local.Start(ctx, s, local.Options{Options: backend.Options{Target: "target"}, Placement: o.Placement, LogDir: filepath.Join(dir, "logs"), ExtraPath: o.ExtraPath})
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	newRunner := func(m pause.Method, rate float64) (*experiment.Runner, error) {
		return experiment.New(d, experiment.Options{Target: "target", Warmup: o.Warmup, Duration: o.Duration, Tuning: experiment.Tuning{OpenLoopRate: rate}, PauseMethod: m})
	}
	// The paused cores' busy time per request, from a light load, sets the
	// rate that keeps them o.Load busy.
	probe, err := newRunner(pause.MethodSignal, 100)
	if err != nil {
		return nil, err
	}
	w, err := probe.MeasureWindow(ctx, 0, 0)
	if err != nil {
		return nil, err
	}
	if w.Result.Completed == 0 {
		return nil, fmt.Errorf("%d services: no request completed in the probe", n)
	}
	perReq := w.PausedBusy.Seconds() / float64(w.Result.Completed)
	cores := float64(len(d.Placement().PausedCPUs()))
	rate := o.Load * cores / perReq
	batch := max(1, int(rate/o.RoundsPerS+0.5))
	say("%d services: %.0f µs of the paused cores per request; %.0f requests/s, a round every %d requests", n, perReq*1e6, rate, batch)
	type acc struct{ cost, svc, ctl, load, rps []float64 }
	accs := map[pause.Method]*acc{}
	for _, m := range o.Methods {
		accs[m] = &acc{}
	}
	for rep := 0; rep < o.Reps; rep++ {
		order := slices.Clone(o.Methods)
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for _, m := range order {
			r, err := newRunner(m, rate)
			if err != nil {
				return nil, fmt.Errorf("%d services, %s: %w", n, m, err)
			}
			base, err := r.MeasureWindow(ctx, 0, 0)
			if err != nil {
				return nil, err
			}
			w, err := r.MeasureWindow(ctx, batch, o.Pause)
			if err != nil {
				return nil, err
			}
			if w.Rounds == 0 {
				return nil, fmt.Errorf("%d services, %s: no rounds", n, m)
			}
			// Per second, so that the two windows' lengths do not matter.
			per := func(x time.Duration, win time.Duration) float64 { return x.Seconds() / win.Seconds() }
			roundsPerS := float64(w.Rounds) / w.Length.Seconds()
			extra := func(a, b time.Duration) float64 {
				return (per(a, w.Length) - per(b, base.Length)) / roundsPerS * 1e6
			}
			svcs := func(x *experiment.Window) (t time.Duration) {
				for name, c := range x.ServicesCPU {
					if name != "target" {
						t += c
					}
				}
				return t
			}
			a := accs[m]
			a.cost = append(a.cost, extra(w.PausedBusy-w.HeldCPU, base.PausedBusy))
			a.svc = append(a.svc, extra(svcs(w), svcs(base)))
			a.ctl = append(a.ctl, extra(w.ControllersCPU-w.HeldCPU, base.ControllersCPU))
			a.load = append(a.load, extra(w.LoadCPU, base.LoadCPU))
			a.rps = append(a.rps, roundsPerS)
			say("  rep %d %-6s %.0f rounds/s: %.0f µs of the paused cores per round (services %.0f, controllers %.0f, load generator %.0f)",
				rep+1, m, roundsPerS, a.cost[len(a.cost)-1], a.svc[len(a.svc)-1], a.ctl[len(a.ctl)-1], a.load[len(a.load)-1])
		}
	}
	var rows []PauseCostRow
	for _, m := range o.Methods {
		a := accs[m]
		row := PauseCostRow{Services: n, Method: string(m), RateRPS: rate, CostPerRoundUS: report.Median(a.cost), CostRunsUS: a.cost,
			ServicesUS: report.Median(a.svc), ControllersUS: report.Median(a.ctl), LoadUS: report.Median(a.load), RoundsPerS: report.Median(a.rps)}
		row.SharePct = row.CostPerRoundUS * row.RoundsPerS / 1e6 / cores * 100
		rows = append(rows, row)
	}
	return rows, nil
}

// pauseCostSpec writes the benchmark's application for n paused services:
// s0 (the entry) calls the target, then s1 ... s(n-1) in turn.
func pauseCostSpec(dir string, n int, workUS float64) (*spec.Spec, error) {
	const base = 18400
	var topo, svcs strings.Builder
	fmt.Fprintf(&topo, "entry: s0\nservices:\n  target:\n    port: %d\n    endpoints:\n      /w: {work_us: 100}\n", base)
	fmt.Fprintf(&svcs, "  - {name: target, command: slowpoke-emu, args: [-topology, topology.yaml, -service, target], port: %d, ready: {http_path: /healthz}}\n", base)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&topo, "  s%d:\n    port: %d\n    endpoints:\n      /w:\n        work_us: %g\n", i, base+1+i, workUS)
		if i == 0 {
			topo.WriteString("        calls:\n          - {service: target, endpoint: /w}\n")
			for j := 1; j < n; j++ {
				fmt.Fprintf(&topo, "          - {service: s%d, endpoint: /w}\n", j)
			}
		}
		fmt.Fprintf(&svcs, "  - {name: s%d, command: slowpoke-emu, args: [-topology, topology.yaml, -service, s%d], port: %d, ready: {http_path: /healthz}}\n", i, i, base+1+i)
	}
	if err := os.WriteFile(filepath.Join(dir, "topology.yaml"), []byte(topo.String()), 0o644); err != nil {
		return nil, err
	}
	text := fmt.Sprintf("name: pausecost-%d\nservices:\n%sentry: http://127.0.0.1:%d\nworkload:\n  connections: 64\n  requests: [{name: w, path: /w}]\n", n, svcs.String(), base+1)
	return spec.Parse([]byte(text), dir)
}

// WritePauseCostTable prints the result as a table.
func WritePauseCostTable(w io.Writer, r *PauseCostResult) {
	fmt.Fprintf(w, "pauses of %g µs, about %.0f rounds a second, %g µs of work per call of each paused service, %d repetitions\n\n", r.PauseUS, r.RoundsPerS, r.WorkUS, r.Reps)
	fmt.Fprintf(w, "%-8s %-7s %9s %14s %22s %9s %11s %9s %8s\n", "services", "method", "req/s", "µs per round", "runs", "services", "controllers", "load gen", "of cores")
	for _, row := range r.Rows {
		var runs []string
		for _, c := range row.CostRunsUS {
			runs = append(runs, fmt.Sprintf("%.0f", c))
		}
		fmt.Fprintf(w, "%-8d %-7s %9.0f %14.0f %22s %9.0f %11.0f %9.0f %7.1f%%\n", row.Services, row.Method, row.RateRPS, row.CostPerRoundUS, strings.Join(runs, " "), row.ServicesUS, row.ControllersUS, row.LoadUS, row.SharePct)
	}
}
