//go:build lab

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/lab"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/model"
)

// labBenches are the research benchmarks, which only the lab's build
// (lab.go) and this package's tests run.
func labBenches() []benchmark {
	return []benchmark{
		{"accuracy", "slowpoke validate on synthetic configurations (docs/suite.md):\nprediction error against ground truth, per point and overall", benchAccuracy},
		{"pausecost", "what one round of pauses costs the paused services' cores, per pause\nmethod, as the number of services sharing them grows", benchPauseCost},
		{"methods", "validate an application with several pause methods against one ground\ntruth, interleaved: every method's error per point, paired", benchMethods},
		{"pools", "slowpoke pools --validate on applications with a best pool size: the\nrecommended size's goodput against half, double and unlimited", benchPools},
		{"placement", "keep (nothing pinned) against slowpoke's own placement, on the truth\nof the unpinned placement: validate --placement keep per pause method,\nthen predict --placement shared and its bound, per iteration", benchPlacement},
		{"attach", "the demo started by a plain shell script and predicted attached, against\nthe demo started by slowpoke, alternating: both predictions per point, paired", benchAttach},
		{"faults", "predict attached to the demo started by a shell script, with the\norchestrator, a controller or the guard SIGKILLed mid-pause: what was\nleft stopped, frozen, pinned or reniced, and the time to recovery", benchFaults},
		{"rank", "slowpoke rank on one application, with and without the census (or in\nfull), alternating: each ranking's time, stages, first place and gains", benchRank},
		{"latency", "slowpoke latency --validate on the latency suite and the applications:\npredicted against true p50 and p99 per request type; --overhead: the\nmetadata's cost at delay 0", benchLatency},
	}
}

func benchAccuracy(args []string) int {
	fs := benchFlags("accuracy")
	o := lab.AccuracyOptions{}
	fs.Int64Var(&o.Seed, "seed", 1, "seed of the synthetic suite")
	fs.BoolVar(&o.Full, "full", false, "all 108 configurations instead of the representative subset")
	only := fs.String("only", "", "comma-separated configuration names or tags (e.g. mutex,coordination,tree43)")
	fs.StringVar(&o.Reduce, "reduce", "20,40,...,80%", "reductions per configuration")
	fs.IntVar(&o.Reps, "reps", 2, "repetitions per point")
	fs.IntVar(&o.MaxReps, "max-reps", 4, "repeat points whose error estimate is still noisy up to this many runs")
	fs.IntVar(&o.Batch, "batch", 0, "batch size (0: automatic)")
	fs.DurationVar(&o.Duration, "duration", 0, "measurement window (default: the configs' 3s)")
	fs.DurationVar(&o.Warmup, "warmup", 0, "warm-up (default: the configs' 1s)")
	fs.BoolVar(&o.FixedConnections, "fixed-connections", false, "use each config's connections instead of choosing the smallest that saturates")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-accuracy-<time>)")
	variants := fs.String("methods", "", "compare these variants, paired against one ground truth per point, as bench methods' --methods does (e.g. cores,cores/cpu); empty: one validate per configuration")
	rec := recordFlags(fs)
	m := defaultMethod()
	methodFlags(fs, &m)
	researchFlags(fs, &m)
	if code, ok := parseArgs("slowpoke-lab bench accuracy", fs, args); !ok {
		return code
	}
	if err := m.check(); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench accuracy:", err)
		return 2
	}
	o.PrecisionPct, o.Tuning = m.precision, m.tuning()
	o.Placement = m.mode()
	o.PauseMethod = m.pauseMethod()
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	var err error
	if *variants != "" {
		if o.Variants, err = parseVariants(*variants, o.Tuning); err != nil {
			fmt.Fprintln(os.Stderr, "slowpoke-lab bench accuracy: --methods:", err)
			return 2
		}
	}
	if o.ExtraPath, err = benchSetup(out, "accuracy"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o.Dir = *out
	o.Progress = os.Stderr
	// The table is written only for a run that finished: the record
	// follows it.
	return finishBench("accuracy", o.Dir, lab.Accuracy, o, func(w io.Writer, res *lab.AccuracyResult) {
		lab.WriteAccuracyTable(w, res)
		rec.write(accuracyRecord(res, string(o.Placement)))
	})
}

