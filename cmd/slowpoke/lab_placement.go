//go:build lab

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aclements/go-moremath/stats"

	"github.com/slowpoke-dev/slowpoke/internal/record"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/model"
)

// placementIteration is one iteration of bench placement: a validate
// under keep placement per pause method, then a predict under slowpoke's
// shared placement, each run's results by variant ("keep/cgroup",
// "keep/signal", "shared").
type placementIteration struct {
	N       int
	Results map[string]*report.Results
	Errs    map[string]string
	// Truth is, with --truth-on, the throughput the application measured
	// as it runs (its deployed baseline) with the real change applied:
	// the truth of every variant's one point in this iteration. 0 where
	// the truth is the keep runs' ground truths, or its run failed.
	Truth float64 `json:",omitempty"`
}

// placementVariants are the variants of an iteration in the order they
// run, for methods (keep's pause methods).
func placementVariants(methods []string) []string {
	var out []string
	for _, m := range methods {
		out = append(out, "keep/"+m)
	}
	return append(out, "shared")
}

// benchPlacement measures the predictions for the user's own placement
// (an application slowpoke starts, unpinned) against its truth:
// validate --placement keep gives keep's prediction and the truth of the
// unpinned placement (its ground-truth runs are unpinned too), and
// predict --placement shared, right after, slowpoke's own placement's
// prediction and the bound it gives for the unpinned one.
//
// An application slowpoke attaches to has no knob that validate could
// set. With --truth-on and --truth-off (shell commands that apply a real
// change to the running application and take it back, a signal to a
// service, say), each keep variant runs predict at the one reduction the
// change is worth, and each iteration ends with the change applied and
// the application measured as it runs (a predict's deployed baseline):
// that throughput is the iteration's truth.
func benchPlacement(args []string) int {
	fs := benchFlags("placement")
	specPath := fs.String("f", "", "application spec, started by slowpoke or attached (required)")
	target := fs.String("target", "", "service to virtually speed up (required)")
	reduce := fs.String("reduce", "20,40,60,80%", "reductions, as a share of the target's cost (each run resolves them with its own u1)")
	iterations := fs.Int("iterations", 3, "iterations, each every keep variant and then slowpoke's placement")
	duration := fs.Duration("duration", 0, "measurement window (default: the spec's)")
	pauses := fs.String("pause", "cgroup,signal", "keep's pause methods, one validate each; the truth of a point is the mean of theirs")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-placement-<time>)")
	truthOn := fs.String("truth-on", "", "shell command that applies the real change to the running application (with --truth-off; one reduction, what the change is worth)")
	truthOff := fs.String("truth-off", "", "shell command that takes the change back; also run before the first iteration and after the last")
	rec := recordFlags(fs)
	if code, ok := parseArgs("slowpoke-lab bench placement", fs, args); !ok {
		return code
	}
	fail := func(code int, a ...any) int {
		fmt.Fprintln(os.Stderr, append([]any{"slowpoke-lab bench placement:"}, a...)...)
		return code
	}
	if *specPath == "" || *target == "" {
		return fail(2, "-f and --target are required")
	}
	rs, err := model.ParseReductions(*reduce)
	if err != nil {
		return fail(2, "--reduce:", err)
	}
	if (*truthOn == "") != (*truthOff == "") {
		return fail(2, "--truth-on and --truth-off go together")
	}
	if *truthOn != "" && len(rs) != 1 {
		return fail(2, "--truth-on: give one reduction, what the real change is worth (--reduce)")
	}
	if *iterations < 1 {
		return fail(2, "--iterations must be at least 1")
	}
	methods := strings.Split(*pauses, ",")
	for _, m := range methods {
		if m != "cgroup" && m != "signal" {
			return fail(2, fmt.Sprintf("--pause: %q: keep pauses by cgroup or signal", m))
		}
	}
	s, err := spec.Load(*specPath)
	if err != nil {
		return fail(1, errText(err))
	}
	if *out == "" {
		*out = filepath.Join("slowpoke-out", "bench-placement-"+time.Now().Format("20060102-150405"))
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(1, errText(err))
	}
	common := []string{"-f", *specPath, "--target", *target, "--reduce", *reduce, "--reps", "1", "--max-reps", "1"}
	if *duration > 0 {
		common = append(common, "--duration", duration.String())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	variants := placementVariants(methods)
	if *truthOff != "" {
		if err := shellFlag(ctx, "--truth-off", *truthOff); err != nil {
			return fail(1, err)
		}
		// Whatever happens, the application is left as it was found.
		defer func() {
			if err := shellFlag(context.Background(), "--truth-off", *truthOff); err != nil {
				fmt.Fprintln(os.Stderr, "slowpoke-lab bench placement:", err)
			}
		}()
	}
	var its []placementIteration
	for i := 1; i <= *iterations && ctx.Err() == nil; i++ {
		it := placementIteration{N: i, Results: map[string]*report.Results{}, Errs: map[string]string{}}
		for _, v := range variants {
			if ctx.Err() != nil {
				break
			}
			args := append([]string{"predict", "--placement", "shared"}, common...)
			if m, ok := strings.CutPrefix(v, "keep/"); ok {
				cmd := "validate"
				if *truthOn != "" {
					cmd = "predict"
				}
				args = append([]string{cmd, "--placement", "keep", "--pause", m}, common...)
			}
			dir := filepath.Join(*out, fmt.Sprintf("%s-%d", strings.ReplaceAll(v, "/", "-"), i))
			res, err := runPlacement(ctx, exe, dir, args)
			if err != nil {
				it.Errs[v] = err.Error()
				fmt.Fprintf(os.Stderr, "[%d/%d] %s: %v\n", i, *iterations, v, err)
				continue
			}
			it.Results[v] = res
			fmt.Fprintf(os.Stderr, "[%d/%d] %s: baseline %.0f req/s\n", i, *iterations, v, res.Baseline.RPS)
		}
		if *truthOn != "" && ctx.Err() == nil {
			it.Truth = placementTruth(ctx, exe, filepath.Join(*out, fmt.Sprintf("truth-%d", i)), common, *truthOn, *truthOff, it.Errs)
			fmt.Fprintf(os.Stderr, "[%d/%d] truth (the real change applied): %.0f req/s\n", i, *iterations, it.Truth)
		}
		its = append(its, it)
	}
	if ctx.Err() != nil {
		return fail(130, "interrupted")
	}
	r := &record.Record{Benchmark: "placement", Placement: "keep, shared"}
	r.Rows = placementRows(s.Name, *target, variants, its)
	r.Summarize()
	writePlacementTable(os.Stdout, r)
	path := filepath.Join(*out, "placement.json")
	if err := writeJSONFile(path, its); err != nil {
		return fail(1, err)
	}
	fmt.Printf("\nwrote %s\n", path)
	rec.write(r)
	for _, it := range its {
		if len(it.Errs) > 0 {
			return 1
		}
	}
	return 0
}

