//go:build lab

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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/record"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/suite"
	"gopkg.in/yaml.v3"
)

// rankVariants are bench rank's variants: the flags each adds to rank.
var rankVariants = map[string][]string{
	"census":        nil,
	"no-census":     {"--bound=false"},
	"full":          {"--screen=false"},
	"fresh-confirm": {"--fresh-confirm"},
	"screen-all":    {"--screen-all"},
}

func init() {
	rankResearchFlags = func(fs *flag.FlagSet, c *rankConfig) {
		fs.BoolVar(&c.freshConfirm, "fresh-confirm", c.freshConfirm, "measure each candidate's confirmation from the start, pre-profiling included, instead of continuing its screening (for comparison)")
		fs.BoolVar(&c.screenAll, "screen-all", c.screenAll, "screen every service past its first baseline, also where that baseline found the shared cores saturated with the service mostly idle (for comparison)")
	}
}

// benchRank times slowpoke rank on one application, the variants
// alternating per iteration, each a fresh rank (the application started
// anew), and records every ranking: its time, what each stage took, its
// first place and the services it shows to gain.
func benchRank(args []string) int {
	fs := benchFlags("rank")
	specPath := fs.String("f", "", "application spec (this or --suite)")
	suiteName := fs.String("suite", "", "a configuration of the synthetic suite instead of -f (e.g. tree43), written to the output directory")
	plant := fs.String("plant", "", "with --suite: work_us of services' every endpoint, as service=µs,... (e.g. service20=25000,service9=3000)")
	expect := fs.String("expect", "", "the service the bottleneck is planted in, whose first place the record checks (default: with --plant, the service given the most work)")
	variants := fs.String("variants", "census,no-census", "variants, alternating per iteration: census (rank's default), no-census (--bound=false), full (--screen=false), fresh-confirm (--fresh-confirm: confirmations from the start), screen-all (--screen-all: no screening ends at its first baseline)")
	iterations := fs.Int("iterations", 1, "iterations, each every variant once")
	rankArgs := fs.String("rank-args", "", "more flags for every rank, space-separated (e.g. \"--connections 8 --seed 1\")")
	validateN := fs.Int("validate", 0, "after the rankings, check the first ranking's first N services and the planted one, each by its own validate at the ranking's largest reduction (0: none)")
	validateArgs := fs.String("validate-args", "", "more flags for every validate, space-separated (e.g. \"--connections 8 --reps 2\")")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-rank-<time>)")
	rec := recordFlags(fs)
	if code, ok := parseArgs("slowpoke-lab bench rank", fs, args); !ok {
		return code
	}
	fail := func(code int, a ...any) int {
		fmt.Fprintln(os.Stderr, append([]any{"slowpoke-lab bench rank:"}, a...)...)
		return code
	}
	if (*specPath == "") == (*suiteName == "") {
		return fail(2, "give one of -f and --suite")
	}
	if *plant != "" && *suiteName == "" {
		return fail(2, "--plant needs --suite")
	}
	if *iterations < 1 {
		return fail(2, "--iterations must be at least 1")
	}
	if *validateN < 0 {
		return fail(2, "--validate must be at least 0")
	}
	var names []string
	for _, v := range strings.Split(*variants, ",") {
		v = strings.TrimSpace(v)
		if _, ok := rankVariants[v]; !ok {
			return fail(2, fmt.Sprintf("--variants: unknown variant %q (census, no-census, full, fresh-confirm, screen-all)", v))
		}
		names = append(names, v)
	}
	planted, err := parsePlant(*plant)
	if err != nil {
		return fail(2, "--plant:", err)
	}
	if *expect == "" {
		*expect = mostPlanted(planted)
	}
	if *out == "" {
		*out = filepath.Join("slowpoke-out", "bench-rank-"+time.Now().Format("20060102-150405"))
	}
	if *suiteName != "" {
		if *specPath, err = writePlanted(filepath.Join(*out, "configs"), *suiteName, planted); err != nil {
			return fail(1, err)
		}
	}
	s, err := spec.Load(*specPath)
	if err != nil {
		return fail(1, errText(err))
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(1, errText(err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &record.Record{Benchmark: "rank", Placement: "rank's own (the target of the moment on a core of its own)"}
	failed := false
	// The first ranking that ran, for --validate.
	var first *report.Rank
	var firstG record.Ranking
	for i := 1; i <= *iterations && ctx.Err() == nil; i++ {
		for _, v := range names {
			if ctx.Err() != nil {
				break
			}
			dir := filepath.Join(*out, fmt.Sprintf("%s-%d", v, i))
			cmd := append([]string{"rank", "-f", *specPath}, rankVariants[v]...)
			cmd = append(cmd, strings.Fields(*rankArgs)...)
			rk, err := rankInto(ctx, exe, dir, cmd)
			if err != nil {
				failed = true
				fmt.Fprintf(os.Stderr, "[%d/%d] %s: %v\n", i, *iterations, v, err)
				r.Rankings = append(r.Rankings, record.Ranking{Config: s.Name, Variant: v, Iteration: i, Expected: *expect, Error: err.Error()})
				continue
			}
			g := record.RankingOf(s.Name, v, i, *expect, rk)
			r.Rankings = append(r.Rankings, g)
			if first == nil {
				first, firstG = rk, g
			}
			fmt.Fprintf(os.Stderr, "[%d/%d] %s: %s, first %s, gains: %s\n", i, *iterations, v,
				time.Duration(g.ElapsedS*float64(time.Second)).Round(time.Second), firstOf(g), orNoneList(g.Gainers()))
		}
	}
	if *validateN > 0 && first != nil && ctx.Err() == nil {
		var ok bool
		r.Checks, ok = checkRanking(ctx, exe, filepath.Join(*out, "validate"), *specPath, first, firstG, *validateN, *expect, strings.Fields(*validateArgs))
		failed = failed || !ok
	}
	// Interrupted (Ctrl-C, SIGTERM), the rankings finished so far are
	// still written, and the record says it was cut short.
	interrupted := ctx.Err() != nil
	if interrupted {
		fmt.Fprintf(os.Stderr, "slowpoke-lab bench rank: interrupted; writing the %d rankings so far\n", len(r.Rankings))
		rec.note = strings.TrimSpace(rec.note + fmt.Sprintf(" Interrupted after %d rankings.", len(r.Rankings)))
	}
	writeRankBenchTable(os.Stdout, r.Rankings)
	writeRankChecks(os.Stdout, r.Checks)
	path := filepath.Join(*out, "rank.json")
	if err := writeJSONFile(path, r.Rankings); err != nil {
		return fail(1, err)
	}
	fmt.Printf("\nwrote %s\n", path)
	if len(r.Rankings) > 0 {
		rec.write(r)
	}
	switch {
	case interrupted:
		return 130
	case failed:
		return 1
	}
	return 0
}

// checkRanking validates the first n services of the ranking rk (g as
// recorded) and expect (the planted one, where not among them), each by
// its own slowpoke validate at the ranking's largest reduction, into
// dir/<service>; ok is false where a validate failed.
func checkRanking(ctx context.Context, exe, dir, specPath string, rk *report.Rank, g record.Ranking, n int, expect string, args []string) (checks []record.RankCheck, ok bool) {
	red := rk.Reductions[len(rk.Reductions)-1]
	if rk.Screening != nil && rk.Screening.Reduction != "" {
		red = rk.Screening.Reduction
	}
	var names []string
	for _, e := range g.Entries[:min(n, len(g.Entries))] {
		names = append(names, e.Service)
	}
	if expect != "" && !slices.Contains(names, expect) {
		names = append(names, expect)
	}
	ok = true
	for i, name := range names {
		if ctx.Err() != nil {
			break
		}
		c := record.CheckOf(g, name, red)
		sub := filepath.Join(dir, name)
		cmd := append([]string{"validate", "-f", specPath, "--target", name, "--reduce", red}, args...)
		err := runInto(ctx, exe, sub, cmd)
		var res *report.Results
		if err == nil {
			res, err = report.ReadJSON(filepath.Join(sub, "out", "results.json"))
		}
		if err != nil {
			c.Error, ok = err.Error(), false
		}
		c.SetTruth(res)
		checks = append(checks, c)
		fmt.Fprintf(os.Stderr, "[validate %d/%d] %s: ranking %s, true %s\n", i+1, len(names), name, pctOrNA(c.GainPct), pctOrNA(c.TrueGainPct))
	}
	return checks, ok
}

// writeRankChecks prints bench rank's checks against validate.
func writeRankChecks(w io.Writer, checks []record.RankCheck) {
	if len(checks) == 0 {
		return
	}
	fmt.Fprintf(w, "\nchecked against validate at %s (%s, iteration %d):\n", checks[0].Reduction, checks[0].Variant, checks[0].Iteration)
	for _, c := range checks {
		place := "not measured"
		if c.Place > 0 {
			place = fmt.Sprintf("place %d", c.Place)
		}
		in := ""
		if c.TrueGainPct != nil && c.GainLowPct != nil {
			in = ", outside its interval"
			if c.Covered() {
				in = ", within its interval"
			}
		}
		truth := pctOrNA(c.TrueGainPct)
		if c.Error != "" {
			truth = "failed: " + c.Error
		}
		fmt.Fprintf(w, "  %s (%s): ranking %s, true %s%s\n", c.Service, place, pctOrNA(c.GainPct), truth, in)
	}
}

// rankInto runs one slowpoke rank into dir and reads its ranking.
func rankInto(ctx context.Context, exe, dir string, args []string) (*report.Rank, error) {
	if err := runInto(ctx, exe, dir, args); err != nil {
		return nil, err
	}
	return report.ReadRankJSON(filepath.Join(dir, "out", "results.json"))
}

// parsePlant reads --plant: service=µs,...
func parsePlant(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, us, ok := strings.Cut(part, "=")
		v, err := strconv.ParseFloat(strings.TrimSuffix(us, "us"), 64)
		if !ok || name == "" || err != nil || !(v >= 0) {
			return nil, fmt.Errorf("%q: want service=µs", part)
		}
		out[name] = v
	}
	return out, nil
}

// mostPlanted is the service given the most work, "" for none.
func mostPlanted(planted map[string]float64) string {
	best := ""
	for name, us := range planted {
		if best == "" || us > planted[best] || us == planted[best] && name < best {
			best = name
		}
	}
	return best
}

// writePlanted writes the suite's configuration name (seed 1) into dir
// with planted work, and returns its spec's path.
func writePlanted(dir, name string, planted map[string]float64) (string, error) {
	configs, err := suite.Extras(1)
	if err != nil {
		return "", err
	}
	main, err := suite.Suite(1)
	if err != nil {
		return "", err
	}
	all := append(configs, main...)
	i := slices.IndexFunc(all, func(c suite.Config) bool { return c.Name == name })
	if i < 0 {
		return "", fmt.Errorf("--suite: no configuration %q", name)
	}
	c := all[i]
	for svc, us := range planted {
		sv, ok := c.Topo.Services[svc]
		if !ok {
			return "", fmt.Errorf("--plant: %s has no service %q", name, svc)
		}
		for path, ep := range sv.Endpoints {
			ep.WorkUS = us
			sv.Endpoints[path] = ep
		}
	}
	spec, err := truthForAll(c.Spec)
	if err != nil {
		return "", err
	}
	c.Spec = spec
	return suite.Write(dir, c)
}

// truthForAll gives every service of a suite spec that has none the
// emulator's ground-truth knob (suite.GroundTruthEnv), so that --validate
// can check any service of the ranking, not only the configuration's
// target.
func truthForAll(spec []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("suite spec: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("suite spec: not a mapping")
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "services" || root.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for _, svc := range root.Content[i+1].Content {
			if svc.Kind != yaml.MappingNode || hasKey(svc, "ground_truth") {
				continue
			}
			truth := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Value: "env"}, {Kind: yaml.ScalarNode, Value: suite.GroundTruthEnv},
				{Kind: yaml.ScalarNode, Value: "base_us"}, {Kind: yaml.ScalarNode, Tag: "!!int", Value: "0"},
			}}
			svc.Content = append(svc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "ground_truth"}, truth)
		}
	}
	return yaml.Marshal(&doc)
}