func benchPauseCost(args []string) int {
	fs := benchFlags("pausecost")
	o := lab.PauseCostOptions{}
	services := fs.String("services", "2,5,10,20", "numbers of services on the paused cores")
	methods := fs.String("methods", "signal,cgroup,cores", "pause methods to measure")
	fs.IntVar(&o.Reps, "reps", 3, "repetitions (methods interleaved)")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "warm-up per run")
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "measurement window per run")
	fs.Float64Var(&o.Load, "load", 0.5, "share of the paused cores the load keeps busy without pauses")
	fs.Float64Var(&o.RoundsPerS, "rounds", 100, "rounds a second")
	fs.DurationVar(&o.Pause, "pause", time.Millisecond, "pause per round")
	fs.Float64Var(&o.WorkUS, "work-us", 20, "CPU work per call of each paused service, µs")
	placement := fs.String("placement", "shared", "auto, shared or dedicated")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-pausecost-<time>)")
	if code, ok := parseArgs("slowpoke-lab bench pausecost", fs, args); !ok {
		return code
	}
	for _, f := range strings.Split(*services, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 60 {
			fmt.Fprintf(os.Stderr, "slowpoke-lab bench pausecost: --services: bad number %q (1 to 60)\n", f)
			return 2
		}
		o.Services = append(o.Services, n)
	}
	var err error
	if o.Methods, err = parseMethods(*methods); err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench pausecost: --methods:", err)
		return 2
	}
	mode, err := local.ParseMode(*placement)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench pausecost:", err)
		return 2
	}
	o.Placement = mode
	if o.ExtraPath, err = benchSetup(out, "pausecost"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o.Dir = *out
	o.Progress = os.Stderr
	return finishBench("pausecost", o.Dir, lab.PauseCost, o, lab.WritePauseCostTable)
}

// parseVariants reads bench methods' --methods: comma-separated
// method[/batch|/pause-cap][/nogrowth][/noidle][/nominal][/nostarve][/nocap][/short|/long=cap][/cpu]; each
// variant's tuning starts from base, the run's.
func parseVariants(list string, base experiment.Tuning) ([]experiment.Variant, error) {
	const form = "method[/batch|/pause-cap][/nogrowth][/noidle][/nominal][/nostarve][/nocap][/short|/long=cap][/cpu]"
	var variants []experiment.Variant
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		parts := strings.Split(f, "/")
		ms, err := parseMethods(parts[0])
		if err != nil {
			return nil, err
		}
		v := experiment.Variant{Name: f, Method: ms[0], Tuning: base}
		for _, p := range parts[1:] {
			if p == "nogrowth" {
				v.Tuning.NoGrowthCorrection = true
			} else if p == "noidle" {
				v.Tuning.NoIdleCorrection = true
			} else if p == "nominal" {
				v.Tuning.NominalDelay = true
			} else if p == "nostarve" {
				v.Tuning.NoStarvedRepair = true
			} else if p == "nocap" {
				v.Tuning.NoCapacityRun = true
			} else if p == "cpu" {
				v.Trigger = experiment.TriggerCPU
			} else if p == "short" {
				v.Tuning.ShortPausesOnly = true
			} else if l, ok := strings.CutPrefix(p, "long="); ok {
				if d, err := time.ParseDuration(l); err == nil && d > 0 {
					v.Tuning.LongPauseCap = d
				} else {
					return nil, fmt.Errorf("%q: long= wants a positive duration, e.g. long=128ms", f)
				}
			} else if b, err := strconv.Atoi(p); err == nil && b > 0 {
				v.Batch = b
			} else if d, err := time.ParseDuration(p); err == nil && d > 0 {
				v.PauseCap = d
			} else {
				return nil, fmt.Errorf("%q: want %s", f, form)
			}
		}
		if v.Tuning.ShortPausesOnly && v.Tuning.LongPauseCap > 0 {
			return nil, fmt.Errorf("%q: short and long= contradict each other", f)
		}
		variants = append(variants, v)
	}
	return variants, nil
}

