package emulator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Environment variables read by the command.
const (
	envWorkOffset = "EMU_WORK_OFFSET_US"
	envPort       = "EMU_PORT"
	// envReusePort, when set, makes the service listen with SO_REUSEPORT,
	// so that several replicas on one host's network share its port (the
	// kernel spreads the connections over them).
	envReusePort = "EMU_REUSE_PORT"
	// envListenHost is the address to listen on instead of the topology's
	// host, which stays where the callers dial (a Kubernetes Service's
	// ClusterIP, say, in front of replicas each on its own pod address).
	envListenHost = "EMU_LISTEN_HOST"
	// envGRPCConns is how many connections to make to each gRPC callee.
	envGRPCConns = "EMU_GRPC_CONNS"
)

// Main is the slowpoke-emu command line: it parses args, runs the service
// until SIGTERM or SIGINT, and returns the exit status: 0 after a clean shutdown, 2 for bad usage or
// configuration, 1 when the service fails.
func Main(args []string, stderr io.Writer, mopts ...MainOption) int {
	var mc mainConfig
	for _, o := range mopts {
		o(&mc)
	}
	fs := flag.NewFlagSet("slowpoke-emu", flag.ContinueOnError)
	fs.SetOutput(stderr)
	topoPath := fs.String("topology", "", "topology `file` describing every service of the application (required)")
	name := fs.String("service", "", "`name` of the service to run (required)")
	plain := fs.Bool("plain", false, "run without the slowpoke instrumentation wrappers")
	otelOn := fs.Bool("otel", false, "export OpenTelemetry spans where OTEL_EXPORTER_OTLP_ENDPOINT is set (slowpoke-emu only, not the slowpoke binary)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: slowpoke-emu -topology FILE -service NAME [-plain] [-otel]\n\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nenvironment:\n"+
			"  %s  µs added to every endpoint's work_us (may be negative; floored at 0)\n"+
			"  %s            port to listen on instead of the topology's\n"+
			"  %s     address to listen on instead of the topology's host (0.0.0.0: every one); callers still dial the topology's\n"+
			"  %s      connections to each gRPC callee, calls spread over them in turn (default 1)\n"+
			"  OTEL_*              with -otel: where and how spans are exported (OTEL_EXPORTER_OTLP_ENDPOINT, ...)\n", envWorkOffset, envPort, envListenHost, envGRPCConns)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "slowpoke-emu: "+format+"\n", a...)
		return code
	}
	switch {
	case fs.NArg() > 0:
		return fail(2, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case *topoPath == "":
		return fail(2, "-topology is required")
	case *name == "":
		return fail(2, "-service is required")
	case *otelOn && mc.otel == nil:
		return fail(2, "-otel: this binary is built without OpenTelemetry (the slowpoke binary run as slowpoke-emu); run the slowpoke-emu command (go install ./cmd/slowpoke-emu)")
	}
	topo, err := LoadTopology(*topoPath)
	if err != nil {
		return fail(2, "%v", err)
	}
	svc, ok := topo.Services[*name]
	if !ok {
		names := make([]string, 0, len(topo.Services))
		for n := range topo.Services {
			names = append(names, n)
		}
		slices.Sort(names)
		return fail(2, "service %q is not in %s; services: %s", *name, *topoPath, strings.Join(names, ", "))
	}

	logger := log.New(stderr, "", 0)
	opts := []Option{WithPlain(*plain), WithLogger(logger)}
	if v, ok := os.LookupEnv(envWorkOffset); ok && strings.TrimSpace(v) != "" {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fail(2, "%s=%q is not a finite number of microseconds", envWorkOffset, v)
		}
		opts = append(opts, WithWorkOffset(time.Duration(math.Round(f*float64(time.Microsecond)))))
	}
	if v, ok := os.LookupEnv(envGRPCConns); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > maxGRPCConns {
			return fail(2, "%s=%q is not a number of connections from 1 to %d", envGRPCConns, v, maxGRPCConns)
		}
		opts = append(opts, WithGRPCConns(n))
	}
	if *otelOn {
		t, shutdown, reason, err := mc.otel(context.Background(), *name)
		if err != nil {
			return fail(2, "%s: -otel: %v", *name, err)
		}
		if t == nil {
			logger.Printf("slowpoke-emu: %s: -otel: no spans exported: %s", *name, reason)
		} else {
			opts = append(opts, WithTracing(t))
			defer func() {
				// Export the spans of the last calls.
				ctx, cancel := context.WithTimeout(context.Background(), otelFlushTimeout)
				defer cancel()
				if err := shutdown(ctx); err != nil {
					logger.Printf("slowpoke-emu: %s: -otel: flushing spans: %v", *name, err)
				}
			}()
		}
	}
	addr, own := svc.Addr(), false
	if v, ok := os.LookupEnv(envPort); ok && strings.TrimSpace(v) != "" {
		port, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || port < 0 || port > 65535 {
			return fail(2, "%s=%q is not a port number", envPort, v)
		}
		host, _, _ := net.SplitHostPort(addr)
		addr, own = net.JoinHostPort(host, strconv.Itoa(port)), true
	}
	if v, ok := os.LookupEnv(envListenHost); ok && strings.TrimSpace(v) != "" {
		host := strings.TrimSpace(v)
		if net.ParseIP(host) == nil {
			return fail(2, "%s=%q is not an IP address", envListenHost, v)
		}
		_, port, _ := net.SplitHostPort(addr)
		addr, own = net.JoinHostPort(host, port), true
	}
	reuse := os.Getenv(envReusePort) != ""
	if own || reuse {
		ln, err := listen(addr, reuse)
		if err != nil {
			return fail(1, "%s: %v", *name, err)
		}
		opts = append(opts, WithListener(ln))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process the default way
	}()
	if err := Run(ctx, topo, *name, opts...); err != nil {
		return fail(1, "%s: %v", *name, err)
	}
	return 0
}

// maxGRPCConns bounds EMU_GRPC_CONNS.
const maxGRPCConns = 1024

// otelFlushTimeout bounds the export of the spans still queued at exit.
const otelFlushTimeout = 2 * time.Second

// listen listens on addr, with SO_REUSEPORT if reuse.
func listen(addr string, reuse bool) (net.Listener, error) {
	var lc net.ListenConfig
	if reuse {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			}); err != nil {
				return err
			}
			return serr
		}
	}
	return lc.Listen(context.Background(), "tcp", addr)
}
