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
	"strings"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/bench"
)

func runBench(args []string) int {
	if len(args) > 0 && args[0] == "overhead" {
		return benchOverhead(args[1:])
	}
	if len(args) > 0 && args[0] == "accuracy" {
		return benchAccuracy(args[1:])
	}
	fmt.Fprintln(os.Stderr, "Usage: slowpoke bench overhead|accuracy [flags]\n\n"+
		"overhead  throughput cost of the instrumentation and controllers at zero pause,\n"+
		"          against the same two emulated services uninstrumented\n"+
		"accuracy  slowpoke validate on synthetic configurations (docs/suite.md):\n"+
		"          prediction error against ground truth, per point and overall")
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
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-overhead-<time>)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
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