func benchMethods(args []string) int {
	fs := benchFlags("methods")
	c := predictConfig{validate: true, method: defaultMethod()}
	fs.StringVar(&c.specPath, "f", "", "application spec (required)")
	fs.StringVar(&c.target, "target", "", "service to virtually speed up (required)")
	fs.StringVar(&c.reduce, "reduce", "100,200,...,1000us", "reductions")
	fs.IntVar(&c.reps, "reps", 3, "repetitions")
	fs.DurationVar(&c.duration, "duration", 0, "measurement window (default: the spec's)")
	fs.IntVar(&c.conns, "connections", 0, "closed-loop connections (default: the spec's)")
	methods := fs.String("methods", "cores,signal,cgroup", "variants to compare: pause methods, each optionally with a batch size or a cap on the chosen pauses, and no growth correction, as method[/batch|/pause-cap][/nogrowth][/noidle][/nominal][/nostarve][/nocap][/short|/long=cap][/cpu] (noidle: leave the shared cores' idle time outside the holds in a run they bound; nominal: take the model's d·c1/q1 off every run instead of the delay the pauses really inserted; every variant's table shows both anyway; nostarve: keep a first run that starved the target instead of measuring it again with shorter pauses; nocap: no capacity run for points whose slowdown runs saturated the shared cores; cpu: the target's rounds follow its CPU time instead of its counted calls; short: never lengthen a shared-bound point's pauses; long=cap: lengthen them up to cap rather than 64 ms; e.g. cores,cores/short,cores/long=128ms,cores/16,cores/16ms,signal)")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-methods-<time>)")
	rec := recordFlags(fs)
	if code, ok := parseArgs("slowpoke-lab bench methods", fs, args); !ok {
		return code
	}
	if c.specPath == "" || c.target == "" {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench methods: -f and --target are required")
		return 2
	}
	variants, err := parseVariants(*methods, experiment.Tuning{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench methods: --methods:", err)
		return 2
	}
	reds, err := model.ParseReductions(c.reduce)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench methods: --reduce:", err)
		return 2
	}
	if *out == "" {
		*out = filepath.Join("slowpoke-out", "bench-methods-"+time.Now().Format("20060102-150405"))
	}
	s, err := spec.Load(c.specPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench methods:", errText(err))
		return 1
	}
	interrupted, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	d, err := local.Start(interrupted, s, local.Options{Options: backend.Options{Target: c.target, Logf: logf}, LogDir: filepath.Join(*out, "logs")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench methods:", errText(err))
		if interrupted.Err() != nil {
			return 130
		}
		return 1
	}
	defer d.Stop()
	ctx, cancel := d.Watch(interrupted)
	defer cancel()
	var texts []string
	for _, r := range reds {
		texts = append(texts, r.Text)
	}
	res, err := experiment.Compare(ctx, d, experiment.Options{
		Target: c.target, Reductions: reds, ReductionsText: texts, Connections: c.conns, Duration: c.duration,
		Repetitions: c.reps, SpecPath: c.specPath, Progress: os.Stderr,
	}, variants)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowpoke-lab bench methods:", d.Explain(err))
		if interrupted.Err() != nil {
			return 130
		}
		return 1
	}
	writeMethodsTable(os.Stdout, res)
	path := filepath.Join(*out, "methods.json")
	if err := writeJSONFile(path, res); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("\nwrote %s\n", path)
	rec.write(comparisonRecord(res))
	return 0
}

