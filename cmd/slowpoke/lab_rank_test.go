//go:build lab

package main

import (
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// The planted tree: the planted services' work changed, and every
// service given the ground-truth knob, so that --validate can check any
// of them; the spec still loads as a spec.
func TestWritePlanted(t *testing.T) {
	path, err := writePlanted(t.TempDir(), "tree43", map[string]float64{"service20": 25000})
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Services) != 43 {
		t.Fatalf("%d services, want 43", len(s.Services))
	}
	for _, svc := range s.Services {
		if svc.GroundTruth == nil || svc.GroundTruth.Env == "" {
			t.Errorf("%s has no ground truth", svc.Name)
		}
	}
	if _, err := writePlanted(t.TempDir(), "tree43", map[string]float64{"nosuch": 1}); err == nil {
		t.Error("a service the tree lacks was planted")
	}
	if _, err := writePlanted(t.TempDir(), "nosuch", nil); err == nil {
		t.Error("a configuration the suite lacks was written")
	}
	if _, err := truthForAll([]byte("- a\n- b\n")); err == nil {
		t.Error("a spec that is not a mapping was given ground truths")
	}
}

// Bad flags are refused before anything runs.
func TestBenchRankBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--suite", "tree43", "--validate", "-1"},
		{"--suite", "tree43", "--variants", "census,nosuch"},
		{"-f", "x.yaml", "--suite", "tree43"},
		{"--plant", "a=1", "-f", "x.yaml"},
	} {
		if code := benchRank(args); code != 2 {
			t.Errorf("bench rank %v: exit %d, want 2", args, code)
		}
	}
}
