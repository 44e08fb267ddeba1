package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/model"
)

// Screening's windows: half the measurement window and half the warm-up
// (pre-profiling doubles it, so the first baseline after a retarget still
// warms up for a whole --warmup), at least these.
const (
	minScreenDuration = time.Second
	minScreenWarmup   = 250 * time.Millisecond
)

// screenRounds is how many slowdown runs the screening gives a service
// at most: every service gets one, and those still undecided (their
// interval reaches above --min-gain without showing a gain) one more per
// round. One short run between two baselines cannot rule out a 5% gain
// where runs differ by about 5% (a 90% interval about ±8-11% wide on the
// demo); two or three can (docs/method.md).
const screenRounds = 3

// confirmPerScreen estimates a confirmation's time from a screening's
// before any confirmation has been timed: a confirmation continues the
// screening (experiment.Screening.Confirm) without its pre-profile, about
// six runs of the full window (twice the screening's) with a noisy
// point's third, against screening's three or four shorter ones.
const confirmPerScreen = 2

// screenReduction is the one reduction every service is screened at: the
// largest of reds, where they can be compared (all shares of the
// target's cost, or all times per call), otherwise the last given.
func screenReduction(reds []model.Reduction) model.Reduction {
	abs := 0
	for _, r := range reds {
		if r.Kind == model.Absolute {
			abs++
		}
	}
	if abs != 0 && abs != len(reds) {
		return reds[len(reds)-1]
	}
	size := func(r model.Reduction) float64 {
		if r.Kind == model.Absolute {
			return r.Value
		}
		d, err := r.Resolve(1)
		if err != nil {
			return 0
		}
		return d
	}
	return slices.MaxFunc(reds, func(a, b model.Reduction) int { return cmp.Compare(size(a), size(b)) })
}

// fullWindows are a full measurement's warm-up and window: from the
// flags or, where they are not given, the spec's.
func (c rankConfig) fullWindows(s *spec.Spec) (warmup, duration time.Duration) {
	warmup, duration = c.warmup, c.duration
	if warmup <= 0 {
		warmup = s.Workload.Warmup.Duration
	}
	if duration <= 0 {
		duration = s.Workload.Duration.Duration
	}
	return warmup, duration
}

// screenWindows are the screening runs' warm-up and window, from
// fullWindows.
func (c rankConfig) screenWindows(s *spec.Spec) (warmup, duration time.Duration) {
	warmup, duration = c.fullWindows(s)
	duration = max(minScreenDuration, duration/2)
	if c.screenDuration > 0 {
		duration = c.screenDuration
	}
	return max(minScreenWarmup, warmup/2), duration
}

// budget decides whether the next step of a ranking starts: it does
// without a budget, and otherwise where it is expected to end within it
// (elapsed + next); with no estimate yet (next 0), while the budget is not
// spent.
func fitsBudget(elapsed, next, budget time.Duration) bool {
	return budget <= 0 || elapsed+next <= budget
}

// meanOf is the mean of ds, 0 for none.
func meanOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// screenProgress says where a screened ranking is: the pass, the service
// of how many, the time so far and left, and the candidates so far.
type screenProgress struct {
	start      time.Time
	budget     time.Duration
	phase      string // "screen" or "confirm"
	round      int    // screening round, from 1
	i, n       int
	name       string
	begun      time.Time
	screened   []time.Duration
	more       []time.Duration // later screening rounds' services
	confirmed  []time.Duration
	toScreen   int // services of the screening pass
	candidates []string
	screenedN  int // services screened so far, with a verdict
}

func (p *screenProgress) begin(phase string, i, n int, name string) {
	p.phase, p.i, p.n, p.name, p.begun = phase, i, n, name, time.Now()
}

func (p *screenProgress) end() {
	if p.phase == "screen" && p.round > 1 {
		p.more = append(p.more, time.Since(p.begun))
	} else if p.phase == "screen" {
		p.screened = append(p.screened, time.Since(p.begun))
	} else {
		p.confirmed = append(p.confirmed, time.Since(p.begun))
	}
}

