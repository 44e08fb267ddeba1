package svc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// ClusterConfig configures StartCluster.
type ClusterConfig struct {
	// Host to listen on; default 127.0.0.1.
	Host string
	// Ports by service name; a service missing here listens on an
	// ephemeral port.
	Ports map[string]int
	// Seed of the generated data.
	Seed uint64
	// ExtraWork gives each service's per-call extra work; nil means none.
	ExtraWork func(service string) time.Duration
}

// Cluster is every service of an application running in this process, each
// on a listener of its own. Tests use it; so does "-service all".
type Cluster struct {
	// Addrs maps each service to the host:port it listens on.
	Addrs map[string]string

	servers map[string]Server
	errc    chan error
	wg      sync.WaitGroup
	once    sync.Once
	err     error
}

// StartCluster listens for every service of app, builds the services with
// each other's addresses and serves them. On error nothing is left running.
func StartCluster(app *App, cc ClusterConfig) (*Cluster, error) {
	host := cc.Host
	if host == "" {
		host = "127.0.0.1"
	}
	c := &Cluster{
		Addrs:   make(map[string]string, len(app.Services)),
		servers: make(map[string]Server, len(app.Services)),
		errc:    make(chan error, len(app.Services)),
	}
	listeners := make(map[string]net.Listener, len(app.Services))
	closeAll := func() {
		for _, l := range listeners {
			l.Close()
		}
	}
	for _, s := range app.Services {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cc.Ports[s.Name])))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		listeners[s.Name] = l
		c.Addrs[s.Name] = l.Addr().String()
	}
	for _, s := range app.Services {
		cfg := Config{Service: s.Name, Seed: cc.Seed, Addrs: c.Addrs}
		if cc.ExtraWork != nil {
			cfg.ExtraWork = cc.ExtraWork(s.Name)
		}
		srv, err := app.New(s.Name, cfg)
		if err != nil {
			closeAll()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			for _, built := range c.servers {
				built.Shutdown(ctx)
			}
			cancel()
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		c.servers[s.Name] = srv
	}
	for name, srv := range c.servers {
		l := listeners[name]
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := srv.Serve(l); err != nil {
				c.errc <- fmt.Errorf("%s: serve: %w", name, err)
			}
		}()
	}
	return c, nil
}

// URL returns the http:// base URL of the named service.
func (c *Cluster) URL(service string) string { return "http://" + c.Addrs[service] }

// Close shuts every service down and waits for them. It is idempotent.
func (c *Cluster) Close() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for name, srv := range c.servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := srv.Shutdown(ctx); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: shutdown: %w", name, err))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		c.wg.Wait()
		close(c.errc)
		for err := range c.errc {
			errs = append(errs, err)
		}
		c.err = errors.Join(errs...)
	})
	return c.err
}
