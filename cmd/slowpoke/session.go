package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// session is the application a command runs against: started with its logs
// in outDir/logs, stopped by close.
type session struct {
	d backend.Backend
	// ctx ends on Ctrl-C or SIGTERM, or when a service, a controller or
	// the guard dies (with the death as its cause); interrupted only on
	// Ctrl-C or SIGTERM.
	ctx, interrupted context.Context
	logf             func(format string, args ...any)
	stopSignals      context.CancelFunc
	cancel           context.CancelFunc
}

// startSession creates outDir and starts the application s with opts (its
// LogDir and Logf are set here), progress and warnings going to stderr: on
// this machine, or, where s has a kubernetes section, on that cluster
// (opts' Target and MaxPause apply there too).
func startSession(s *spec.Spec, outDir string, opts local.Options) (*session, error) {
	_, statErr := os.Stat(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	interrupted, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	opts.LogDir, opts.Logf = filepath.Join(outDir, "logs"), logf
	var d backend.Backend
	var err error
	if s.Kubernetes != nil {
		d, err = kube.Start(interrupted, s, kube.Options{Target: opts.Target, MaxPause: opts.MaxPause, Logf: logf})
	} else {
		logf("starting %d services of %q (logs in %s)", len(s.Services), s.Name, opts.LogDir)
		d, err = local.Start(interrupted, s, opts)
	}
	if err != nil {
		stopSignals()
		if os.IsNotExist(statErr) {
			// Nothing to keep from a start that failed before writing a
			// log (a refused run): no empty output directory is left.
			// Remove fails on a directory that is not empty.
			os.Remove(opts.LogDir)
			os.Remove(outDir)
		}
		return nil, err
	}
	ctx, cancel := d.Watch(interrupted)
	return &session{d: d, ctx: ctx, interrupted: interrupted, logf: logf, stopSignals: stopSignals, cancel: cancel}, nil
}

// close stops the application and the signal handling.
func (s *session) close() {
	s.cancel()
	s.logf("stopping services")
	s.d.Stop()
	s.stopSignals()
}

// explain is what to report for an error of the command's work: Ctrl-C or
// SIGTERM as an interruption (exit status 130), otherwise the death of a
// service, a controller or the guard behind it if one happened
// (local.Deployment.Explain), or the error itself.
func (s *session) explain(err error) error {
	if err == nil {
		return nil
	}
	if s.interrupted.Err() != nil {
		return fmt.Errorf("interrupted: %w", context.Canceled)
	}
	return s.d.Explain(err)
}

// runCommand parses a command's flags and runs main, returning the exit
// status: 2 for a usage error (a bad flag, a stray argument, or a required
// flag missing: ok reports false and required names them, as in "-f and
// --target are"), 130 when main was interrupted, 1 for any other error.
func runCommand(name string, fs *flag.FlagSet, args []string, ok func() bool, required string, main func() error) int {
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "slowpoke %s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	if !ok() {
		fmt.Fprintf(os.Stderr, "slowpoke %s: %s required (see -h)\n", name, required)
		return 2
	}
	if err := main(); err != nil {
		fmt.Fprintf(os.Stderr, "slowpoke %s: %v\n", name, err)
		if errors.Is(err, context.Canceled) {
			return 130
		}
		return 1
	}
	return 0
}

// writeReport writes dir/results.json and dir/report.html with writeJSON
// and writeHTML, prints the table to standard output, and lists the files
// written, the plots last.
func writeReport(dir string, writeJSON, writeHTML func(path string) error, table func(io.Writer) error, plots []string) error {
	jsonPath, htmlPath := filepath.Join(dir, "results.json"), filepath.Join(dir, "report.html")
	if err := writeJSON(jsonPath); err != nil {
		return err
	}
	if err := writeHTML(htmlPath); err != nil {
		return err
	}
	fmt.Println()
	if err := table(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s\n      %s\n", jsonPath, htmlPath)
	for _, p := range plots {
		fmt.Printf("      %s\n", p)
	}
	return nil
}