// confirmEstimate is one confirmation's expected time.
func (p *screenProgress) confirmEstimate() time.Duration {
	if len(p.confirmed) > 0 {
		return meanOf(p.confirmed)
	}
	return confirmPerScreen * meanOf(p.screened)
}

// left is the time the ranking is expected to take still: the services
// left to screen, and the confirmations of the candidates so far and of
// as many among those left as the share found so far; never past the
// budget.
func (p *screenProgress) left(step, steps int) time.Duration {
	perScreen, perConfirm := meanOf(p.screened), p.confirmEstimate()
	var left time.Duration
	share := func(per time.Duration) time.Duration {
		if step > 1 && steps > 0 {
			return per * time.Duration(step-1) / time.Duration(steps)
		}
		return 0
	}
	if p.phase == "screen" && p.round > 1 {
		perMore := meanOf(p.more)
		if perMore == 0 {
			perMore = perScreen * 2 / 3
		}
		left = perMore*time.Duration(p.n-p.i) - share(perMore) + perConfirm*time.Duration(len(p.candidates))
	} else if p.phase == "screen" {
		if perScreen == 0 {
			if step <= 1 || steps <= 0 {
				return 0
			}
			perScreen = time.Since(p.begun) * time.Duration(steps) / time.Duration(step-1)
			perConfirm = confirmPerScreen * perScreen
		}
		rest := p.toScreen - len(p.screened)
		left = perScreen*time.Duration(rest) - share(perScreen)
		expected := float64(len(p.candidates))
		if p.screenedN > 0 {
			expected += float64(len(p.candidates)) / float64(p.screenedN) * float64(rest)
		}
		left += time.Duration(expected * float64(perConfirm))
	} else {
		left = perConfirm*time.Duration(p.n-len(p.confirmed)) - share(perConfirm)
	}
	if p.budget > 0 {
		left = min(left, p.budget-time.Since(p.start))
	}
	return max(0, left)
}

// prefix is the experiments' ProgressPrefix: step of steps within the
// current service; 0, 0 for a line of rank's own.
func (p *screenProgress) prefix(step, steps int) string {
	phase := p.phase
	if p.round > 1 && p.phase == "screen" {
		phase += fmt.Sprintf(" round %d", p.round)
	}
	where := fmt.Sprintf("%s %s %d/%d", phase, p.name, min(p.i+1, p.n), p.n)
	if step > 0 {
		where += fmt.Sprintf(" run %d/%d", step, steps)
	}
	eta := ""
	if left := p.left(step, steps); left > 0 {
		eta = ", about " + left.Round(time.Second).String() + " left"
	}
	cands := ""
	if p.phase == "screen" {
		cands = "; candidates: " + orNoneList(p.candidates)
	}
	return fmt.Sprintf("[%s, %s%s%s] ", where, time.Since(p.start).Round(time.Second), eta, cands)
}

// orNoneList is xs joined with commas, or "none".
func orNoneList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// othersBindReason begins the reason of a service whose screening ended
// at its first baseline (experiment.OthersBindError).
const othersBindReason = "not screened further: "

// screenEntry is a service's entry from its screening: judged by its
// screening interval, stage screened (failed where it failed).
func screenEntry(name string, res *report.Results, err error, minGain float64) report.RankEntry {
	e := report.RankEntry{Service: name, Stage: report.StageScreened}
	switch {
	case err == nil:
		e.Results = res
	case errors.Is(err, experiment.ErrNotCalled):
		e.Verdict, e.Reason = report.VerdictNotCalled, "the workload does not call it"
	case errors.Is(err, experiment.ErrNoCPU):
		e.Verdict, e.Reason = report.VerdictSkipped, errText(err)
	case errors.As(err, new(*experiment.OthersBindError)):
		// Its baseline is the answer: kept for the table.
		e.Stage, e.Verdict, e.Reason, e.Results = report.StageBounded, report.VerdictSkipped, othersBindReason+err.Error(), res
		return e
	default:
		e.Verdict, e.Reason = report.VerdictFailed, errText(err)
	}
	report.Judge(&e, minGain)
	if e.Verdict == report.VerdictFailed {
		e.Stage = report.StageFailed
	}
	return e
}

