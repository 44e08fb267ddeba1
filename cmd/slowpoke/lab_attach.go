//go:build lab

package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/aclements/go-moremath/stats"

	"github.com/slowpoke-dev/slowpoke/internal/record"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/model"
)

// attachRun is one predict of bench attach: on the demo started by a
// script and attached to, or started by slowpoke.
type attachRun struct {
	Rep      int     `json:"rep"`
	Kind     string  `json:"kind"` // attached or started
	ElapsedS float64 `json:"elapsed_s"`
	Dir      string  `json:"dir"`
	Err      string  `json:"error,omitempty"`
	// Left is how the attached services ran differently after the run
	// (must be empty).
	Left []string `json:"left,omitempty"`

	BaselineRPS float64          `json:"baseline_rps"`
	Trigger     string           `json:"trigger"`
	PauseMethod string           `json:"pause_method"`
	Placement   string           `json:"placement_mode"`
	Cores       map[string][]int `json:"placement"`
	Points      []attachRunPoint `json:"points"`
}

type attachRunPoint struct {
	// Reduction is the point as --reduce gave it: the runs' points are
	// paired by it (ReductionPct, from the run's own u1, differs between
	// runs in its last digits).
	Reduction    string  `json:"reduction"`
	ReductionPct float64 `json:"reduction_pct"`
	PredictedRPS float64 `json:"predicted_rps"` // 0: infeasible
	SpreadPct    float64 `json:"spread_pct"`    // within the run's repetitions
}

// attachRow compares one point (or the baseline) of the attached and the
// started runs; it is the record's own.
type attachRow = record.AttachPoint

type attachBench struct {
	Reduce      string      `json:"reduce"`
	Reps        int         `json:"reps"`
	PredictReps int         `json:"predict_reps"`
	Args        []string    `json:"predict_args"`
	Runs        []attachRun `json:"runs"`
	Rows        []attachRow `json:"rows"`
}

