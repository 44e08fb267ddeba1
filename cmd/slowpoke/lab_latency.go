//go:build lab

package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aclements/go-moremath/stats"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/controller"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/suite"
)

// latencyCases are bench latency's default cases besides the latency
// suite: the demo and the four applications with the paper's targets.
const latencyCases = "examples/demo/app.yaml=cart,apps/boutique/app.yaml=cart,apps/hotel/app.yaml=profile,apps/social/app.yaml=home-timeline,apps/movie/app.yaml=movie-reviews"

// benchLatency runs slowpoke latency --validate on the latency suite and
// on applications, and prints every (request type, reduction) pair's
// errors and the share within the targets' bounds; with --overhead it
// measures what the what-if costs at a delay of 0 instead.
func benchLatency(args []string) int {
	fs := benchFlags("latency")
	cases := fs.String("cases", "suite,"+latencyCases, `comma-separated "suite" (the four latency shapes) and spec=target pairs`)
	reduce := fs.String("reduce", "50%", "reductions of every target")
	requests := fs.Int("requests", 1000, "responses per request type and run")
	runs := fs.Int("runs", 3, "repetitions of every run within a case, interleaved and pooled")
	overhead := fs.Bool("overhead", false, "measure the cost of the what-if's metadata at delay 0 on the demo instead: p50 in and out of the what-if, alternated")
	compare := fs.Bool("compare", false, "also predict at the baseline's rate, without matching the cores' load, and print both errors")
	holds := fs.Bool("holds", false, "place each target on cores of its own, and also predict by holding the other services' cores (the load generator's too) at every call of the target, on a clock that leaves the holds out; print both errors")
	holdsBatch := fs.Int("holds-batch", 1, "with --holds, above 1: also predict by holds of this many times the reduction every this many calls of the target (fewer, longer holds), and print its errors")
	stretch := fs.Bool("stretch", false, "also predict with the target's delay per call stretched by how long its threads waited for a core in the prediction run (1 + wait / run), at the same rate, and print its errors")
	reps := fs.Int("reps", 5, "with --overhead: runs in and out of the what-if")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-latency-<time>)")
	if code, ok := parseArgs("slowpoke-lab bench latency", fs, args); !ok {
		return code
	}
	if *holdsBatch < 1 || *holdsBatch > 1 && !*holds {
		fmt.Fprintf(os.Stderr, "slowpoke-lab bench latency: --holds-batch %d: it must be at least 1, and above 1 only with --holds\n", *holdsBatch)
		return 2
	}
	extra, err := benchSetup(out, "latency")
	if err != nil {
		fmt.Fprintf(os.Stderr, "slowpoke-lab bench latency: %v\n", errText(err))
		return 1
	}
	if *overhead {
		if err := latencyOverhead(extra, *reps); err != nil {
			fmt.Fprintf(os.Stderr, "slowpoke-lab bench latency: %v\n", errText(err))
			return failureStatus(err)
		}
		return 0
	}
	type kase struct{ spec, target string }
	var ks []kase
	for _, cs := range strings.Split(*cases, ",") {
		cs = strings.TrimSpace(cs)
		if cs == "suite" {
			cfgs, err := suite.Latency(1)
			if err != nil {
				fmt.Fprintf(os.Stderr, "slowpoke-lab bench latency: %v\n", errText(err))
				return 1
			}
			for _, c := range cfgs {
				p, err := suite.Write(filepath.Join(*out, "suite"), c)
				if err != nil {
					fmt.Fprintf(os.Stderr, "slowpoke-lab bench latency: %v\n", errText(err))
					return 1
				}
				ks = append(ks, kase{p, c.Target})
			}
			continue
		}
		p, t, ok := strings.Cut(cs, "=")
		if !ok || t == "" {
			fmt.Fprintf(os.Stderr, "slowpoke-lab bench latency: --cases: %q is not spec=target\n", cs)
			return 2
		}
		ks = append(ks, kase{p, t})
	}
	type row struct {
		k       kase
		res     *report.Latency
		elapsed time.Duration
		err     error
	}
	var rows []row
	for i, k := range ks {
		fmt.Fprintf(os.Stderr, "\n== case %d/%d: %s, target %s\n", i+1, len(ks), k.spec, k.target)
		r := row{k: k}
		start := time.Now()
		dir := filepath.Join(*out, fmt.Sprintf("%02d-%s", i+1, filepath.Base(filepath.Dir(k.spec))))
		r.err = latencyMain(latencyConfig{specPath: k.spec, target: k.target, reduce: *reduce, validate: true, requests: *requests, reps: *runs,
			outDir: dir, extraPath: extra, compare: *compare, holds: *holds, holdsBatch: *holdsBatch, stretch: *stretch, onResult: func(l *report.Latency) { r.res = l }})
		r.elapsed = time.Since(start)
		rows = append(rows, r)
		if errors.Is(r.err, context.Canceled) {
			break
		}
	}
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	head := "case\ttarget\trequest\treduction\tbase p50\tpred p50\ttrue p50\terr p50\tbase p99\tpred p99\ttrue p99\terr p99\tfaster pred/true\twithin\ttime"
	if *compare {
		head += "\tunmatched err p50\tunmatched err p99"
	}
	if *holds {
		head += "\tholds p50\tholds err p50\tholds p99\tholds err p99\tbusy pred/holds/true\ttarget in holds"
	}
	if *stretch {
		head += "\tstretch\tstretched err p50\tstretched err p99"
	}
	if *holdsBatch > 1 {
		head += fmt.Sprintf("\tbatch %d err p50\tbatch %d err p99\tbatch %d busy\ttarget in batch %d holds", *holdsBatch, *holdsBatch, *holdsBatch, *holdsBatch)
	}
	fmt.Fprintln(tw, head)
	var u50, u99 []float64
	var holdsErr, stretchedErr, batchedErr errSeries
	var in, n int
	var e50, e99 []float64
	failed := false
	for _, r := range rows {
		name := filepath.Base(filepath.Dir(r.k.spec))
		if r.err != nil {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t\t\t\t\t\t\t\t%s error: %v\n", name, r.k.target, r.elapsed.Round(time.Second), r.err)
			failed = true
			continue
		}
		base := map[string]report.LatencyDist{}
		for _, b := range r.res.Baseline {
			base[b.Request] = b
		}
		for _, p := range r.res.Points {
			n++
			if p.Within {
				in++
			}
			e50, e99 = append(e50, p.ErrP50Pct), append(e99, p.ErrP99Pct)
			verdict := func(pv float64) string {
				if pv < 0.05 {
					return "yes"
				}
				return "no"
			}
			line := fmt.Sprintf("%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%+.1f%%\t%.2f\t%.2f\t%.2f\t%+.1f%%\t%s/%s\t%v\t%s", name, r.k.target, p.Request, p.Reduction,
				base[p.Request].P50MS, p.PredictedP50MS, p.TrueP50MS, p.ErrP50Pct, base[p.Request].P99MS, p.PredictedP99MS, p.TrueP99MS, p.ErrP99Pct,
				verdict(p.MannWhitneyP), verdict(derefOr(p.TrueMannWhitneyP, 1)), p.Within, r.elapsed.Round(time.Second))
			dg := p.Diagnostics // the comparisons asked for
			if dg == nil {
				dg = &report.LatencyDiagnostics{}
			}
			if dg.Unmatched != nil {
				line += fmt.Sprintf("\t%+.1f%%\t%+.1f%%", dg.UnmatchedErrP50Pct, dg.UnmatchedErrP99Pct)
				u50, u99 = append(u50, dg.UnmatchedErrP50Pct), append(u99, dg.UnmatchedErrP99Pct)
			}
			if dg.Holds != nil {
				line += fmt.Sprintf("\t%.2f\t%+.1f%%\t%.2f\t%+.1f%%\t%.0f/%.0f/%.0f%%\t%.0f%%", dg.Holds.P50MS, dg.HoldsErrP50Pct, dg.Holds.P99MS, dg.HoldsErrP99Pct,
					p.PredictedBusyPct, dg.HoldsBusyPct, p.TrueBusyPct, dg.HoldsTargetBusyPct)
				holdsErr.add(dg.HoldsErrP50Pct, dg.HoldsErrP99Pct)
			}
			if dg.Stretched != nil {
				line += fmt.Sprintf("\t%.2f\t%+.1f%%\t%+.1f%%", dg.Stretch, dg.StretchedErrP50Pct, dg.StretchedErrP99Pct)
				stretchedErr.add(dg.StretchedErrP50Pct, dg.StretchedErrP99Pct)
			}
			if dg.HoldsBatched != nil {
				line += fmt.Sprintf("\t%+.1f%%\t%+.1f%%\t%.0f%%\t%.0f%%", dg.HoldsBatchedErrP50Pct, dg.HoldsBatchedErrP99Pct, dg.HoldsBatchedBusyPct, dg.HoldsBatchedTargetBusyPct)
				batchedErr.add(dg.HoldsBatchedErrP50Pct, dg.HoldsBatchedErrP99Pct)
			}
			fmt.Fprintln(tw, line)
		}
	}
	tw.Flush()
	if n > 0 {
		fmt.Printf("\n%d of %d pairs within ±%d%% at p50 and ±%d%% at p99 (%.0f%%; target 90%%)\n", in, n, report.LatencyP50BoundPct, report.LatencyP99BoundPct, float64(in)/float64(n)*100)
		fmt.Printf("p50 error: mean |err| %.1f%%, worst %+.1f%%; p99 error: mean |err| %.1f%%, worst %+.1f%%\n", meanAbs(e50), worst(e50), meanAbs(e99), worst(e99))
		holdsErr.print("holds")
		stretchedErr.print("stretched")
		batchedErr.print(fmt.Sprintf("holds of %d times the reduction every %d calls", *holdsBatch, *holdsBatch))
		if len(u50) > 0 {
			fmt.Printf("unmatched (at the baseline's rate): p50 mean |err| %.1f%%, worst %+.1f%%; p99 mean |err| %.1f%%, worst %+.1f%%\n", meanAbs(u50), worst(u50), meanAbs(u99), worst(u99))
		}
	}
	fmt.Printf("results in %s\n", *out)
	if n := len(rows); n > 0 && errors.Is(rows[n-1].err, context.Canceled) {
		return 130
	}
	if failed {
		return 1
	}
	return 0
}

