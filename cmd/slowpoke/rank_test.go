package main

import (
	"slices"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

func TestRankWarnings(t *testing.T) {
	entry := func(svc string, warnings ...string) report.RankEntry {
		return report.RankEntry{Service: svc, Results: &report.Results{Warnings: warnings}}
	}
	entries := []report.RankEntry{
		entry("cart", "only CPU 0 is left", "the baseline's repetitions varied by 9%"),
		entry("catalog", "only CPU 0 is left"),
		{Service: "broken"}, // failed: no experiment
		entry("frontend", "only CPU 0 is left", "the baseline's repetitions varied by 9%", "only CPU 0 is left"),
	}
	got := rankWarnings(entries)
	want := []string{"only CPU 0 is left", "cart, frontend: the baseline's repetitions varied by 9%"}
	if !slices.Equal(got, want) {
		t.Errorf("rankWarnings = %q, want %q", got, want)
	}
	if got := rankWarnings(nil); len(got) != 0 {
		t.Errorf("no entries: %q", got)
	}
}
