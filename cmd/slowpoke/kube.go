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

	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// runRestore puts back the Deployments a killed run left under slowpoke.
func runRestore(args []string) int {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke restore -f app.yaml\n\n"+
			"Puts back every Deployment of an application on Kubernetes that a slowpoke run\n"+
			"changed and did not restore (its orchestrator was killed), deletes the Secrets\n"+
			"such runs made, and waits for the rollouts. Safe to run at any time: a\n"+
			"Deployment slowpoke did not change is left alone, and so is a run that still\n"+
			"runs (its Secret is renewed every 2 s; restore watches it for up to 5 s).\n\n")
		fs.PrintDefaults()
	}
	file := fs.String("f", "", "application spec with a kubernetes section (required)")
	return runCommand("restore", fs, args, []string{"f"}, func() error {
		s, err := spec.Load(*file)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return kube.Restore(ctx, s, nil, func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) })
	})
}

// runInstall copies this binary to a path: the init container that
// Kubernetes runs before each service uses it to put slowpoke next to the
// service, in a volume they share.
func runInstall(args []string) int {
	const usage = "Usage: slowpoke install ABSOLUTE-PATH (used by the Kubernetes backend's init container)"
	switch {
	case len(args) == 1 && (args[0] == "-h" || args[0] == "--help"):
		fmt.Fprintln(os.Stderr, usage)
		return 0
	case len(args) == 1 && !filepath.IsAbs(args[0]):
		fmt.Fprintf(os.Stderr, "slowpoke install: %q is not an absolute path\n", args[0])
		return 2
	case len(args) != 1:
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	if err := installSelf(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke install:", err)
		return 1
	}
	return 0
}

func installSelf(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".slowpoke-install-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, in)
	err = errors.Join(err, tmp.Chmod(0o755), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
