package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/bench"
)

func runBench(args []string) int {
	if len(args) == 0 || args[0] != "overhead" {
		fmt.Fprintln(os.Stderr, "Usage: slowpoke bench overhead [flags]\n\n"+
			"overhead  throughput cost of the instrumentation and controllers at zero pause,\n"+
			"          against the same two emulated services uninstrumented")
		return 2
	}
	fs := flag.NewFlagSet("bench overhead", flag.ContinueOnError)
	o := bench.OverheadOptions{}
	fs.IntVar(&o.Reps, "reps", 5, "repetitions (configurations interleaved)")
	fs.IntVar(&o.Connections, "connections", 64, "closed-loop connections")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "warm-up per run")
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "measurement window per run")
	fs.Float64Var(&o.WorkUS, "work-us", 50, "CPU work per call of each service, µs")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-overhead-<time>)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *out == "" {
		*out = filepath.Join("slowpoke-out", "bench-overhead-"+time.Now().Format("20060102-150405"))
	}
	o.Dir = *out
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin, err := linkEmulator(o.Dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o.ExtraPath = []string{bin}
	o.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Overhead(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke bench overhead:", err)
		return 1
	}
	fmt.Println()
	bench.WriteOverheadTable(os.Stdout, res)
	b, _ := json.MarshalIndent(res, "", "  ")
	path := filepath.Join(o.Dir, "overhead.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("\nwrote %s\n", path)
	return 0
}
