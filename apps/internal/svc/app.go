package svc

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// Protocol is what a service serves.
type Protocol string

// Protocols.
const (
	HTTP Protocol = "http"
	GRPC Protocol = "grpc"
)

// EnvExtraWork names the environment variable holding the extra CPU work per
// incoming call, in microseconds.
const EnvExtraWork = "EXTRA_WORK_US"

// Environment variables of the knobs that give a service a best
// concurrency (slowpoke pools), both in microseconds and off by default:
// EnvStoreWait is waited per incoming call without CPU, first (a round trip
// to the service's data store, which DeathStarBench's services make to
// MongoDB or memcached); EnvContention is extra CPU work per incoming call
// for every other call then in flight in the service (contention on a lock
// or a cache).
const (
	EnvStoreWait  = "STORE_WAIT_US"
	EnvContention = "CONTENTION_US"
)

// ServiceInfo describes one service of an application.
type ServiceInfo struct {
	Name     string
	Port     int // default port
	Protocol Protocol
}

// App describes an application: its services and how to build each one.
type App struct {
	Name string
	// Services lists every service; the first is the HTTP entry point.
	Services []ServiceInfo
	// New builds the named service. It must not block or contact other
	// services: clients connect lazily.
	New func(name string, cfg Config) (Server, error)
}

// Service returns the description of the named service.
func (a *App) Service(name string) (ServiceInfo, bool) {
	for _, s := range a.Services {
		if s.Name == name {
			return s, true
		}
	}
	return ServiceInfo{}, false
}

// Names returns the service names in table order.
func (a *App) Names() []string {
	names := make([]string, len(a.Services))
	for i, s := range a.Services {
		names[i] = s.Name
	}
	return names
}

// Config is what a service is built from.
type Config struct {
	// Service is the name of the service being built.
	Service string
	// Seed seeds the generated data; every service of an application must
	// use the same one.
	Seed uint64
	// ExtraWork is burnt once per incoming call.
	ExtraWork time.Duration
	// StoreWait and Contention: see EnvStoreWait and EnvContention.
	StoreWait, Contention time.Duration
	// Addrs maps every service of the application to its host:port.
	Addrs map[string]string
}

// Addr returns the address of the named service.
func (c Config) Addr(service string) string {
	if a, ok := c.Addrs[service]; ok {
		return a
	}
	panic(fmt.Sprintf("svc: no address for service %q", service))
}

// Server is a built service, ready to serve on a listener.
type Server interface {
	// Serve serves on l until Shutdown; it then returns nil.
	Serve(l net.Listener) error
	// Shutdown stops accepting calls, waits for those in flight until ctx
	// ends, and releases the service's clients.
	Shutdown(ctx context.Context) error
}

// EnvName returns the environment variable holding the address of service:
// "compose-post" gives COMPOSE_POST_ADDR.
func EnvName(service string) string {
	return strings.ToUpper(strings.ReplaceAll(service, "-", "_")) + "_ADDR"
}

// PerCall is what a service does per incoming call before its handler.
func (c Config) PerCall() *PerCall {
	return &PerCall{Work: c.ExtraWork, Wait: c.StoreWait, Contention: c.Contention}
}

// ParseExtraWork parses an EXTRA_WORK_US value: a non-negative number of
// microseconds, possibly fractional; empty means none.
func ParseExtraWork(s string) (time.Duration, error) {
	return parseMicros(EnvExtraWork, s)
}

func parseMicros(env, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	us, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(us) || math.IsInf(us, 0) || us < 0 || us > 1e9 {
		return 0, fmt.Errorf("%s=%q: want a non-negative number of microseconds", env, s)
	}
	return time.Duration(math.Round(us * float64(time.Microsecond))), nil
}
