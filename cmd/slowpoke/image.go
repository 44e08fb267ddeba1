package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/slowpoke-dev/slowpoke/internal/image"
)

// addFlags collects repeated --add SRC:DST flags.
type addFlags []image.Add

func (a *addFlags) String() string {
	var s []string
	for _, x := range *a {
		s = append(s, x.Src+":"+x.Dst)
	}
	return strings.Join(s, ",")
}

func (a *addFlags) Set(v string) error {
	x, err := image.ParseAdd(v)
	if err != nil {
		return err
	}
	*a = append(*a, x)
	return nil
}

// runImage builds the image that Kubernetes runs need (the spec's
// kubernetes.image) and writes or pushes it.
func runImage(args []string) int {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slowpoke image --tag REF (--archive FILE | --push) [--binary PATH] [--add SRC:DST]...\n\n"+
			"Builds the image a Kubernetes run needs (the spec's kubernetes.image): this static\n"+
			"slowpoke binary at /slowpoke, which an init container copies next to each\n"+
			"service, and /tmp. No Docker daemon is used. --archive writes it as an archive\n"+
			"that `ctr -n k8s.io images import`, `kind load image-archive` and `docker load`\n"+
			"take; --push sends it to REF's registry with the credentials docker, podman or\n"+
			"your cloud's tools left (~/.docker/config.json, credential helpers).\n\n")
		fs.PrintDefaults()
	}
	tag := fs.String("tag", "", "the image's name and tag, e.g. registry.example.com/team/slowpoke:v1 (required)")
	archive := fs.String("archive", "", "write the image to this file")
	push := fs.Bool("push", false, "push the image to its tag's registry")
	bin := fs.String("binary", "", "the slowpoke binary to put in the image; it must be static (CGO_ENABLED=0) (default: this one)")
	var adds addFlags
	fs.Var(&adds, "add", "also put the local file, link or directory SRC at DST in the image (repeatable)")
	return runCommand("image", fs, args, []string{"tag"}, func() error {
		if (*archive == "") == !*push {
			return errors.New("give one of --archive FILE and --push")
		}
		if *bin == "" {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			*bin = exe
		}
		img, err := image.Build(*bin, adds)
		if err != nil {
			return err
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		if *archive != "" {
			if err := image.WriteArchive(*archive, *tag, img); err != nil {
				return err
			}
			fmt.Printf("wrote %s (%s, %s)\n", *archive, *tag, digest)
			return nil
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := image.Push(ctx, *tag, img); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted: %w", context.Canceled)
			}
			return err
		}
		fmt.Printf("pushed %s@%s\n", *tag, digest)
		return nil
	})
}