// writeMethodsTable prints every point's truth and every method's error,
// with the delay its predictions took off (measured or nominal), the
// error with the nominal delay from the same runs, and whether the
// point's 90% interval held the truth.
func writeMethodsTable(w io.Writer, c *experiment.Comparison) {
	fmt.Fprintf(w, "\n%s, target %s: baseline %.0f req/s, c1 %.3f, u1 %.0f µs\n\n", c.App, c.Target, c.Baseline.RPS, c.C1, c.U1US)
	fmt.Fprintf(w, "%10s %10s", "d (µs)", "true req/s")
	for _, m := range c.Methods {
		fmt.Fprintf(w, " %46s", m.Method+": pred (error) delay, nominal error, in 90%")
	}
	fmt.Fprintln(w)
	for i, p := range c.Methods[0].Points {
		truth := 0.0
		if p.TrueRPS != nil {
			truth = *p.TrueRPS
		}
		fmt.Fprintf(w, "%10.0f %10.0f", p.ReductionUS, truth)
		for _, m := range c.Methods {
			fmt.Fprintf(w, " %46s", methodCell(m.Points[i]))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for _, m := range c.Methods {
		fmt.Fprintf(w, "%-16s RMSE %5.2f%% (nominal delay %s), mean %+6.2f%%, max |error| %5.2f%%, interval coverage %s\n",
			m.Method, m.RMSEPct, rmseOrNA(m.NominalRMSEPct), m.MeanPct, m.MaxPct, coverageText(m.Coverage))
	}
}

// methodCell is one point of one method in writeMethodsTable.
func methodCell(q report.Point) string {
	delay := "-"
	switch q.DelayUsed {
	case report.DelayMeasured:
		delay = "meas"
	case report.DelayNominal:
		delay = "nom"
	case report.DelayMixed:
		delay = "mix"
	}
	in := "-"
	if covered, ok := q.CoversTruth(); ok && covered {
		in = "yes"
	} else if ok {
		in = "no"
	}
	var nominal *float64
	if q.Diagnostics != nil {
		nominal = q.Diagnostics.ErrorNominalPct
	}
	return fmt.Sprintf("%.0f (%s) %s, %s, %s", q.PredictedRPS, pctOrNA(q.ErrorPct), delay, pctOrNA(nominal), in)
}

func pctOrNA(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", *p)
}

func coverageText(c *report.Coverage) string {
	if c == nil {
		return "n/a"
	}
	return fmt.Sprintf("%d/%d (%.0f%%)", c.Covered, c.Points, c.Pct())
}

// researchFlags switch parts of the method off or on, to measure what
// they buy (docs/notes/); only the benchmarks offer them.
func researchFlags(fs *flag.FlagSet, m *methodConfig) {
	fs.DurationVar(&m.lead, "pause-lead", m.lead, "start every stop this long after the target triggered the round, so that services sharing cores stop together (0: on arrival)")
	fs.BoolVar(&m.graph, "graph-rounds", m.graph, "forward rounds along the call graph, as the paper does, instead of sending them from the target to every service directly (for comparison)")
	fs.BoolVar(&m.uncoord, "uncoordinated", m.uncoord, "pause every service locally instead of in coordinated rounds (to measure what coordination buys; less accurate)")
	fs.BoolVar(&m.noExtend, "no-colocated-extension", m.noExtend, "do not extend pauses by the CPU the load generator uses on the paused services' cores (for comparison)")
	fs.BoolVar(&m.noPeers, "no-peer-extension", m.noPeers, "do not extend stops by the CPU the other paused services on the same cores used during them (for comparison; without the extension, stops that start out of step lend the shared cores capacity)")
	fs.BoolVar(&m.overhead, "overhead-correction", m.overhead, "experimental: take the controllers' CPU per request outside stops, above the baseline's, off every slowdown run before predicting (over-corrects on most configurations measured; docs/method.md)")
	fs.BoolVar(&m.noIdle, "no-idle-correction", m.noIdle, "leave the shared cores' idle time outside the holds in the prediction of a run they bound instead of taking it off (for comparison)")
	fs.BoolVar(&m.noGrowth, "no-growth-correction", m.noGrowth, "leave the paused services' extra CPU per request (above the baseline's) in the slowdown runs instead of taking it off before predicting (for comparison)")
	fs.BoolVar(&m.noStarve, "no-starved-repair", m.noStarve, "keep a point's first run where the target starved during the pauses instead of measuring it again with shorter pauses (for comparison)")
	fs.BoolVar(&m.nominal, "nominal-delay", m.nominal, "take the model's d·c1/q1 off every slowdown run instead of the delay the pauses really inserted where the paused services bound it (for comparison)")
}

func rmseOrNA(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f%%", *p)
}
