package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// session is the application a command runs against: started with its logs
// in outDir/logs, stopped by close.
type session struct {
	d *local.Deployment
	// ctx ends on Ctrl-C or SIGTERM, or when a service, a controller or
	// the guard dies (with the death as its cause); interrupted only on
	// Ctrl-C or SIGTERM.
	ctx, interrupted context.Context
	logf             func(format string, args ...any)
	stopSignals      context.CancelFunc
	cancel           context.CancelFunc
}

// startSession creates outDir and starts the application s with opts (its
// LogDir and Logf are set here), progress and warnings going to stderr.
func startSession(s *spec.Spec, outDir string, opts local.Options) (*session, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	interrupted, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	opts.LogDir, opts.Logf = filepath.Join(outDir, "logs"), logf
	logf("starting %d services of %q (logs in %s)", len(s.Services), s.Name, opts.LogDir)
	d, err := local.Start(interrupted, s, opts)
	if err != nil {
		stopSignals()
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
