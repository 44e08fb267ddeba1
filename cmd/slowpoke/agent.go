package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/nodeagent"
)

// serviceFlags collects the agent's repeated --service.
type serviceFlags []nodeagent.Service

func (s *serviceFlags) String() string {
	var out []string
	for _, sv := range *s {
		out = append(out, sv.String())
	}
	return strings.Join(out, " ")
}

func (s *serviceFlags) Set(v string) error {
	sv, err := nodeagent.ParseService(v)
	if err == nil {
		*s = append(*s, sv)
	}
	return err
}

// peerFlags collects the agent's repeated --peer.
type peerFlags []nodeagent.Peer

func (p *peerFlags) String() string {
	var out []string
	for _, pe := range *p {
		out = append(out, pe.String())
	}
	return strings.Join(out, " ")
}

func (p *peerFlags) Set(v string) error {
	pe, err := nodeagent.ParsePeer(v)
	if err == nil {
		*p = append(*p, pe)
	}
	return err
}

// runAgent is the Kubernetes node agent, which the run's DaemonSet runs on
// every node that holds a service's pods.
func runAgent(args []string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke agent --service NAME=PORT:UID,... [flags]\n\n"+
			"The Kubernetes node agent (run by the DaemonSet a run makes, in a privileged pod\n"+
			"in the host's PID namespace): serves a controller per service on PORT for the\n"+
			"service's pods on this node, found by UID in the node's cgroups; the target's\n"+
			"reads its pods' CPU time and freezes the other services' pods. It thaws what\n"+
			"agents that are gone left frozen when it starts, and everything on SIGTERM;\n"+
			"with --watch, it is the pod's watchdog, which thaws a killed agent's pods at once.\n"+
			"The experiment secret is read from $%s (hex).\n\n", controller.EnvSecret)
		fs.PrintDefaults()
	}
	var services serviceFlags
	fs.Var(&services, "service", "a service: NAME=PORT:UID,UID,... (its controller's port, its pods' UIDs); repeat for each")
	root := fs.String("cgroup-root", nodeagent.DefaultCgroupRoot, "the node's cgroup file system")
	state := fs.String("state-dir", nodeagent.DefaultStateDir, "a directory of the node's for the ledgers of what agents may freeze")
	host := fs.String("host", "", "address the controllers listen on (default: every one)")
	run := fs.String("run", "", "the run's id (names this agent's ledger)")
	lease := fs.Duration("lease", kube.DefaultLease, "thaw everything and end any slowdown once the orchestrator has been silent this long")
	maxPause := fs.Duration("max-pause", controller.DefaultMaxPause, "hard cap on one freeze")
	thawOnly := fs.Bool("thaw-only", false, "thaw what agents that are gone left frozen, and exit")
	nodeName := fs.String("node", "", "this node's name (a run that spans nodes: its --peer of this name is this agent)")
	peerListen := fs.String("peer-listen", "", "address to listen on for the other nodes' agents, for a run that spans nodes")
	var peers peerFlags
	fs.Var(&peers, "peer", "another node's agent, NODE=HOST:PORT, which the target's agent asks to freeze the pods on its node; repeat for each (one of this node's own is left out)")
	watch := fs.Bool("watch", false, "the watchdog (the agent pod's second container): thaw what agents that are gone left frozen, every "+nodeagent.WatchEvery.String()+", until SIGTERM")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if *thawOnly {
		if err := nodeagent.ThawLeft(*root, *state, log); err != nil {
			fmt.Fprintln(os.Stderr, "slowpoke agent:", err)
			return 1
		}
		return 0
	}
	if *watch {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		defer stop()
		if err := nodeagent.Watch(ctx, *root, *state, nodeagent.WatchEvery, log); err != nil {
			fmt.Fprintln(os.Stderr, "slowpoke agent:", err)
			return 1
		}
		return 0
	}
	if len(services) == 0 || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "slowpoke agent: give each service with --service NAME=PORT:UID,... and nothing else")
		return 2
	}
	if *lease <= 0 || *lease > controller.MaxLease {
		fmt.Fprintf(os.Stderr, "slowpoke agent: --lease must be in (0, %v]: an agent always thaws when its orchestrator falls silent\n", controller.MaxLease)
		return 2
	}
	if err := checkMaxPause(*maxPause); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke agent:", err)
		return 2
	}
	secret, err := readSecret("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke agent:", err)
		return 2
	}
	var others []nodeagent.Peer
	for _, p := range peers {
		if p.Node != *nodeName {
			others = append(others, p)
		}
	}
	err = nodeagent.Run(context.Background(), nodeagent.Config{Services: services, CgroupRoot: *root, StateDir: *state, Host: *host,
		RunID: *run, Secret: secret, Lease: *lease, MaxPause: *maxPause, Logger: log,
		Node: *nodeName, PeerListen: *peerListen, Peers: others})
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke agent:", err)
		return 1
	}
	return 0
}
