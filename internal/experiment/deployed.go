package experiment

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/load"
)

// MeasureAsDeployed measures the application of s as it runs, before
// slowpoke starts, attaches to or re-places anything: runs closed-loop
// runs of the spec's workload against its entry (connections, warmup and
// duration at zero take the spec's). It is the throughput of the user's
// own placement, which a run's baseline, measured under slowpoke's
// placement, is compared with.
func MeasureAsDeployed(ctx context.Context, s *spec.Spec, connections int, warmup, duration time.Duration, runs int) (*report.Baseline, error) {
	workloadDefaults(s, &connections, &warmup, &duration)
	mix, err := mixOf(s)
	if err != nil {
		return nil, err
	}
	var b report.Baseline
	var p50, p99 []float64
	for range max(1, runs) {
		res, err := load.RunClosed(ctx, mix, load.WithConnections(connections), load.WithWarmup(warmup), load.WithDuration(duration))
		if err != nil {
			return nil, fmt.Errorf("measure %q as it runs: %w", s.Name, err)
		}
		if res.Completed == 0 {
			return nil, fmt.Errorf("measure %q as it runs: no request completed (%d errors, %d non-2xx): is it running at %s?", s.Name, res.Errors, res.Non2xx, s.Entry)
		}
		b.Runs = append(b.Runs, res.Throughput)
		b.Errors += res.Errors
		b.Non2xx += res.Non2xx
		p50 = append(p50, float64(res.Latency.P50)/1e6)
		p99 = append(p99, float64(res.Latency.P99)/1e6)
	}
	b.RPS = report.Median(b.Runs)
	b.SpreadPct = report.SpreadPct(b.Runs)
	b.P50MS, b.P99MS = report.Median(p50), report.Median(p99)
	return &b, nil
}

// placementChanged says, where the application was measured as it runs
// (Options.AsDeployed), whether slowpoke's placement changed its
// throughput beyond the two baselines' noise (and by more than
// placementChangePct), and in words what that means for the answer.
func placementChanged(deployed, base report.Baseline) (string, bool) {
	if deployed.RPS <= 0 || base.RPS <= 0 {
		return "", false
	}
	diff := (base.RPS/deployed.RPS - 1) * 100
	noise := 100 * math.Hypot(relStdErr(deployed.Runs), relStdErr(base.Runs))
	if math.Abs(diff) <= max(placementChangePct, 2*noise) {
		return "", false
	}
	more := "more"
	if diff < 0 {
		more = "less"
	}
	return fmt.Sprintf("the application as it runs, before slowpoke placed anything, measured %.0f req/s; under slowpoke's placement (the target on cores of its own, the others sharing the rest) its baseline is %.0f req/s, %.0f%% %s: "+
		"the predictions are for slowpoke's placement, where a different resource may bind than in yours, so the gain they show may not be the gain in your deployment",
		deployed.RPS, base.RPS, math.Abs(diff), more), true
}

// placementChangePct is the smallest difference (%) between the baseline
// as deployed and under slowpoke's placement that is reported as a change
// of what binds, whatever the noise.
const placementChangePct = 5