// notReached is the entry of a service the ranking did not measure.
func notReached(name, why string) report.RankEntry {
	return report.RankEntry{Service: name, Stage: report.StageNotReached, Verdict: report.VerdictNotReached, Reason: "not measured: " + why}
}

// rankScreened ranks the targets in two passes (docs/method.md,
// "Screening, then confirmation"): every service screened, in a random
// order, by a short measurement at one reduction, then the candidates
// whose screening interval does not rule out a gain above --min-gain
// measured in full, the most promising first. The budget stops either
// pass before a step expected to end past it, and an interruption stops
// both; the ranking is then partial, with what was measured. interrupted
// says that it was interrupted (Ctrl-C or SIGTERM): the caller stops the
// application before writing it.
func rankScreened(app *session, c rankConfig, out *report.Rank, targets []string, reds []model.Reduction, texts []string, start time.Time) (interrupted bool, err error) {
	s := app.d.Spec()
	red := screenReduction(reds)
	warmup, duration := c.screenWindows(s)
	seed := c.seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var bounds map[string]censusBound
	if c.bound {
		// The census is the application's first load: it warms up for a
		// whole --warmup, as pre-profiling does.
		fullWarmup, full := c.fullWindows(s)
		cen, b, err := census(app, c, targets, red, fullWarmup, duration, max(full, duration))
		switch {
		case err == nil:
			out.Census, bounds = cen, b
		case app.interrupted.Err() != nil:
			out.Partial, out.PartialReason = true, "interrupted during the census"
			for _, n := range targets {
				out.Entries = append(out.Entries, notReached(n, "the ranking was interrupted first"))
			}
			return true, nil
		case app.ctx.Err() != nil:
			return false, app.explain(err)
		default:
			// The census only saves time: without it every service is
			// screened.
			app.logf("%s; every service is screened", errText(err))
		}
	}
	order := slices.Clone(targets)
	if bounds != nil {
		order = order[:0]
		highest := 0.0
		for _, n := range targets {
			if b, ok := bounds[n]; ok && b.gainPct <= c.minGain {
				out.Entries = append(out.Entries, boundedEntry(n, b, red.Text, c.minGain))
				out.Census.Bounded = append(out.Census.Bounded, n)
				highest = max(highest, b.gainPct)
				continue
			}
			order = append(order, n)
		}
		if len(out.Census.Bounded) == 0 {
			// No bound to quote: every service's share allows more
			// than the minimum gain.
			app.logf("census: %.0f req/s; none of %d services ruled out by its share of the CPU (each could gain more than the minimum gain of %s%% from a cut of %s); %d left to screen",
				out.Census.RPS, len(targets), trimNum(c.minGain), red.Text, len(order))
		} else {
			app.logf("census: %.0f req/s; %d of %d services ruled out by their share of the CPU (a cut of %s gains each at most %+.1f%%, not above the minimum gain of %s%%); %d left to screen",
				out.Census.RPS, len(out.Census.Bounded), len(targets), red.Text, highest, trimNum(c.minGain), len(order))
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	out.Screening = &report.RankScreening{Reduction: red.Text, WarmupS: warmup.Seconds(), DurationS: duration.Seconds(), Seed: seed, Order: order, FullRuns: c.maxReps}
	app.logf("screening %d services at %s (%v windows after %v warm-up, random order, seed %d; up to %d slowdown runs each), then confirming at %s those whose interval does not rule out a gain that a full measurement could show above %s%%",
		len(order), red.Text, duration, warmup, seed, max(1, min(screenRounds, c.maxReps)), strings.Join(texts, ","), trimNum(c.minGain))
	prog := &screenProgress{start: start, budget: c.budget, toScreen: len(order), round: 1}
	stop := func(why string) {
		out.Partial, out.PartialReason = true, why
	}
	// Every service's screening baselines, for the others' intervals.
	baselines := map[string][]float64{}
	noiseBut := func(name string) [][]float64 {
		var groups [][]float64
		for _, n := range order {
			if n != name && len(baselines[n]) >= 2 {
				groups = append(groups, baselines[n])
			}
		}
		return groups
	}
	screenings := map[string]*experiment.Screening{}
	byName := map[string]int{}
	passing := func() []string {
		var names []string
		for _, e := range out.Entries {
			if e.Stage == report.StageScreened && report.PassesScreen(e, c.minGain, c.maxReps) {
				names = append(names, e.Service)
			}
		}
		return names
	}
	// interrupt ends the ranking on Ctrl-C or SIGTERM (the services left
	// not reached), or returns the error of the death that ended it.
	interrupt := func(err error, left []string, when string) error {
		if app.interrupted.Err() == nil {
			return app.explain(err)
		}
		stop("interrupted " + when)
		for _, n := range left {
			out.Entries = append(out.Entries, notReached(n, "the ranking was interrupted first"))
		}
		interrupted = true
		return nil
	}
	logEntry := func(e report.RankEntry, pass bool) {
		switch {
		case e.Verdict == report.VerdictGain || e.Verdict == report.VerdictNoGain:
			what := "ruled out"
			switch {
			case e.Verdict == report.VerdictGain:
				what = "a candidate (gain shown)"
			case pass && report.ScreenDisturbed(e):
				what = "a candidate (its baselines moved beyond the noise: this screening rules nothing out)"
			case pass:
				what = fmt.Sprintf("a candidate (a gain above %.1f%%, which a full measurement could show, not ruled out)", report.ScreenBar(e, c.minGain, c.maxReps))
			default:
				what = fmt.Sprintf("ruled out (no gain above %.1f%%, which a full measurement could show)", report.ScreenBar(e, c.minGain, c.maxReps))
			}
			app.logf("%sscreened %s: %s at %s: %s", prog.prefix(0, 0), e.Service, e.GainText(), red.Text, what)
		case e.Stage == report.StageBounded:
			app.logf("%sscreened %s up to its baseline: ruled out: %s", prog.prefix(0, 0), e.Service, strings.TrimPrefix(e.Reason, othersBindReason))
		default:
			app.logf("%sscreened %s: %s: %s", prog.prefix(0, 0), e.Service, e.Verdict, e.Reason)
		}
	}
	screenStart := time.Now()
	for i, name := range order {
		if !fitsBudget(time.Since(start), meanOf(prog.screened), c.budget) {
			stop(fmt.Sprintf("the budget of %v ran out during the screening", c.budget))
			for _, n := range order[i:] {
				out.Entries = append(out.Entries, notReached(n, "the budget ran out first"))
			}
			break
		}
		prog.begin("screen", i, len(order), name)
		sc, res, err := screenOne(app.ctx, app, c, name, red, warmup, duration, noiseBut(name), prog)
		if err != nil && app.ctx.Err() != nil {
			if err := interrupt(err, order[i:], "during the screening"); err != nil {
				return false, err
			}
			break
		}
		e := screenEntry(name, res, err, c.minGain)
		if e.Stage == report.StageScreened {
			e.ScreenNoise = screenNoise(noiseBut(name))
		}
		prog.end()
		if res != nil {
			baselines[name] = res.Baseline.Runs
			screenings[name] = sc
		}
		if e.Stage == report.StageBounded {
			out.Screening.OthersBind = append(out.Screening.OthersBind, name)
		}
		byName[name] = len(out.Entries)
		out.Entries = append(out.Entries, e)
		prog.screenedN++
		prog.candidates = passing()
		logEntry(e, report.PassesScreen(e, c.minGain, c.maxReps))
	}
	// Later rounds: one more slowdown run for each service still
	// undecided, in a new random order, with the noise of every baseline
	// measured so far.
	// Never more runs than a full measurement would make (--max-reps).
	for round := 2; round <= min(screenRounds, c.maxReps) && !out.Partial; round++ {
		var undecided []string
		for _, n := range order {
			if i, ok := byName[n]; ok && screenings[n] != nil && out.Entries[i].Verdict == report.VerdictNoGain && report.PassesScreen(out.Entries[i], c.minGain, c.maxReps) {
				undecided = append(undecided, n)
			}
		}
		if len(undecided) == 0 {
			break
		}
		rng.Shuffle(len(undecided), func(i, j int) { undecided[i], undecided[j] = undecided[j], undecided[i] })
		prog.round = round
		app.logf("screening round %d: %d undecided services measured once more: %s", round, len(undecided), strings.Join(undecided, ", "))
		for i, name := range undecided {
			next := meanOf(prog.more)
			if next == 0 {
				next = meanOf(prog.screened) * 2 / 3
			}
			if !fitsBudget(time.Since(start), next, c.budget) {
				stop(fmt.Sprintf("the budget of %v ran out during screening round %d", c.budget, round))
				break
			}
			prog.begin("screen", i, len(undecided), name)
			res, err := screenAgain(app.ctx, app, name, screenings[name], noiseBut(name))
			if err != nil && app.ctx.Err() != nil {
				if err := interrupt(err, nil, fmt.Sprintf("during screening round %d", round)); err != nil {
					return false, err
				}
				break
			}
			prog.end()
			if err != nil {
				// The earlier rounds' measurement stands.
				app.logf("%sscreening %s again: %s; its earlier screening stands", prog.prefix(0, 0), name, errText(err))
				continue
			}
			baselines[name] = res.Baseline.Runs
			e := screenEntry(name, res, nil, c.minGain)
			e.ScreenNoise = screenNoise(noiseBut(name))
			out.Entries[byName[name]] = e
			prog.candidates = passing()
			logEntry(e, report.PassesScreen(e, c.minGain, c.maxReps))
		}
	}
	out.Screening.ElapsedS = time.Since(screenStart).Seconds()
	var screened []report.RankEntry
	for _, e := range out.Entries {
		if e.Stage == report.StageScreened {
			screened = append(screened, e)
		}
	}
	cands := report.Candidates(screened, c.minGain, c.maxReps)
	out.Screening.Candidates = cands
	if !out.Partial {
		app.logf("screening done in %s: %d of %d services are candidates: %s", time.Since(screenStart).Round(time.Second), len(cands), len(order), orNoneList(cands))
	}
	for i, name := range cands {
		if out.Partial {
			break
		}
		if !fitsBudget(time.Since(start), prog.confirmEstimate(), c.budget) {
			stop(fmt.Sprintf("the budget of %v ran out before confirming %s", c.budget, strings.Join(cands[i:], ", ")))
			break
		}
		prog.begin("confirm", i, len(cands), name)
		var rivals []report.RankEntry
		for _, n := range cands {
			if n != name {
				rivals = append(rivals, out.Entries[byName[n]])
			}
		}
		res, err := confirmOne(app.ctx, app, c, name, screenings[name], reds, texts, rivals, prog.prefix)
		if err != nil && app.ctx.Err() != nil {
			if err := interrupt(err, nil, "while confirming "+name); err != nil {
				return false, err
			}
			break
		}
		prog.end()
		screen := out.Entries[byName[name]]
		e := report.RankEntry{Service: name, Stage: report.StageConfirmed, Screen: report.ScreenOf(screen)}
		switch {
		case err == nil:
			e.Results = res
		default:
			// The screening's measurement stays in the ranking's file
			// through Screen; the entry is the confirmation's failure.
			e.Verdict, e.Reason, e.Stage = report.VerdictFailed, "confirmation: "+errText(err), report.StageFailed
		}
		report.Judge(&e, c.minGain)
		if e.Verdict == report.VerdictGain || e.Verdict == report.VerdictNoGain {
			app.logf("%sconfirmed %s: %s at %s (%s)", prog.prefix(0, 0), name, e.GainText(), texts[len(texts)-1], e.Verdict)
		} else {
			app.logf("%sconfirming %s: %s: %s", prog.prefix(0, 0), name, e.Verdict, e.Reason)
		}
		out.Entries[byName[name]] = e
	}
	for i := range out.Entries {
		if b, ok := bounds[out.Entries[i].Service]; ok && out.Entries[i].CPUSharePct == nil {
			setBound(&out.Entries[i], b)
		}
	}
	out.Drift = report.DriftOf(out.Entries)
	if text := out.Drift.Text(); text != "" {
		app.logf("baseline drift: %s", text)
	}
	if w := out.Drift.Warning(); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	return interrupted, nil
}

// confirmOne makes name the target again and measures it in full: by
// continuing its screening sc (experiment.Screening.Confirm), or from the
// start where it has none or c.freshConfirm says so (rankOne). rivals
// are the other candidates as they stand (confirmed, or with their
// screening's interval): the confirmation ends early once its verdict
// is settled and its interval overlaps none of theirs.
func confirmOne(ctx context.Context, app *session, c rankConfig, name string, sc *experiment.Screening, reds []model.Reduction, texts []string, rivals []report.RankEntry, prefix func(step, steps int) string) (*report.Results, error) {
	if sc == nil || c.freshConfirm {
		return rankOne(ctx, app, c, name, reds, texts, prefix)
	}
	if err := app.d.Retarget(name); err != nil {
		return nil, err
	}
	warmup, duration := c.fullWindows(app.d.Spec())
	// Repetitions, and repeats of points noisier than --precision, are
	// made only while the ranking's answer is open: rank asks which
	// services gain and in what order, and an interval wholly on one
	// side of --min-gain that overlaps no other candidate's answers it.
	settled := func(res *report.Results) (bool, string) {
		e := report.RankEntry{Service: name, Results: res}
		report.Judge(&e, c.minGain)
		ok, why := e.Settled(c.minGain)
		if !ok {
			return false, ""
		}
		for _, o := range rivals {
			if !e.Separated(o) {
				return false, ""
			}
		}
		if len(rivals) > 0 {
			why += fmt.Sprintf(" and overlaps none of the other candidates' (%s)", rivalNames(rivals))
		}
		return true, why
	}
	return sc.Confirm(ctx, experiment.ConfirmOptions{Reductions: reds, ReductionsText: texts, Warmup: warmup, Duration: duration, Repetitions: c.reps, MaxRepetitions: c.maxReps, Settled: settled})
}

// screenNoise is the noise a screening's baselines are judged against:
// the other services' screening baselines (groups), pooled with the
// intervals' prior.
func screenNoise(groups [][]float64) *report.Noise {
	pct, dof := experiment.PooledNoise(groups)
	return &report.Noise{Pct: pct, DOF: dof}
}

// rivalNames lists the entries' services.
func rivalNames(es []report.RankEntry) string {
	var names []string
	for _, e := range es {
		names = append(names, e.Service)
	}
	return strings.Join(names, ", ")
}

// screenAgain makes name the target again and adds a round to its
// screening.
func screenAgain(ctx context.Context, app *session, name string, sc *experiment.Screening, noise [][]float64) (*report.Results, error) {
	if err := app.d.Retarget(name); err != nil {
		return nil, err
	}
	return sc.More(ctx, noise)
}

// screenOne makes name the target and screens it.
func screenOne(ctx context.Context, app *session, c rankConfig, name string, red model.Reduction, warmup, duration time.Duration, noise [][]float64, prog *screenProgress) (*experiment.Screening, *report.Results, error) {
	if err := app.d.Retarget(name); err != nil {
		return nil, nil, err
	}
	runner, err := experiment.New(app.d, experiment.Options{
		Target: name, Reductions: []model.Reduction{red}, ReductionsText: []string{red.Text}, Connections: c.conns,
		Warmup: warmup, Duration: duration, Repetitions: 1, MaxRepetitions: 1, PrecisionPct: c.method.precision, MaxPause: c.maxPause,
		SpecPath: c.specPath, Progress: os.Stderr, ProgressPrefix: prog.prefix,
		PauseMethod: c.method.pauseMethod(),
		Trigger:     c.method.trigger,
		Spans:       app.spans,
		NoiseGroups: noise,
		Tuning:      experiment.Tuning{ScreenAll: c.screenAll},
	})
	if err != nil {
		return nil, nil, err
	}
	_, full := c.fullWindows(app.d.Spec())
	return runner.Screen(ctx, max(full, duration))
}

// trimNum is v without trailing zeros.
func trimNum(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
