package main

import (
	"bytes"
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

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/spans"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// session is the application a command runs against: started with its logs
// in outDir/logs, stopped by close.
type session struct {
	d backend.Backend
	// spans receives the services' OpenTelemetry spans (nil on
	// Kubernetes, whose pods do not reach this machine's loopback).
	spans *spans.Receiver
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
// this machine, or, where s has a kubernetes section, on that cluster with
// kopts and the options every backend takes, opts.Options.
//
// kopts' Mode, Restarts and Pause choose how a run reaches the pods on
// Kubernetes (its zero value: template mode).
func startSession(s *spec.Spec, outDir string, opts local.Options, kopts kube.Options) (*session, error) {
	created := firstMissing(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	interrupted, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	opts.LogDir, opts.Logf = filepath.Join(outDir, "logs"), logf
	var d backend.Backend
	var rcv *spans.Receiver
	var err error
	if s.Kubernetes != nil {
		kopts.Options = opts.Options
		d, err = kube.Start(interrupted, s, kopts)
	} else if rcv, err = spans.Listen(); err == nil {
		opts.Env = withSpans(s, opts.Env, rcv)
		logf("%s of %q (logs in %s; OpenTelemetry spans to %s)", startingWhat(s), s.Name, opts.LogDir, rcv.Endpoint())
		d, err = local.Start(interrupted, s, opts)
	}
	if err != nil {
		if rcv != nil {
			rcv.Close()
		}
		stopSignals()
		// Nothing to keep from a start that failed before writing a log
		// (a refused run): no empty directory made here is left, such as
		// slowpoke-out itself. Remove fails on a directory that is not
		// empty.
		for p := opts.LogDir; created != ""; p = filepath.Dir(p) {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) || p == created || filepath.Dir(p) == p {
				break
			}
		}
		return nil, err
	}
	ctx, cancel := d.Watch(interrupted)
	return &session{d: d, spans: rcv, ctx: ctx, interrupted: interrupted, logf: logf, stopSignals: stopSignals, cancel: cancel}, nil
}

// withSpans adds to env, for every service of s, what makes its
// OpenTelemetry SDK or agent, if it has one, export its spans to rcv under
// its name in the spec (over any OTEL_ variables the spec sets).
func withSpans(s *spec.Spec, env map[string]map[string]string, rcv *spans.Receiver) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, svc := range s.Services {
		e := rcv.Env(svc.Name)
		for k, v := range env[svc.Name] {
			e[k] = v
		}
		out[svc.Name] = e
	}
	return out
}

// close stops the application and the signal handling.
func (s *session) close() {
	s.cancel()
	s.logf("stopping services")
	s.d.Stop()
	if s.spans != nil {
		s.spans.Close()
	}
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
// status: 0 for -h, 2 for a usage error (a bad flag, a stray argument, or
// a flag named in required not given), 130 when main was interrupted, 1
// for any other error.
func runCommand(name string, fs *flag.FlagSet, args []string, required []string, main func() error) int {
	if code, ok := parseArgs("slowpoke "+name, fs, args); !ok {
		return code
	}
	if missing := missingFlags(fs, required); len(missing) > 0 {
		verb := "is"
		if len(missing) > 1 {
			verb = "are"
		}
		fmt.Fprintf(os.Stderr, "slowpoke %s: %s %s required (see -h)\n", name, strings.Join(missing, " and "), verb)
		return 2
	}
	if err := main(); err != nil {
		fmt.Fprintf(os.Stderr, "slowpoke %s: %v\n", name, errText(err))
		if errors.Is(err, context.Canceled) {
			return 130
		}
		return 1
	}
	return 0
}

// writeReport writes dir/results.json and dir/report.html with writeJSON
// and writeHTML, prints the table to standard output, lists the files
// written, the plots last, and with printJSON prints results.json last,
// on one line (--print-json).
func writeReport(dir string, writeJSON, writeHTML func(path string) error, table func(io.Writer) error, plots []string, printJSON bool) error {
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
	if printJSON {
		return printResultsJSON(os.Stdout, jsonPath)
	}
	return nil
}

// parseArgs parses a command's flags and refuses arguments left over, such
// as a word before further flags (the flag package stops there and would
// ignore them). If ok is false, the command ends with code: 0 for -h, 2
// for a usage error, which has been printed.
func parseArgs(cmd string, fs *flag.FlagSet, args []string) (code int, ok bool) {
	// The flag package prints the usage after every error: only -h
	// shows it here, a bad flag gets its one line and a pointer to -h.
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		usage() // flag.NewFlagSet sets a default
		return 0, false
	} else if err != nil {
		hint := ""
		if f := fs.Lookup(badValueFlag(err)); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isDuration := g.Get().(time.Duration); isDuration {
					hint = " (durations take a unit, as in 500ms or 5s)"
				}
			}
		}
		fmt.Fprintf(os.Stderr, "%s: see -h for the flags%s\n", cmd, hint)
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected argument %q: this command takes flags only (see -h)\n", cmd, fs.Arg(0))
		return 2, false
	}
	return 0, true
}

