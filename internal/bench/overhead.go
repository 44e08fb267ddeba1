package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// OverheadOptions configure the overhead benchmark.
type OverheadOptions struct {
	Dir         string   // working directory: specs, logs, results
	ExtraPath   []string // where slowpoke-emu is found
	Reps        int
	Connections int
	Warmup      time.Duration
	Duration    time.Duration
	WorkUS      float64 // CPU work per call of each of the two services
	Methods     []pause.Method
	Progress    io.Writer
}

// OverheadConfig is one measured configuration.
type OverheadConfig struct {
	Name        string    `json:"name"`
	Runs        []float64 `json:"runs_rps"`
	MedianRPS   float64   `json:"median_rps"`
	SpreadPct   float64   `json:"spread_pct"`
	OverheadPct float64   `json:"overhead_pct"` // throughput lost against the uninstrumented run, median of paired runs
	RoundsPerS  float64   `json:"rounds_per_s,omitempty"`
}

// OverheadResult is the benchmark's output.
type OverheadResult struct {
	WorkUS      float64          `json:"work_us"`
	Connections int              `json:"connections"`
	DurationS   float64          `json:"duration_s"`
	Reps        int              `json:"reps"`
	Configs     []OverheadConfig `json:"configs"`
}

const overheadTopology = `# Two emulated services: a calls b; b is the target.
services:
  a:
    port: 18180
    endpoints:
      /work:
        work_us: %[1]g
        calls: [{service: b, endpoint: /work}]
  b:
    port: 18181
    endpoints:
      /work: {work_us: %[1]g}
`

const overheadSpec = `name: overhead
services:
  - {name: a, command: slowpoke-emu, args: [-topology, topology.yaml, -service, a%[1]s], port: 18180, ready: {http_path: /healthz}}
  - {name: b, command: slowpoke-emu, args: [-topology, topology.yaml, -service, b%[1]s], port: 18181, ready: {http_path: /healthz}}
entry: http://127.0.0.1:18180
workload:
  connections: %[2]d
  warmup: %[3]s
  duration: %[4]s
  requests: [{name: work, path: /work}]
`

// Overhead measures what the instrumentation and the controllers cost at a
// zero pause: the same two-service application uninstrumented, instrumented
// under controllers without slowdown, and, for each pause method, with
// rounds of zero pause (a stop and a continue, a freeze and a thaw, a
// holding thread's wake-up) every call and every 100 calls. Runs are
// interleaved and each controlled run is compared with the plain run of
// its repetition.
func Overhead(ctx context.Context, o OverheadOptions) (*OverheadResult, error) {
	if o.Reps <= 0 {
		o.Reps = 5
	}
	if o.Connections <= 0 {
		o.Connections = 64
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Second
	}
	if o.WorkUS <= 0 {
		o.WorkUS = 50
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "topology.yaml"), fmt.Appendf(nil, overheadTopology, o.WorkUS), 0o644); err != nil {
		return nil, err
	}
	load := func(plain bool) (*spec.Spec, error) {
		flag := ""
		if plain {
			flag = ", -plain"
		}
		return spec.Parse(fmt.Appendf(nil, overheadSpec, flag, o.Connections, o.Warmup, o.Duration), o.Dir)
	}
	plainSpec, err := load(true)
	if err != nil {
		return nil, err
	}
	ctlSpec, err := load(false)
	if err != nil {
		return nil, err
	}
	if len(o.Methods) == 0 {
		o.Methods = []pause.Method{pause.MethodSignal, pause.MethodCgroup, pause.MethodCores}
	}
	names := []string{"uninstrumented", "controller, no slowdown"}
	batches := []int{0, 0}
	methods := []pause.Method{pause.MethodSignal, pause.MethodSignal}
	for _, m := range o.Methods {
		names = append(names, fmt.Sprintf("%s: rounds every call (batch 1)", m), fmt.Sprintf("%s: rounds every 100 calls (batch 100)", m))
		batches = append(batches, 1, 100)
		methods = append(methods, m, m)
	}
	runs := make([][]float64, len(names))
	rounds := make([][]float64, len(names))
	neighbours := map[string][]string{"a": {"b"}, "b": {"a"}}
	say := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	for rep := 0; rep < o.Reps; rep++ {
		order := []bool{true, false}
		if rep%2 == 1 {
			order = []bool{false, true}
		}
		for _, plain := range order {
			s := ctlSpec
			if plain {
				s = plainSpec
			}
			d, err := local.Start(ctx, s, local.Options{Options: backend.Options{Target: "b"}, LogDir: filepath.Join(o.Dir, "logs"), ExtraPath: o.ExtraPath, NoController: plain})
			if err != nil {
				return nil, err
			}
			cfgs := []int{0}
			if !plain {
				cfgs = cfgs[:0]
				for i := 1; i < len(names); i++ {
					cfgs = append(cfgs, i)
				}
				if rep%2 == 1 {
					slices.Reverse(cfgs)
				}
			}
			for _, i := range cfgs {
				r, err := experiment.New(d, experiment.Options{Target: "b", Warmup: o.Warmup, Duration: o.Duration, Connections: o.Connections, PauseMethod: methods[i]})
				if err != nil {
					d.Stop()
					return nil, err
				}
				res, st, err := r.Measure(ctx, batches[i], 0, neighbours)
				if err != nil {
					d.Stop()
					return nil, err
				}
				runs[i] = append(runs[i], res.Throughput)
				if st != nil && res.Window > 0 {
					rounds[i] = append(rounds[i], float64(st.RoundsStarted)/(o.Warmup+res.Window).Seconds())
				}
				say("rep %d/%d %-36s %8.0f req/s", rep+1, o.Reps, names[i], res.Throughput)
			}
			d.Stop()
		}
	}
	out := &OverheadResult{WorkUS: o.WorkUS, Connections: o.Connections, DurationS: o.Duration.Seconds(), Reps: o.Reps}
	for i, name := range names {
		c := OverheadConfig{Name: name, Runs: runs[i], MedianRPS: report.Median(runs[i]), SpreadPct: report.SpreadPct(runs[i]), RoundsPerS: report.Median(rounds[i])}
		var paired []float64
		for k := range runs[i] {
			paired = append(paired, (1-runs[i][k]/runs[0][k])*100)
		}
		c.OverheadPct = report.Median(paired)
		out.Configs = append(out.Configs, c)
	}
	return out, nil
}

// WriteOverheadTable prints the result as a table.
func WriteOverheadTable(w io.Writer, r *OverheadResult) {
	fmt.Fprintf(w, "two services, %g µs of CPU work each, %d connections, %d repetitions of %gs\n\n", r.WorkUS, r.Connections, r.Reps, r.DurationS)
	fmt.Fprintf(w, "%-44s %12s %8s %10s %10s\n", "configuration", "median req/s", "spread", "overhead", "rounds/s")
	for _, c := range r.Configs {
		fmt.Fprintf(w, "%-44s %12.0f %7.1f%% %9.1f%% %10.0f\n", c.Name, c.MedianRPS, c.SpreadPct, c.OverheadPct, c.RoundsPerS)
	}
}
