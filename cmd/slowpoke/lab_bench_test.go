//go:build lab

package main

import (
	"fmt"
	"math"
	"testing"
)

// bench attach pairs the attached and the started run of each rep per
// point, leaving out a side that failed or a point that was infeasible.
func TestAttachRows(t *testing.T) {
	run := func(rep int, kind string, base float64, preds ...float64) attachRun {
		r := attachRun{Rep: rep, Kind: kind, BaselineRPS: base}
		for i, p := range preds {
			// The same point's percentage differs between runs in its
			// last digits (it comes from each run's u1).
			r.Points = append(r.Points, attachRunPoint{Reduction: fmt.Sprintf("%d%%", 20*(i+1)), ReductionPct: float64(20*(i+1)) - float64(rep)*1e-5, PredictedRPS: p})
		}
		return r
	}
	failed := run(3, "attached", 1)
	failed.Err = "predict: exit status 1"
	rows := attachRows([]attachRun{
		run(1, "attached", 110, 220, 0),
		run(1, "started", 100, 200, 300),
		run(2, "started", 100, 200, 300),
		run(2, "attached", 90, 180, 330),
		failed,
		run(3, "started", 100, 200, 300),
	})
	if len(rows) != 3 || rows[0].Point != "baseline" || rows[1].Point != "20%" || rows[2].Point != "40%" {
		t.Fatalf("rows: %+v", rows)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if b := rows[0]; len(b.Paired) != 2 || !near(b.Paired[0], 10) || !near(b.Paired[1], -10) || !near(b.MeanDiffPct, 0) || !near(b.RatioPct, 0) || !b.Within {
		t.Errorf("baseline: %+v", b)
	}
	if p := rows[2]; len(p.Attached) != 1 || len(p.Started) != 3 || len(p.Paired) != 1 || !near(p.RatioPct, 10) || p.Within {
		t.Errorf("40%%, one side infeasible in rep 1: %+v", p)
	}
}

func TestChangeKind(t *testing.T) {
	for change, want := range map[string]string{
		`cart stopped: "true", was "false"`:             "stopped",
		`cart frozen: "true", was "false"`:              "frozen",
		`cart freezer: "6:freezer:/slowpoke/x", was ""`: "moved",
		`cart thread 12 cpus: "1", was "0,1"`:           "pinned",
		`cart thread 12 nice: "-5", was "0"`:            "reniced",
		`cart start: "", was "123"`:                     "gone",
	} {
		if got := changeKind(change); got != want {
			t.Errorf("changeKind(%q) = %q, want %q", change, got, want)
		}
	}
}
