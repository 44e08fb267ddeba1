package svc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// shutdownGrace bounds how long a stopping service waits for calls in flight.
// It must exceed the 5 s for which net/http's Shutdown waits on connections
// that a client dialled but never used (peers' transports leave such
// connections when requests race), or a clean stop would report a timeout.
const shutdownGrace = 10 * time.Second

// Main runs the service chosen on the command line until SIGINT or SIGTERM
// and exits. It is the whole main function of an application binary.
func Main(app *App) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, app, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", app.Name, err)
		os.Exit(1)
	}
}

// Run parses the command line (args, without the program name) and the
// environment (getenv), then runs the chosen service, or every service with
// "-service all", until ctx ends. It returns nil after a clean shutdown.
func Run(ctx context.Context, app *App, args []string, getenv func(string) string, logw io.Writer) error {
	logger := log.New(logw, app.Name+" ", log.LstdFlags|log.Lmsgprefix)
	fs := flag.NewFlagSet(app.Name, flag.ContinueOnError)
	fs.SetOutput(logw)
	service := fs.String("service", getenv("SERVICE"), "service to run: "+strings.Join(app.Names(), ", ")+", or all (every service in this process, for development) (env SERVICE)")
	port := fs.Int("port", 0, "port to listen on (env PORT; default: the service's port in the application's table)")
	host := fs.String("host", envOr(getenv, "HOST", "127.0.0.1"), "address to listen on (env HOST)")
	seed := fs.Uint64("seed", 1, "seed of the generated data; every service of an application needs the same (env SEED)")
	addrs := make(map[string]*string, len(app.Services))
	for _, s := range app.Services {
		def := envOr(getenv, EnvName(s.Name), net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
		addrs[s.Name] = fs.String(s.Name+"-addr", def, "host:port of "+s.Name+" (env "+EnvName(s.Name)+")")
	}
	// Environment values are the flags' defaults; read them before parsing
	// so that flags win.
	if v := getenv("PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("PORT=%q: not a port number", v)
		}
		*port = p
	}
	if v := getenv("SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("SEED=%q: not an unsigned integer", v)
		}
		*seed = s
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *port < 0 || *port > 65535 {
		return fmt.Errorf("port %d out of range", *port)
	}
	work, err := ParseExtraWork(getenv(EnvExtraWork))
	if err != nil {
		return err
	}
	wait, err := parseMicros(EnvStoreWait, getenv(EnvStoreWait))
	if err != nil {
		return err
	}
	contention, err := parseMicros(EnvContention, getenv(EnvContention))
	if err != nil {
		return err
	}
	resolved := make(map[string]string, len(addrs))
	for name, a := range addrs {
		resolved[name] = *a
	}

	if *service == "all" {
		ports := make(map[string]int, len(app.Services))
		for _, s := range app.Services {
			ports[s.Name] = s.Port
		}
		c, err := StartCluster(app, ClusterConfig{Host: *host, Ports: ports, Seed: *seed, ExtraWork: func(string) time.Duration { return work }})
		if err != nil {
			return err
		}
		logger.Printf("all %d services running; entry http://%s", len(app.Services), c.Addrs[app.Services[0].Name])
		select {
		case <-ctx.Done():
		case err = <-c.errc:
		}
		if cerr := c.Close(); err == nil {
			err = cerr
		}
		return err
	}

	info, ok := app.Service(*service)
	if !ok {
		if *service == "" {
			return fmt.Errorf("no -service given; services of %s: %s", app.Name, strings.Join(app.Names(), ", "))
		}
		return fmt.Errorf("unknown service %q; services of %s: %s", *service, app.Name, strings.Join(app.Names(), ", "))
	}
	if *port == 0 {
		*port = info.Port
	}
	srv, err := app.New(info.Name, Config{Service: info.Name, Seed: *seed, ExtraWork: work, StoreWait: wait, Contention: contention, Addrs: resolved})
	if err != nil {
		return fmt.Errorf("%s: %w", info.Name, err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("%s: %w", info.Name, err)
	}
	logger.Printf("%s serving %s on %s (extra work %v per call)", info.Name, info.Protocol, l.Addr(), work)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		// Serve returns only on failure before Shutdown.
		srv.Shutdown(context.Background())
		return fmt.Errorf("%s: serve: %w", info.Name, err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-errc; err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("%s: shutdown: %w", info.Name, err)
	}
	logger.Printf("%s stopped", info.Name)
	return nil
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