// errSeries gathers one kind of prediction's p50 and p99 errors (%) over
// the pairs, and counts those within the targets' bounds.
type errSeries struct {
	p50, p99 []float64
	within   int
}

func (e *errSeries) add(p50, p99 float64) {
	e.p50, e.p99 = append(e.p50, p50), append(e.p99, p99)
	if math.Abs(p50) <= report.LatencyP50BoundPct && math.Abs(p99) <= report.LatencyP99BoundPct {
		e.within++
	}
}

// print prints the summary line of the series as name, if it has pairs.
func (e *errSeries) print(name string) {
	if len(e.p50) == 0 {
		return
	}
	fmt.Printf("%s: %d of %d pairs within the bounds; p50 mean |err| %.1f%%, worst %+.1f%%; p99 mean |err| %.1f%%, worst %+.1f%%\n",
		name, e.within, len(e.p50), meanAbs(e.p50), worst(e.p50), meanAbs(e.p99), worst(e.p99))
}

func meanAbs(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += math.Abs(x)
	}
	return s / float64(len(xs))
}

func worst(xs []float64) float64 {
	var w float64
	for _, x := range xs {
		if math.Abs(x) > math.Abs(w) {
			w = x
		}
	}
	return w
}

// latencyOverhead measures the demo's p50 in and out of a latency what-if
// at delay 0, alternated.
func latencyOverhead(extra []string, reps int) error {
	s, err := spec.Load("examples/demo/app.yaml")
	if err != nil {
		return err
	}
	// The services' logs go to a directory of its own, kept only when the
	// run fails.
	dir, err := os.MkdirTemp("", "slowpoke-bench-latency-")
	if err != nil {
		return err
	}
	app, err := startSession(s, dir, local.Options{Options: backend.Options{MaxPause: controller.DefaultMaxPause}, ExtraPath: extra}, kube.Options{})
	if err != nil {
		// A start refused before any log was written leaves nothing.
		os.Remove(filepath.Join(dir, "logs"))
		if os.Remove(dir) == nil {
			return err
		}
		return fmt.Errorf("%w (logs in %s)", err, dir)
	}
	off, on, rate, err := experiment.LatencyOverhead(app.ctx, app.d, experiment.LatencyOptions{Target: "cart", Duration: 5 * time.Second, Progress: os.Stderr}, reps)
	err = app.explain(err)
	app.close()
	if err != nil {
		return fmt.Errorf("%w (logs in %s)", err, dir)
	}
	os.RemoveAll(dir)
	fmt.Printf("\ndemo, open loop at %.0f req/s, %d runs each, alternated (p50, ms):\n", rate, reps)
	fmt.Printf("  out of the what-if: %s (median %.3f)\n", fmtList(off), stats.Sample{Xs: off}.Quantile(0.5))
	fmt.Printf("  in it, delay 0:     %s (median %.3f)\n", fmtList(on), stats.Sample{Xs: on}.Quantile(0.5))
	mo, mi := stats.Sample{Xs: off}.Quantile(0.5), stats.Sample{Xs: on}.Quantile(0.5)
	fmt.Printf("  overhead of the metadata: %+.1f%% of p50 (target: within 2%%)\n", (mi-mo)/mo*100)
	return nil
}

func fmtList(xs []float64) string {
	var p []string
	for _, x := range xs {
		p = append(p, fmt.Sprintf("%.3f", x))
	}
	return strings.Join(p, " ")
}

func derefOr(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}