// hasKey says whether the mapping m has the key k.
func hasKey(m *yaml.Node, k string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			return true
		}
	}
	return false
}

// firstOf is g's first place in words.
func firstOf(g record.Ranking) string {
	if len(g.Entries) == 0 {
		return "none"
	}
	return fmt.Sprintf("%s %+.1f%%", g.Entries[0].Service, g.Entries[0].GainPct)
}

// writeRankBenchTable prints the rankings, a line each.
func writeRankBenchTable(w io.Writer, runs []record.Ranking) {
	for _, g := range runs {
		if g.Error != "" {
			fmt.Fprintf(w, "%s #%d %s: failed: %s\n", g.Config, g.Iteration, g.Variant, g.Error)
			continue
		}
		screened := strconv.Itoa(g.Screened)
		if g.AtBaseline > 0 {
			screened += fmt.Sprintf(" (%d no further than a baseline)", g.AtBaseline)
		}
		fmt.Fprintf(w, "%s #%d %s: %s; %d services, %d ruled out by the census, %s screened, confirmed %s; first %s; gains: %s\n",
			g.Config, g.Iteration, g.Variant, time.Duration(g.ElapsedS*float64(time.Second)).Round(time.Second),
			g.Services, g.Bounded, screened, orNoneList(g.Confirmed), firstOf(g), orNoneList(g.Gainers()))
	}
}