// missingFlags returns those of the named flags that were not given, or
// given empty, as a user would write them: -f, --target.
func missingFlags(fs *flag.FlagSet, names []string) []string {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = f.Value.String() != "" })
	var missing []string
	for _, n := range names {
		if !set[n] {
			if len(n) == 1 {
				missing = append(missing, "-"+n)
			} else {
				missing = append(missing, "--"+n)
			}
		}
	}
	return missing
}

// firstMissing returns the outermost directory of path that does not
// exist yet (path itself, or an ancestor that MkdirAll would create), or
// "" if path exists.
func firstMissing(path string) string {
	missing := ""
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			return missing
		}
		missing = p
		if filepath.Dir(p) == p {
			return missing
		}
	}
}

// badValueFlag returns the name of the flag whose value the flag package
// refused with err ("invalid value "100" for flag -sla: parse error"), or
// "".
func badValueFlag(err error) string {
	_, rest, ok := strings.Cut(err.Error(), " for flag -")
	if !ok || !strings.HasPrefix(err.Error(), "invalid value ") {
		return ""
	}
	name, _, _ := strings.Cut(rest, ":")
	return name
}

// printJSONPrefix starts the line on which --print-json prints results.json.
const printJSONPrefix = "results.json: "

// printJSONFlag is --print-json, for the commands that write results.json.
func printJSONFlag(fs *flag.FlagSet, p *bool) {
	fs.BoolVar(p, "print-json", false, "also print results.json on stdout at the end, on one line that starts with \""+printJSONPrefix+"\" (for a run whose files cannot be copied out, such as a Job in the cluster)")
}

// printResultsJSON prints the results file at path on w as one line,
// after printJSONPrefix: the log of a Job in the cluster then holds the
// results, to be taken out with `sed -n 's/^results.json: //p'`.
func printResultsJSON(w io.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var line bytes.Buffer
	line.WriteString(printJSONPrefix)
	if err := json.Compact(&line, b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	line.WriteByte('\n')
	_, err = w.Write(line.Bytes())
	return err
}

// startingWhat says what a local run does with the spec's services:
// "starting 4 services", "attaching to 4 services", or "starting 2
// services and attaching to 2".
func startingWhat(s *spec.Spec) string {
	attached := 0
	for i := range s.Services {
		if s.Services[i].Attached() {
			attached++
		}
	}
	started := len(s.Services) - attached
	services := func(n int) string {
		if n == 1 {
			return "1 service"
		}
		return fmt.Sprintf("%d services", n)
	}
	switch {
	case attached == 0:
		return "starting " + services(started)
	case started == 0:
		return "attaching to " + services(attached)
	}
	return fmt.Sprintf("starting %s and attaching to %d", services(started), attached)
}
