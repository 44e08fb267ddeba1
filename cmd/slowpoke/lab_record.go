//go:build lab

package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/lab"
	"github.com/slowpoke-dev/slowpoke/internal/record"
)

// recordConfig is where a benchmark records its run (internal/record).
type recordConfig struct {
	dir, note string
	start     record.Start
}

// recordFlags adds --record and --note to a benchmark's flags.
func recordFlags(fs *flag.FlagSet) *recordConfig {
	c := &recordConfig{}
	fs.StringVar(&c.dir, "record", "records", "directory the run's record is written to, for docs/accuracy.md (internal/record); empty: none")
	fs.StringVar(&c.note, "note", "", "a sentence the record keeps: what the run was for, what ran beside it")
	// The commit and date are those of the run's start: the work tree
	// may move on while a benchmark runs.
	c.start = record.Begin("")
	return c
}

// write stamps r with this run (date, machine, commit, the command line)
// and writes it, saying where; a failure is reported, not fatal: the
// benchmark's own output is already written.
func (c *recordConfig) write(r *record.Record) {
	if c.dir == "" {
		return
	}
	r.Stamp(c.start, append([]string{labProgram}, os.Args[1:]...))
	r.Note = c.note
	r.Summarize()
	path, err := record.Write(c.dir, r)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: record not written: %v\n", labProgram, err)
		return
	}
	fmt.Printf("recorded %s (docs/accuracy.md: go test ./internal/record -run TestAccuracyPage -update)\n", path)
}

// comparisonRecord is bench methods' run as a record.
func comparisonRecord(c *experiment.Comparison) *record.Record {
	r := &record.Record{Benchmark: "methods"}
	if p, ok := c.Settings["placement"].(string); ok {
		r.Placement = p
	}
	for _, m := range c.Methods {
		for _, p := range m.Points {
			r.Rows = append(r.Rows, record.RowOf(c.App, c.Target, m.Method, p))
		}
	}
	return r
}

// accuracyRecord is bench accuracy's run as a record: every
// configuration's points, per variant where it compared variants.
func accuracyRecord(res *lab.AccuracyResult, placement string) *record.Record {
	r := &record.Record{Benchmark: "accuracy", Placement: placement}
	for _, cfg := range res.Configs {
		// The placement the runs had, not the one asked for ("auto").
		if cfg.Results != nil && cfg.Results.Settings.PlacementMode != "" {
			r.Placement = cfg.Results.Settings.PlacementMode
		}
		if cfg.Comparison != nil {
			for _, m := range cfg.Comparison.Methods {
				for _, p := range m.Points {
					r.Rows = append(r.Rows, record.RowOf(cfg.Name, cfg.Target, m.Method, p))
				}
			}
			continue
		}
		for _, p := range cfg.Points {
			r.Rows = append(r.Rows, record.RowOf(cfg.Name, cfg.Target, "validate", p))
		}
	}
	return r
}
