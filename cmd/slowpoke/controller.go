package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/guard"
)

func runController(args []string) int {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke controller [flags] -- COMMAND [ARGS...]\n"+
			"       slowpoke controller [flags] --attach-state FILE\n\n"+
			"Starts COMMAND in a process group of its own and serves slowpoke's control\n"+
			"protocol for it; or, with --attach-state, serves it for a service that already\n"+
			"runs, which it pauses without starting or ever ending it. The experiment secret\n"+
			"is read from $%s (hex) or --secret-file.\n\n", controller.EnvSecret)
		fs.PrintDefaults()
	}
	name := fs.String("name", "", "service name (default: the command's base name)")
	listen := fs.String("listen", "127.0.0.1:0", "control address (host:port)")
	cpus := fs.String("cpus", "", "CPU ids for the service, e.g. 1 or 0,2-3 (default: inherit)")
	maxPause := fs.Duration("max-pause", controller.DefaultMaxPause, "hard cap on one pause of the service")
	stopTimeout := fs.Duration("stop-timeout", controller.DefaultStopTimeout, "after forwarding a signal, kill the service's group if it is still running")
	addrFile := fs.String("addr-file", "", "write the control address to this file once listening")
	secretFile := fs.String("secret-file", "", "file holding the hex experiment secret")
	normalPrio := fs.Bool("normal-priority", false, "keep the controller at normal scheduling priority (rounds may then reach busy cores late)")
	lease := fs.Duration("lease", 0, "end any slowdown, latency what-if or pool, resuming the service, once the orchestrator has been silent this long (0: never; for controllers in pods, which no guard watches)")
	cgroup := fs.String("cgroup", "", "start the service in this cgroup, made by slowpoke (a directory under a \"slowpoke\" directory of a cgroup v1 freezer or cgroup2 hierarchy)")
	attachState := fs.String("attach-state", "", "attach to the service this file describes (written by the local backend for a spec's attach) instead of starting a command")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	cmdline := fs.Args()
	var attached *attach.State
	switch {
	case *attachState != "" && len(cmdline) > 0:
		fmt.Fprintln(os.Stderr, "slowpoke controller: --attach-state and a command: give one")
		return 2
	case *attachState != "":
		var err error
		if attached, err = attach.Load(*attachState); err != nil {
			fmt.Fprintln(os.Stderr, "slowpoke controller:", err)
			return 2
		}
	case len(cmdline) == 0:
		fmt.Fprintln(os.Stderr, "slowpoke controller: no command given (put it after --)")
		return 2
	}
	secret, err := readSecret(*secretFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke controller:", err)
		return 2
	}
	cpuList, err := parseCPUList(*cpus)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke controller:", err)
		return 2
	}
	if err := checkMaxPause(*maxPause); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke controller:", err)
		return 2
	}
	code, err := controller.Run(context.Background(), controller.Config{
		Name: *name, Command: cmdline, CPUs: cpuList, Listen: *listen, Secret: secret,
		MaxPause: *maxPause, StopTimeout: *stopTimeout, AddrFile: *addrFile, NormalPriority: *normalPrio, Cgroup: *cgroup, Lease: *lease, Attach: attached,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke controller:", err)
	}
	return code
}

func readSecret(file string) ([]byte, error) {
	text := os.Getenv(controller.EnvSecret)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		text = string(b)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, fmt.Errorf("no experiment secret: set $%s or --secret-file", controller.EnvSecret)
	}
	b, err := hex.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("experiment secret is not hex: %v", err)
	}
	return b, nil
}

// parseCPUList parses "1", "0,2", "0-3,6".
func parseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if isRange && err == nil {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b > 4095 {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

func runGuard(args []string) int {
	fs := flag.NewFlagSet("guard", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke guard\n\n"+
			"Started by the local backend, one per run, in a session of its own: it reads\n"+
			"the run's controllers and services on standard input and ends them, thawing\n"+
			"their cgroups, if the orchestrator or a controller dies (docs/controller.md).\n")
	}
	if code, ok := parseArgs("slowpoke guard", fs, args); !ok {
		return code
	}
	return guard.Main(os.Stdin, os.Stderr)
}

// maxMaxPause bounds --max-pause: a controller refuses a longer cap.
const maxMaxPause = time.Minute

// checkMaxPause checks a --max-pause flag.
func checkMaxPause(d time.Duration) error {
	if d <= 0 || d > maxMaxPause {
		return fmt.Errorf("--max-pause must be in (0, %v], got %v", maxMaxPause, d)
	}
	return nil
}
