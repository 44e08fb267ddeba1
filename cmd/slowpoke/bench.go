package main

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

// benchmark is one benchmark of "slowpoke bench": its name, what it
// measures, and the command that runs it.
type benchmark struct {
	name, doc string
	run       func(args []string) int
}

// benches are the benchmarks this binary runs, in the order its help lists
// them: in slowpoke, the one that tells a user what slowpoke costs them;
// in the lab's build (lab.go, build tag lab), the research benchmarks too.
var benches []benchmark

func init() {
	benches = append([]benchmark{{"overhead", "throughput cost of the instrumentation and controllers at zero pause,\nagainst the same two emulated services uninstrumented", benchOverhead}}, benches...)
}

// benchNames lists the benchmarks' names, joined by sep.
func benchNames(sep string) string {
	var names []string
	for _, b := range benches {
		names = append(names, b.name)
	}
	return strings.Join(names, sep)
}

func runBench(args []string) int {
	for _, b := range benches {
		if len(args) > 0 && args[0] == b.name {
			return b.run(args[1:])
		}
	}
	help := len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")
	if len(args) > 0 && !help {
		fmt.Fprintf(os.Stderr, "%s bench: unknown benchmark %q\n\n", program, args[0])
	}
	fmt.Fprintf(os.Stderr, "Usage: %s bench %s [flags]\n\n", program, benchNames("|"))
	for _, b := range benches {
		fmt.Fprintf(os.Stderr, "%-10s%s\n", b.name, strings.ReplaceAll(b.doc, "\n", "\n          "))
	}
	if program != labProgram {
		fmt.Fprintf(os.Stderr, "\nThe research benchmarks (accuracy, methods, latency, ...) are in the lab's build:\n  go build -tags lab -o slowpoke-lab ./cmd/slowpoke\n")
	}
	if help {
		return 0
	}
	return 2
}

// benchFlags is the flag set of benchmark name, whose -h says what it
// measures.
func benchFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("bench "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s bench %s [flags]\n\n", program, name)
		for _, b := range benches {
			if b.name == name {
				fmt.Fprintf(fs.Output(), "%s.\n\n", strings.ReplaceAll(b.doc, "\n", " "))
			}
		}
		fs.PrintDefaults()
	}
	return fs
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

func benchOverhead(args []string) int {
	fs := benchFlags("overhead")
	o := bench.OverheadOptions{}
	fs.IntVar(&o.Reps, "reps", 5, "repetitions (configurations interleaved)")
	fs.IntVar(&o.Connections, "connections", 64, "closed-loop connections")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "warm-up per run")
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "measurement window per run")
	fs.Float64Var(&o.WorkUS, "work-us", 50, "CPU work per call of each service, µs")
	methods := fs.String("methods", "signal,cgroup,cores", "pause methods to measure")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-overhead-<time>)")
	if code, ok := parseArgs("slowpoke bench overhead", fs, args); !ok {
		return code
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

// failureStatus is the exit status of a benchmark that failed with err:
// 130 when Ctrl-C or SIGTERM ended it (err wraps context.Canceled), as for
// every other command, 1 otherwise.
func failureStatus(err error) int {
	if errors.Is(err, context.Canceled) {
		return 130
	}
	return 1
}

// finishBench runs a benchmark until it ends or Ctrl-C, prints its table
// and writes its result to dir/<name>.json.
func finishBench[O, R any](name, dir string, run func(context.Context, O) (R, error), o O, table func(io.Writer, R)) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if ctx.Err() != nil {
		// Ctrl-C or SIGTERM, whether the benchmark stopped with an error
		// or with what it had measured so far.
		err = fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s bench %s: %v\n", program, name, errText(err))
		return failureStatus(err)
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
