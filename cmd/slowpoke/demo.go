package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/slowpoke-dev/slowpoke/examples/demo"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
)

// emuName is the emulator's command name. The slowpoke binary is also the
// emulator when invoked under that name, so the demo needs no build step:
// it links slowpoke-emu to itself in a directory on the services' PATH.
const emuName = "slowpoke-emu"

func runDemo(args []string) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	c := predictConfig{target: "cart", reduce: "0,20,...,80%", reps: 3, method: defaultMethod(), maxPause: controller.DefaultMaxPause}
	fs.StringVar(&c.reduce, "reduce", c.reduce, "reductions of cart's per-call cost")
	fs.IntVar(&c.reps, "reps", c.reps, "repetitions")
	fs.DurationVar(&c.duration, "duration", 0, "measurement window (default: the demo spec's 3s)")
	fs.StringVar(&c.outDir, "out", "", "output directory (default: slowpoke-out/demo-<time>)")
	fs.StringVar(&c.method.pause, "pause", c.method.pause, "how the other services are paused: auto, cores, cgroup or signal (as for predict)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke demo [flags]\n\n"+
			"Runs the bundled example (examples/demo: frontend, cart, catalog, currency, all\n"+
			"emulated) and predicts its throughput if cart were 0-80%% cheaper per call.\n"+
			"Takes about two minutes on a 2-core machine.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs("slowpoke demo", fs, args); !ok {
		return code
	}
	if c.outDir == "" {
		c.outDir = filepath.Join("slowpoke-out", "demo-"+time.Now().Format("20060102-150405"))
	}
	start := time.Now()
	if err := demoSetup(&c); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke demo:", err)
		return 1
	}
	if err := predict(c); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke demo:", err)
		if errors.Is(err, context.Canceled) {
			return 130
		}
		return 1
	}
	fmt.Printf("demo finished in %v\n", time.Since(start).Round(time.Second))
	return 0
}

// demoSetup writes the demo spec into the output directory and puts a
// slowpoke-emu link to this binary on the services' PATH.
func demoSetup(c *predictConfig) error {
	dir := filepath.Join(c.outDir, "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := fs.WalkDir(demo.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := demo.Files.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
	if err != nil {
		return err
	}
	bin, err := linkEmulator(c.outDir)
	if err != nil {
		return err
	}
	c.specPath = filepath.Join(dir, "app.yaml")
	c.extraPath = []string{bin}
	return nil
}

// linkEmulator creates dir/bin/slowpoke-emu, a link to this binary, and
// returns dir/bin.
func linkEmulator(dir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	link := filepath.Join(bin, emuName)
	os.Remove(link)
	return bin, os.Symlink(exe, link)
}
