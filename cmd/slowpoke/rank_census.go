package main

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/model"
)

// censusHeadroom is how far the census bound lets the application's CPU
// per request fall at a throughput higher than the census measured: the
// bound takes the services' CPU per request as fixed, and on Online
// Boutique, run natively, it fell by 37% from 131 to 243 req/s
// (docs/notes/trust.md); a factor of 2 allows it to halve.
const censusHeadroom = 2

// censusBound is one service's bound from the census.
type censusBound struct {
	sharePct float64
	gainPct  float64 // +Inf where nothing caps it
}

// census is rank's first run before the screening (docs/method.md,
// "Screening, then confirmation"): one baseline of the application as it
// runs, reading every service's CPU time, so that each target's share of
// the application's CPU per request bounds the gain that cutting it by
// red can give. It returns the census (nil, with a progress line saying
// why, where no bound can be made: a reduction given as a time, whose
// size in calls the census does not count, or an application on a
// cluster, whose cores it does not know) and each target's bound (none
// where its window, lengthened up to longest, still held too few request
// cycles to be steady).
func census(app *session, c rankConfig, targets []string, red model.Reduction, warmup, duration, longest time.Duration) (*report.RankCensus, map[string]censusBound, error) {
	s := app.d.Spec()
	if red.Kind == model.Absolute {
		app.logf("no census before the screening: the reduction %s is a time per call, and the census counts no calls", red.Text)
		return nil, nil, nil
	}
	if s.Kubernetes != nil {
		app.logf("no census before the screening: on a cluster the cores the services may use are not known here")
		return nil, nil, nil
	}
	p, err := red.Resolve(1)
	if err != nil || !(p > 0) {
		return nil, nil, nil
	}
	cores := placementCores(app.d.Placement().TargetCPUs, app.d.Placement().OtherCPUs, app.d.Placement().Services)
	if cores == 0 {
		return nil, nil, nil
	}
	start := time.Now()
	app.logf("census: one run after %v warm-up, of %v or the ten request cycles the warm-up's throughput gives (up to %v), reading every service's CPU time, to bound each service's gain by its share of the application's CPU", warmup, duration, longest)
	cpu := servicesCPU(s, func(svc spec.Service) (time.Duration, error) { return app.d.CPUTime(svc.Name) })
	b, window, cycles, err := experiment.Census(app.ctx, s, cpu, c.conns, warmup, duration, longest, app.logf)
	if err != nil {
		return nil, nil, fmt.Errorf("census: %w", err)
	}
	if app.d.Placement().Keep && b.CPU != nil {
		// Nothing is pinned under keep: attached services may run on
		// cores this process may not use.
		cores = max(cores, b.CPU.Cores)
	}
	cen := &report.RankCensus{RPS: b.RPS, WarmupS: warmup.Seconds(), DurationS: window.Seconds(), Cycles: cycles, Cores: cores,
		Headroom: censusHeadroom, Reduction: red.Text, ElapsedS: time.Since(start).Seconds()}
	switch {
	case b.CPU == nil:
		app.logf("census: no service's CPU time could be read; every service is screened")
		return cen, nil, nil
	case !experiment.CensusSteady(cycles):
		cen.ServicesUS = b.CPU.ServicesUS
		app.logf("census: its %v window held %.1f request cycles at %.0f req/s, too few to read how the services share the CPU; every service is screened (fewer --connections shorten the cycle)", window, cycles, b.RPS)
		return cen, nil, nil
	}
	cen.ServicesUS = b.CPU.ServicesUS
	return cen, censusBounds(cen.ServicesUS, targets, p, cores), nil
}

// censusBounds bounds each target's gain at a cut of a share p of its CPU
// by its share of all the services' CPU per request (servicesUS), on
// cores cores, with censusHeadroom: model.BusyBound, then model.GainBound.
// A target whose CPU was not read has no bound.
func censusBounds(servicesUS map[string]float64, targets []string, p float64, cores int) map[string]censusBound {
	var total float64
	for _, us := range servicesUS {
		total += max(0, us)
	}
	if !(total > 0) {
		return nil
	}
	out := map[string]censusBound{}
	for _, name := range targets {
		us, ok := servicesUS[name]
		if !ok {
			continue
		}
		share := max(0, us) / total
		busy := min(1, censusHeadroom*model.BusyBound(share, cores))
		out[name] = censusBound{sharePct: 100 * share, gainPct: 100 * model.GainBound(p, busy)}
	}
	return out
}

// placementCores counts the distinct cores of a placement's target, its
// shared cores and its services' own.
func placementCores(target, other []int, services map[string][]int) int {
	all := slices.Concat(target, other)
	for _, cpus := range services {
		all = append(all, cpus...)
	}
	slices.Sort(all)
	return len(slices.Compact(all))
}

// setBound records b on e.
func setBound(e *report.RankEntry, b censusBound) {
	share := b.sharePct
	e.CPUSharePct = &share
	if !math.IsInf(b.gainPct, 1) {
		g := b.gainPct
		e.GainBoundPct = &g
	}
}

// boundedEntry is the entry of a service that the census rules out.
func boundedEntry(name string, b censusBound, reduction string, minGain float64) report.RankEntry {
	e := report.RankEntry{Service: name, Stage: report.StageBounded, Verdict: report.VerdictSkipped}
	setBound(&e, b)
	e.Reason = fmt.Sprintf("not screened: %s, not above the minimum gain of %s%%", e.BoundText(reduction), trimNum(minGain))
	return e
}
