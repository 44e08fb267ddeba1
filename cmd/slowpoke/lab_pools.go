//go:build lab

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// benchPools runs the pool-size advisor with validation on each case, runs
// times, and prints the figures the advisor's targets are about: the
// recommended size's goodput as a share of the best of recommended, half
// and double; its SLA attainment against unlimited; the time taken.
func benchPools(args []string) int {
	fs := benchFlags("pools")
	cases := fs.String("cases", "examples/pools/app.yaml=150ms,apps/hotel/pools.yaml=150ms", "comma-separated spec=SLA pairs")
	runs := fs.Int("runs", 2, "runs of the advisor per case")
	reps := fs.Int("reps", 3, "validation runs of each size")
	out := fs.String("out", "", "output directory (default: slowpoke-out/bench-pools-<time>)")
	if code, ok := parseArgs("slowpoke-lab bench pools", fs, args); !ok {
		return code
	}
	extra, err := benchSetup(out, "pools")
	if err != nil {
		fmt.Fprintf(os.Stderr, "slowpoke-lab bench pools: %v\n", errText(err))
		return 1
	}
	type row struct {
		spec    string
		run     int
		res     *report.Pools
		elapsed time.Duration
		err     error
	}
	var rows []row
cases:
	for _, cs := range strings.Split(*cases, ",") {
		specPath, slaText, ok := strings.Cut(strings.TrimSpace(cs), "=")
		sla, perr := time.ParseDuration(slaText)
		if !ok || perr != nil || sla <= 0 {
			fmt.Fprintf(os.Stderr, "slowpoke-lab bench pools: --cases: %q is not spec=SLA (e.g. app.yaml=150ms)\n", cs)
			return 2
		}
		for i := 1; i <= *runs; i++ {
			r := row{spec: specPath, run: i}
			start := time.Now()
			dir := filepath.Join(*out, fmt.Sprintf("%s-%d", strings.TrimSuffix(filepath.Base(filepath.Dir(specPath))+"-"+filepath.Base(specPath), ".yaml"), i))
			r.err = poolsMain(poolsConfig{specPath: specPath, sla: sla, validate: true, reps: *reps, step: 2 * time.Second,
				outDir: dir, extraPath: extra, onResult: func(p *report.Pools) { r.res = p }})
			r.elapsed = time.Since(start)
			rows = append(rows, r)
			if errors.Is(r.err, context.Canceled) {
				break cases // Ctrl-C
			}
		}
	}
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\trun\tservice\trecommended\tgoodput rec/half/double/unlimited (req/s)\trec share of best\tattainment rec/unlimited\tadvice time\ttargets")
	failed := false
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(tw, "%s\t%d\t\t\t\t\t\t%s\terror: %v\n", r.spec, r.run, r.elapsed.Round(time.Second), r.err)
			failed = true
			continue
		}
		for _, s := range r.res.Services {
			v := s.Validation
			if v == nil {
				continue
			}
			unl := v.Sizes[3].Mean
			rec := v.Sizes[0].Mean
			advice := time.Duration(r.res.AdviceS * float64(time.Second))
			met := v.RecommendedShareOfBestPct >= 97 && rec.AttainmentPct > unl.AttainmentPct && advice <= 5*time.Minute
			verdict := "met"
			if !met {
				verdict = "MISSED"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.0f / %.0f / %.0f / %.0f\t%.1f%%\t%.1f%% / %.1f%%\t%s\t%s\n", r.spec, r.run, s.Service, s.Recommended,
				v.RecommendedGoodput, v.HalfGoodput, v.DoubleGoodput, v.UnlimitedGoodput, v.RecommendedShareOfBestPct,
				rec.AttainmentPct, unl.AttainmentPct, advice.Round(time.Second).String()+" (+"+(r.elapsed-advice).Round(time.Second).String()+" start-up, validation)", verdict)
		}
	}
	tw.Flush()
	fmt.Println("\ntargets: recommended goodput >= 97% of the best of recommended, half and double; better SLA attainment than unlimited; advisor done in 5 minutes")
	if n := len(rows); n > 0 && errors.Is(rows[n-1].err, context.Canceled) {
		return 130
	}
	if failed {
		return 1
	}
	return 0
}