// benchAttach predicts the demo started by a plain shell script and
// attached to, and the demo started by slowpoke, alternately, and
// compares the two per point.
func benchAttach(args []string) int {
	fs := benchFlags("attach")
	reduce := fs.String("reduce", "20,40,60%", "reductions of cart's per-call cost")
	reps := fs.Int("reps", 3, "pairs of runs (attached and started, which goes first alternating)")
	predictReps := fs.Int("predict-reps", 1, "--reps of every predict")
	duration := fs.Duration("duration", 0, "measurement window (default: the demo's 3s)")
	pauseFlag := fs.String("pause", "auto", "--pause of both")
	placement := fs.String("placement", "auto", "--placement of both")
	trigger := fs.String("trigger", "auto", "--trigger of both (auto: the attached target's rounds follow its CPU, the started one's its counted calls)")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-attach-<time>)")
	rec := recordFlags(fs)
	if code, ok := parseArgs("slowpoke-lab bench attach", fs, args); !ok {
		return code
	}
	if _, err := model.ParseReductions(*reduce); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench attach: --reduce:", err)
		return 2
	}
	if *reps < 1 || *predictReps < 1 {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench attach: --reps and --predict-reps must be at least 1")
		return 2
	}
	if *out == "" {
		*out = filepath.Join("slowpoke-out", "bench-attach-"+time.Now().Format("20060102-150405"))
	}
	// Absolute: the emulator's directory goes on predict's PATH, where a
	// relative one would be refused.
	var err error
	if *out, err = filepath.Abs(*out); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench attach:", errText(err))
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench attach:", errText(err))
		return 1
	}
	// The started demo: the demo's spec and a slowpoke-emu link on the
	// services' PATH, as slowpoke demo sets it up.
	started := predictConfig{outDir: *out}
	if err := demoSetup(&started); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench attach:", errText(err))
		return 1
	}
	predictArgs := []string{"--target", "cart", "--reduce", *reduce, "--reps", strconv.Itoa(*predictReps),
		"--pause", *pauseFlag, "--placement", *placement, "--trigger", *trigger}
	if *duration > 0 {
		predictArgs = append(predictArgs, "--duration", duration.String())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := attachBench{Reduce: *reduce, Reps: *reps, PredictReps: *predictReps, Args: predictArgs}
	for rep := 1; rep <= *reps && ctx.Err() == nil; rep++ {
		kinds := []string{"attached", "started"}
		if rep%2 == 0 {
			kinds = []string{"started", "attached"}
		}
		for _, kind := range kinds {
			if ctx.Err() != nil {
				break
			}
			dir, err := filepath.Abs(filepath.Join(*out, fmt.Sprintf("%s-%d", kind, rep)))
			if err != nil {
				fmt.Fprintln(os.Stderr, "slowpoke-lab bench attach:", errText(err))
				return 1
			}
			r := attachRun{Rep: rep, Kind: kind, Dir: dir}
			if kind == "attached" {
				r.run(ctx, exe, predictArgs, "")
			} else {
				r.run(ctx, exe, append([]string{"-f", started.specPath}, predictArgs...), started.extraPath[0])
			}
			fmt.Fprintf(os.Stderr, "[%d/%d] %s\n", rep, *reps, r.summary())
			b.Runs = append(b.Runs, r)
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench attach: interrupted")
		return 130
	}
	b.Rows = attachRows(b.Runs)
	fmt.Println()
	writeAttachTable(os.Stdout, &b)
	path := filepath.Join(*out, "attach.json")
	if err := writeJSONFile(path, &b); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("\nwrote %s\n", path)
	failed := false
	for _, r := range b.Runs {
		failed = failed || r.Err != "" || len(r.Left) > 0
	}
	// A run that left the services changed or failed is in attach.json
	// and the table; the record, for the accuracy page, is of a whole
	// benchmark only.
	if failed {
		return 1
	}
	rec.write(attachRecord(&b))
	return 0
}

// attachRecord is bench attach's run as a record.
func attachRecord(b *attachBench) *record.Record {
	r := &record.Record{Benchmark: "attach", Attach: b.Rows}
	var ps []string
	for _, run := range b.Runs {
		p := run.Placement
		if p == "" || slices.Contains(ps, p) {
			continue
		}
		ps = append(ps, p)
	}
	r.Placement = strings.Join(ps, "; ")
	return r
}

// run runs one predict into r.Dir: on the demo started by a script and
// attached to when extraPath is empty (args then get -f), on the demo
// slowpoke starts otherwise (extraPath holds slowpoke-emu).
func (r *attachRun) run(ctx context.Context, exe string, args []string, extraPath string) {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		r.Err = err.Error()
		return
	}
	var a *attachedDemo
	if extraPath == "" {
		app := filepath.Join(r.Dir, "app")
		if err := os.MkdirAll(app, 0o755); err != nil {
			r.Err = err.Error()
			return
		}
		var err error
		a, err = launchAttachedDemo(app, exe)
		if a != nil {
			defer a.stop()
		}
		if err != nil {
			r.Err = err.Error()
			return
		}
		args = append([]string{"-f", a.spec}, args...)
	}
	log, err := os.Create(filepath.Join(r.Dir, "predict.log"))
	if err != nil {
		r.Err = err.Error()
		return
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, exe, append([]string{"predict"}, append(args, "--out", filepath.Join(r.Dir, "out"))...)...)
	// Ctrl-C reaches predict from the terminal; should only this
	// benchmark be told to stop, predict is told the same way, so that it
	// gives everything back.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	cmd.Stdout, cmd.Stderr = log, log
	if extraPath != "" {
		cmd.Env = append(os.Environ(), "PATH="+extraPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	start := time.Now() // predict's own time: not the demo's start, nor waiting for it to be as before
	err = cmd.Run()
	r.ElapsedS = time.Since(start).Seconds()
	if err != nil {
		r.Err = fmt.Sprintf("predict: %v (see %s)", err, log.Name())
	}
	if a != nil {
		r.Left = a.waitAsBefore(20 * time.Second)
	}
	if r.Err != "" {
		return
	}
	res, err := report.ReadJSON(filepath.Join(r.Dir, "out", "results.json"))
	if err != nil {
		r.Err = err.Error()
		return
	}
	r.BaselineRPS = res.Baseline.RPS
	r.Trigger = res.Trigger
	r.PauseMethod = res.Settings.PauseMethod
	r.Placement = res.Settings.PlacementMode
	r.Cores = res.Settings.Placement
	for i, p := range res.Points {
		name := fmt.Sprintf("%.0f%%", p.ReductionPct)
		if len(res.Settings.Reductions) == len(res.Points) {
			name = res.Settings.Reductions[i]
		}
		r.Points = append(r.Points, attachRunPoint{Reduction: name, ReductionPct: p.ReductionPct, PredictedRPS: p.PredictedRPS, SpreadPct: p.SpreadPct})
	}
}

func (r *attachRun) summary() string {
	s := fmt.Sprintf("%s (%.0f s): ", r.Kind, r.ElapsedS)
	if r.Err != "" {
		return s + "error: " + r.Err
	}
	s += fmt.Sprintf("baseline %.0f req/s", r.BaselineRPS)
	for _, p := range r.Points {
		s += fmt.Sprintf(", %s: %.0f", p.Reduction, p.PredictedRPS)
	}
	s += fmt.Sprintf(" (trigger %s, pause %s, placement %s)", r.Trigger, r.PauseMethod, r.Placement)
	if len(r.Left) > 0 {
		s += "; LEFT CHANGED: " + strings.Join(r.Left, "; ")
	}
	return s
}

// attachRows pairs the attached and the started runs of each rep, per
// point.
func attachRows(runs []attachRun) []attachRow {
	byRep := map[int]map[string]*attachRun{}
	var reps []int
	var points []string
	for i := range runs {
		r := &runs[i]
		if r.Err != "" {
			continue
		}
		if byRep[r.Rep] == nil {
			byRep[r.Rep] = map[string]*attachRun{}
			reps = append(reps, r.Rep)
		}
		byRep[r.Rep][r.Kind] = r
		for _, p := range r.Points {
			if !slices.Contains(points, p.Reduction) {
				points = append(points, p.Reduction)
			}
		}
	}
	// value is a run's baseline (point ""), or its prediction at point;
	// 0 where it has none (failed, infeasible).
	value := func(r *attachRun, point string) float64 {
		if r == nil {
			return 0
		}
		if point == "" {
			return r.BaselineRPS
		}
		for _, p := range r.Points {
			if p.Reduction == point {
				return p.PredictedRPS
			}
		}
		return 0
	}
	row := func(name, point string) attachRow {
		w := attachRow{Point: name}
		for _, rep := range reps {
			at, st := value(byRep[rep]["attached"], point), value(byRep[rep]["started"], point)
			if at > 0 {
				w.Attached = append(w.Attached, at)
			}
			if st > 0 {
				w.Started = append(w.Started, st)
			}
			if at > 0 && st > 0 {
				w.Paired = append(w.Paired, 100*(at/st-1))
			}
		}
		if len(w.Paired) > 0 {
			w.MeanDiffPct = stats.Mean(w.Paired)
		}
		if len(w.Attached) > 0 && len(w.Started) > 0 {
			w.RatioPct = 100 * (stats.Mean(w.Attached)/stats.Mean(w.Started) - 1)
			w.Within = math.Abs(w.RatioPct) <= 5
		}
		return w
	}
	rows := []attachRow{row("baseline", "")}
	for _, p := range points {
		rows = append(rows, row(p, p))
	}
	return rows
}

// spreadText is "mean [min–max]" of xs, or "n/a".
func spreadText(xs []float64) string {
	if len(xs) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f [%.0f–%.0f]", stats.Mean(xs), slices.Min(xs), slices.Max(xs))
}

func writeAttachTable(w io.Writer, b *attachBench) {
	fmt.Fprintf(w, "the demo attached (started by a shell script) against started by slowpoke, %d pairs, which first alternating; predict %s\n\n", b.Reps, strings.Join(b.Args, " "))
	var said []string
	for _, r := range b.Runs {
		line := fmt.Sprintf("%s: trigger %s, pause %s, placement %s %v", r.Kind, r.Trigger, r.PauseMethod, r.Placement, r.Cores)
		if r.Err == "" && !slices.Contains(said, line) {
			said = append(said, line)
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "point\tattached req/s mean [min–max]\tstarted req/s mean [min–max]\tattached/started-1 per pair\tmean of pairs\tof means\twithin 5%")
	for _, row := range b.Rows {
		var pairs []string
		for _, p := range row.Paired {
			pairs = append(pairs, fmt.Sprintf("%+.1f%%", p))
		}
		verdict := "no"
		if row.Within {
			verdict = "yes"
		}
		if len(row.Attached) == 0 || len(row.Started) == 0 {
			verdict = "n/a"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.1f%%\t%+.1f%%\t%s\n", row.Point, spreadText(row.Attached), spreadText(row.Started), strings.Join(pairs, " "), row.MeanDiffPct, row.RatioPct, verdict)
	}
	tw.Flush()
	var failed []string
	for _, r := range b.Runs {
		if r.Err != "" {
			failed = append(failed, fmt.Sprintf("%s %d: %s", r.Kind, r.Rep, r.Err))
		}
		if len(r.Left) > 0 {
			failed = append(failed, fmt.Sprintf("%s %d left the services changed: %s", r.Kind, r.Rep, strings.Join(r.Left, "; ")))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(failed, "\n"))
	}
	fmt.Fprintln(w, "\ntarget (issue 36): the attached prediction within 5% of the started one at every point (here: of the means)")
}

// benchFaults runs fault trials on the demo started by a plain shell
// script: predict attached to it, the orchestrator, a controller or the
// guard SIGKILLed mid-pause, and records how the services were given
// back.
func benchFaults(args []string) int {
	fs := benchFlags("faults")
	trials := fs.Int("trials", 10, "trials per victim")
	victims := fs.String("victims", "orchestrator,controller,guard", "what is SIGKILLed, in turn")
	methods := fs.String("pause", "signal,cgroup,cores", "pause methods, in turn over each victim's trials")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-faults-<time>)")
	if code, ok := parseArgs("slowpoke-lab bench faults", fs, args); !ok {
		return code
	}
	vs := strings.Split(*victims, ",")
	for _, v := range vs {
		if v != "orchestrator" && v != "controller" && v != "guard" {
			fmt.Fprintf(os.Stderr, "slowpoke-lab bench faults: --victims: %q is not orchestrator, controller or guard\n", v)
			return 2
		}
	}
	ms, err := parseMethods(*methods)
	if err != nil || *trials < 1 {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench faults: --pause:", err, "(and --trials must be at least 1)")
		return 2
	}
	if *out == "" {
		*out = filepath.Join("slowpoke-out", "bench-faults-"+time.Now().Format("20060102-150405"))
	}
	if *out, err = filepath.Abs(*out); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench faults:", err)
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench faults:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	launch := func(n int) (*attachedDemo, error) {
		dir := filepath.Join(*out, "app-"+strconv.Itoa(n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return launchAttachedDemo(dir, exe)
	}
	launches := 1
	a, err := launch(launches)
	if a != nil {
		defer func() { a.stop() }()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench faults:", err)
		return 1
	}
	var results []faultTrial
	for i := 0; i < *trials && ctx.Err() == nil; i++ {
		for _, v := range vs {
			if ctx.Err() != nil {
				break
			}
			method := string(ms[i%len(ms)])
			dir := filepath.Join(*out, fmt.Sprintf("%s-%d", v, i+1))
			r := runFaultTrial(exe, a, v, method, i, dir)
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "predict.log"), []byte(r.Output), 0o644)
			results = append(results, r)
			fmt.Fprintf(os.Stderr, "[%d/%d] %s\n", i+1, *trials, r.summary())
			if !r.clean() && ctx.Err() == nil {
				// The next trials on a demo of their own.
				a.stop()
				launches++
				if a, err = launch(launches); err != nil {
					fmt.Fprintln(os.Stderr, "slowpoke-lab bench faults: starting the demo again:", err)
					return 1
				}
			}
		}
	}
	fmt.Println()
	writeFaultsTable(os.Stdout, results)
	path := filepath.Join(*out, "faults.json")
	if err := writeJSONFile(path, results); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("\nwrote %s\n", path)
	if ctx.Err() != nil {
		return 130
	}
	for _, r := range results {
		if !r.clean() {
			return 1
		}
	}
	return 0
}

func (r *faultTrial) summary() string {
	s := fmt.Sprintf("%s killed (%s), trial %d: ", r.Victim, r.Method, r.Trial)
	if r.Err != "" {
		return s + "not run: " + r.Err
	}
	s += fmt.Sprintf("%.1f s into the slowdown runs (%s); seen after: %s; as before after %.0f ms; run: %s", r.KilledAfterS, orText(r.Paused, "no pause seen"), orText(strings.Join(r.Seen, ","), "nothing"), r.RecoveryMS, r.RunEnd)
	if !r.clean() {
		s += "; LEFT: " + r.leftText()
	}
	return s
}

func (r *faultTrial) leftText() string {
	var left []string
	left = append(left, r.Left...)
	left = append(left, r.Leftovers...)
	left = append(left, r.FrozenCgroups...)
	if r.AnswerErr != "" {
		left = append(left, "no answer: "+r.AnswerErr)
	}
	if r.Err != "" {
		left = append(left, r.Err)
	}
	if len(left) == 0 {
		return "nothing"
	}
	return strings.Join(left, "; ")
}

func orText(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func writeFaultsTable(w io.Writer, results []faultTrial) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "victim\ttrial\tpause\tkilled at\tpaused at kill\tseen after the kill\tas before after\trun ended\tleft stopped/frozen/pinned/reniced/moved, processes, frozen cgroups")
	for _, r := range results {
		rec := "never"
		if r.RecoveryMS >= 0 {
			rec = fmt.Sprintf("%.0f ms", r.RecoveryMS)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f s\t%s\t%s\t%s\t%s\t%s\n", r.Victim, r.Trial, r.Method, r.KilledAfterS, orText(r.Paused, "-"), orText(strings.Join(r.Seen, ","), "-"), rec, r.RunEnd, r.leftText())
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "victim\ttrials\tkilled mid-pause\tleft nothing\tas before after: median\tmax")
	var victims []string
	for _, r := range results {
		if !slices.Contains(victims, r.Victim) {
			victims = append(victims, r.Victim)
		}
	}
	for _, v := range victims {
		n, paused, clean := 0, 0, 0
		var rec []float64
		for _, r := range results {
			if r.Victim != v {
				continue
			}
			n++
			if r.Paused != "" {
				paused++
			}
			if r.clean() {
				clean++
			}
			if r.RecoveryMS >= 0 {
				rec = append(rec, r.RecoveryMS)
			}
		}
		med, hi := "-", "-"
		if len(rec) > 0 {
			slices.Sort(rec)
			med, hi = fmt.Sprintf("%.0f ms", (rec[(len(rec)-1)/2]+rec[len(rec)/2])/2), fmt.Sprintf("%.0f ms", rec[len(rec)-1])
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", v, n, paused, clean, med, hi)
	}
	tw.Flush()
}