// runPlacement runs one slowpoke command into dir and reads its results.
func runPlacement(ctx context.Context, exe, dir string, args []string) (*report.Results, error) {
	if err := runInto(ctx, exe, dir, args); err != nil {
		return nil, err
	}
	return report.ReadJSON(filepath.Join(dir, "out", "results.json"))
}

// runInto runs one slowpoke command with --out dir/out, its output in
// dir/run.log; told to stop by ctx, it is interrupted as from the
// terminal, so that it gives everything back.
func runInto(ctx context.Context, exe, dir string, args []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(dir, "run.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, exe, append(args, "--out", filepath.Join(dir, "out"))...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v (see %s)", args[0], err, log.Name())
	}
	return nil
}

// shellFlag runs the shell command c that flag gave, its output in the
// error where it fails.
func shellFlag(ctx context.Context, flag, c string) error {
	out, err := exec.CommandContext(ctx, "sh", "-c", c).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %q: %v: %s", flag, c, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// placementTruth applies the real change (on), measures the application
// as it runs by a predict's deployed baseline, and takes the change back
// (off). A failure is noted in errs under "truth" and gives 0.
func placementTruth(ctx context.Context, exe, dir string, common []string, on, off string, errs map[string]string) float64 {
	if err := shellFlag(ctx, "--truth-on", on); err != nil {
		errs["truth"] = err.Error()
		return 0
	}
	res, err := runPlacement(ctx, exe, dir, append([]string{"predict", "--placement", "keep"}, common...))
	if offErr := shellFlag(context.Background(), "--truth-off", off); offErr != nil && err == nil {
		err = offErr
	}
	if err == nil && (res.DeployedBaseline == nil || res.DeployedBaseline.RPS <= 0) {
		err = fmt.Errorf("%s: no deployed baseline (is the application attached?)", dir)
	}
	if err != nil {
		errs["truth"] = err.Error()
		return 0
	}
	return res.DeployedBaseline.RPS
}

// placementRows are the iterations' points as record rows, each against
// the truth of the unpinned placement: the mean, per reduction, of the
// keep variants' ground truths in the same iteration. The variants are
// keep's, slowpoke's placement ("shared") and the bound that run gave for
// the unpinned placement ("bound", no interval). The configuration is
// "APP #N" for iteration N, and every row of an iteration carries the
// first keep run's time per call for its reduction, so that the
// variants' rows line up (each run resolves a share with its own u1).
func placementRows(app, target string, variants []string, its []placementIteration) []record.Row {
	var rows []record.Row
	for _, it := range its {
		var truths [][]float64
		var keys []float64
		for _, v := range variants {
			res := it.Results[v]
			if res == nil || !strings.HasPrefix(v, "keep/") {
				continue
			}
			for i, p := range res.Points {
				for len(truths) <= i {
					truths, keys = append(truths, nil), append(keys, p.ReductionUS)
				}
				if t, ok := p.TrueMean(); ok && t > 0 {
					truths[i] = append(truths[i], t)
				}
			}
		}
		if it.Truth > 0 {
			// The real change's truth (--truth-on), for the one reduction.
			for i := range truths {
				truths[i] = []float64{it.Truth}
			}
		}
		config := fmt.Sprintf("%s #%d", app, it.N)
		add := func(variant string, i int, p report.Point, pred float64, interval bool) {
			row := record.RowOf(config, target, variant, p)
			row.ReductionUS, row.PredictedRPS, row.TrueRPS = keys[i], pred, 0
			row.ErrorPct, row.NominalErrorPct, row.Covered = nil, nil, nil
			// slowpoke's placement answers for itself, not for the
			// unpinned placement whose truth this is.
			row.OtherPlacement = variant == "shared"
			if !interval {
				row.IntervalLowRPS, row.IntervalHighRPS, row.Estimate, row.DelayUsed = 0, 0, "", ""
				row.Flags = []string{}
			}
			if len(truths[i]) > 0 {
				row.TrueRPS = stats.Mean(truths[i])
				if pred > 0 {
					e := 100 * (pred/row.TrueRPS - 1)
					row.ErrorPct = &e
				}
				if interval && row.IntervalHighRPS > 0 {
					in := row.IntervalLowRPS <= row.TrueRPS && row.TrueRPS <= row.IntervalHighRPS
					row.Covered = &in
				}
			}
			rows = append(rows, row)
		}
		for _, v := range variants {
			res := it.Results[v]
			if res == nil {
				continue
			}
			for i, p := range res.Points {
				if i >= len(keys) {
					break
				}
				add(v, i, p, p.PredictedRPS, true)
			}
		}
		if res := it.Results["shared"]; res != nil {
			for i, p := range res.Points {
				if i < len(keys) && p.DeployedBoundRPS > 0 {
					add("bound", i, p, p.DeployedBoundRPS, false)
				}
			}
		}
	}
	return rows
}

// writePlacementTable prints each variant's RMSE against the unpinned
// truth, its worst error and how many intervals held the truth.
func writePlacementTable(w io.Writer, r *record.Record) {
	fmt.Fprintln(w, "against the truth of the unpinned placement:")
	fmt.Fprintf(w, "%-14s %6s %8s %9s %s\n", "variant", "points", "RMSE", "max|err|", "intervals held")
	for _, s := range r.Summary {
		held := "-"
		if s.WithInterval > 0 {
			held = strconv.Itoa(s.Covered) + "/" + strconv.Itoa(s.WithInterval)
		}
		fmt.Fprintf(w, "%-14s %6d %7.1f%% %8.1f%% %s\n", s.Variant, s.Points, s.RMSEPct, s.MaxAbsPct, held)
	}
}
