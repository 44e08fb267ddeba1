package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/bench"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

func runBench(args []string) int {
	if len(args) > 0 && args[0] == "overhead" {
		return benchOverhead(args[1:])
	}
	if len(args) > 0 && args[0] == "accuracy" {
		return benchAccuracy(args[1:])
	}
	if len(args) > 0 && args[0] == "pausecost" {
		return benchPauseCost(args[1:])
	}
	fmt.Fprintln(os.Stderr, "Usage: slowpoke bench overhead|accuracy|pausecost [flags]\n\n"+
		"overhead  throughput cost of the instrumentation and controllers at zero pause,\n"+
		"          against the same two emulated services uninstrumented\n"+
		"accuracy  slowpoke validate on synthetic configurations (docs/suite.md):\n"+
		"          prediction error against ground truth, per point and overall\n"+
		"pausecost what one round of pauses costs the paused services' cores, per pause\n"+
		"          method, as the number of services sharing them grows")
	return 2
}

// benchSetup creates the output directory and the emulator link.
func benchSetup(out *string, name string) ([]string, error) {
	if *out == "" {
		*out = filepath.Join("slowpoke-out", "bench-"+name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return nil, err
	}
	bin, err := linkEmulator(*out)
	if err != nil {
		return nil, err
	}
	return []string{bin}, nil
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func benchAccuracy(args []string) int {
	fs := flag.NewFlagSet("bench accuracy", flag.ContinueOnError)
	o := bench.AccuracyOptions{}
	fs.Int64Var(&o.Seed, "seed", 1, "seed of the synthetic suite")
	fs.BoolVar(&o.Full, "full", false, "all 108 configurations instead of the representative subset")
	only := fs.String("only", "", "comma-separated configuration names or tags (e.g. mutex,coordination,tree43)")
	fs.StringVar(&o.Reduce, "reduce", "20,40,...,80%", "reductions per configuration")
	fs.IntVar(&o.Reps, "reps", 2, "repetitions per point")
	fs.IntVar(&o.MaxReps, "max-reps", 4, "repeat points whose error estimate is still noisy up to this many runs")
	fs.IntVar(&o.Batch, "batch", 0, "batch size (0: automatic)")
	fs.DurationVar(&o.Duration, "duration", 0, "measurement window (default: the configs' 3s)")
	fs.DurationVar(&o.Warmup, "warmup", 0, "warm-up (default: the configs' 1s)")
	fs.BoolVar(&o.FixedConnections, "fixed-connections", false, "use each config's connections instead of choosing the smallest that saturates")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-accuracy-<time>)")
	m := defaultMethod()
	methodFlags(fs, &m)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := m.check(); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke bench accuracy:", err)
		return 2
	}
	o.PrecisionPct, o.PauseLead, o.GraphRounds, o.Uncoordinated = m.precision, m.lead, m.graph, m.uncoord
	o.NoColocatedExtension, o.NoPeerExtension, o.OverheadCorrection, o.NoGrowthCorrection = m.noExtend, m.noPeers, m.overhead, m.noGrowth
	o.Placement = m.mode()
	o.PauseMethod = m.pauseMethod()
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	var err error
	if o.ExtraPath, err = benchSetup(out, "accuracy"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o.Dir = *out
	o.Progress = os.Stderr
	return finishBench("accuracy", o.Dir, bench.Accuracy, o, bench.WriteAccuracyTable)
}

func benchOverhead(args []string) int {
	fs := flag.NewFlagSet("bench overhead", flag.ContinueOnError)
	o := bench.OverheadOptions{}
	fs.IntVar(&o.Reps, "reps", 5, "repetitions (configurations interleaved)")
	fs.IntVar(&o.Connections, "connections", 64, "closed-loop connections")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "warm-up per run")
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "measurement window per run")
	fs.Float64Var(&o.WorkUS, "work-us", 50, "CPU work per call of each service, µs")
	methods := fs.String("methods", "signal,cgroup,cores", "pause methods to measure")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-overhead-<time>)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if o.Methods, err = parseMethods(*methods); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke bench overhead: --methods:", err)
		return 2
	}
	if o.ExtraPath, err = benchSetup(out, "overhead"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o.Dir = *out
	o.Progress = os.Stderr
	return finishBench("overhead", o.Dir, bench.Overhead, o, bench.WriteOverheadTable)
}

// finishBench runs a benchmark until it ends or Ctrl-C, prints its table
// and writes its result to dir/<name>.json.
func finishBench[O, R any](name, dir string, run func(context.Context, O) (R, error), o O, table func(io.Writer, R)) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "slowpoke bench %s: %v\n", name, err)
		return 1
	}
	fmt.Println()
	table(os.Stdout, res)
	path := filepath.Join(dir, name+".json")
	if err := writeJSONFile(path, res); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("\nwrote %s\n", path)
	return 0
}

func benchPauseCost(args []string) int {
	fs := flag.NewFlagSet("bench pausecost", flag.ContinueOnError)
	o := bench.PauseCostOptions{}
	services := fs.String("services", "2,5,10,20", "numbers of services on the paused cores")
	methods := fs.String("methods", "signal,cgroup,cores", "pause methods to measure")
	fs.IntVar(&o.Reps, "reps", 3, "repetitions (methods interleaved)")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "warm-up per run")
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "measurement window per run")
	fs.Float64Var(&o.Load, "load", 0.5, "share of the paused cores the load keeps busy without pauses")
	fs.Float64Var(&o.RoundsPerS, "rounds", 100, "rounds a second")
	fs.DurationVar(&o.Pause, "pause", time.Millisecond, "pause per round")
	fs.Float64Var(&o.WorkUS, "work-us", 20, "CPU work per call of each paused service, µs")
	placement := fs.String("placement", "shared", "auto, shared or dedicated")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-pausecost-<time>)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, f := range strings.Split(*services, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 60 {
			fmt.Fprintf(os.Stderr, "slowpoke bench pausecost: --services: bad number %q (1 to 60)\n", f)
			return 2
		}
		o.Services = append(o.Services, n)
	}
	var err error
	if o.Methods, err = parseMethods(*methods); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke bench pausecost: --methods:", err)
		return 2
	}
	mode, err := local.ParseMode(*placement)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke bench pausecost:", err)
		return 2
	}
	o.Placement = mode
	if o.ExtraPath, err = benchSetup(out, "pausecost"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o.Dir = *out
	o.Progress = os.Stderr
	return finishBench("pausecost", o.Dir, bench.PauseCost, o, bench.WritePauseCostTable)
}

// parseMethods parses a comma-separated list of pause methods (no auto).
func parseMethods(list string) ([]pause.Method, error) {
	var out []pause.Method
	for _, f := range strings.Split(list, ",") {
		m, err := pause.ParseMethod(strings.TrimSpace(f))
		if err != nil || m == pause.MethodAuto {
			return nil, fmt.Errorf("%q is not signal, cgroup or cores", f)
		}
		out = append(out, m)
	}
	return out, nil
}
