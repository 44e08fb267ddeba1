package experiment

import (
	"context"
	"fmt"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/model"
)

// Triggers: what the target's rounds follow (Options.Trigger).
const (
	// TriggerAuto counts calls where the target is instrumented and
	// follows its CPU time otherwise.
	TriggerAuto = "auto"
	// TriggerCalls starts a round every Batch calls that the target's
	// instrumentation counts (instrument/slowhttp, instrument/slowgrpc).
	TriggerCalls = "calls"
	// TriggerCPU starts a round each time the target's processes have
	// used another Batch×u1 of CPU: no instrumentation needed, any
	// language. Where calls are not counted, a "call" is one end-to-end
	// request: u1 is the target's CPU per request and c1 is 1, so that
	// d·c1 = p × (the target's CPU per request) for a reduction of a
	// share p of its cost, which is all the model needs.
	TriggerCPU = "cpu"
)

// ParseTrigger checks a trigger name; "" is auto.
func ParseTrigger(s string) (string, error) {
	switch s {
	case "", TriggerAuto:
		return TriggerAuto, nil
	case TriggerCalls, TriggerCPU:
		return s, nil
	}
	return "", fmt.Errorf("unknown trigger %q: want auto, calls or cpu", s)
}

// minTargetCores is the least CPU the target must use during
// pre-profiling, in cores, for its rounds to follow its CPU time.
const minTargetCores = 0.01

// resolveTrigger decides what the target's rounds follow and whether its
// calls are counted, and refuses reductions that need counts it lacks.
func (r *Runner) resolveTrigger() error {
	st, err := r.d.Service(r.opts.Target).Control.Stats()
	if err != nil {
		return fmt.Errorf("target %q: controller: %w", r.opts.Target, err)
	}
	r.counted = st.AgentConnected
	switch r.opts.Trigger {
	case TriggerCalls:
		if !r.counted {
			return &backend.SettingError{Setting: SettingTrigger, Value: TriggerCalls,
				Err: fmt.Errorf("target %q is not instrumented, so its calls cannot be counted without wrapping its handlers with instrument/slowhttp or instrument/slowgrpc", r.opts.Target),
				Use: []backend.Setting{{Name: SettingTrigger, Value: TriggerCPU}, {Name: SettingTrigger, Value: TriggerAuto}}}
		}
		r.trigger = TriggerCalls
	case TriggerCPU:
		r.trigger = TriggerCPU
	default:
		r.trigger = TriggerCalls
		if !r.counted {
			r.trigger = TriggerCPU
		}
	}
	if r.counted || r.opts.Spans != nil {
		// With spans, whether its calls are counted is known after
		// pre-profiling (needCalls).
		return nil
	}
	return r.needCalls()
}

// needCalls refuses reductions given as a time per call where the
// target's calls are not counted.
func (r *Runner) needCalls() error {
	if r.counted || r.spanned {
		return nil
	}
	for _, red := range r.opts.Reductions {
		if red.Kind == model.Absolute {
			return fmt.Errorf("reduction %s is a time per call, which needs the target's calls counted, and %q is not instrumented and exported no OpenTelemetry spans: give it as a share of its cost (30%%), a capacity factor (2x) or replicas (1->2), have it export spans (docs/opentelemetry.md), or wrap its handlers with instrument/slowhttp or instrument/slowgrpc", red.Text, r.opts.Target)
		}
	}
	return nil
}

// callsFrom says what counted the target's calls: "instrumentation",
// "spans", or "" (none: a "call" is one end-to-end request).
func (r *Runner) callsFrom() string {
	switch {
	case r.counted:
		return "instrumentation"
	case r.spanned:
		return "spans"
	}
	return ""
}

// perRequest fills in p's c1 and u1 for a target whose calls are not
// counted: one "call" per end-to-end request, costing the target's CPU per
// request over the measurement window.
func (r *Runner) perRequest(s *sample, p *profile) error {
	_, cpu := s.delta(r.opts.Target)
	n := s.responses()
	cores := 0.0
	if s.window > 0 {
		cores = cpu.Seconds() / s.window.Seconds()
	}
	if cores < minTargetCores || cpu <= 0 {
		return fmt.Errorf("target %q %w during pre-profiling (%.1f%% of a core, %v per request): "+
			"it waits on I/O, a lock or other services, so a cheaper %s would not change throughput, and its rounds cannot follow its CPU time; "+
			"check that the workload's requests reach it (its log is in the output directory's logs/)",
			r.opts.Target, ErrNoCPU, 100*cores, (cpu / time.Duration(max(1, n))).Round(time.Microsecond), r.opts.Target)
	}
	p.c1, p.u1 = 1, cpu/time.Duration(n)
	r.fromSpans(s, p, cpu)
	return nil
}

// fromSpans counts the calls of every service that exports OpenTelemetry
// spans and is not instrumented, over s's window: its calls per request
// (over the entry service's spans where it exports them, the load
// generator's responses otherwise) and, for the target, its CPU per call.
// The target's calls are then counted (r.spanned); where it sent no
// spans, a warning says why that may be and what is done instead.
func (r *Runner) fromSpans(s *sample, p *profile, targetCPU time.Duration) {
	if r.opts.Spans == nil || s.from.IsZero() {
		return
	}
	from, to := s.from, s.from.Add(s.window)
	requests := float64(s.responses())
	counted := func(name string) bool { st := s.after[name]; return st != nil && st.AgentConnected }
	if entry := r.entryService(); entry != "" && !counted(entry) {
		if n := r.opts.Spans.Count(entry, from, to); n > 0 {
			requests = float64(n)
		}
	}
	if requests <= 0 {
		return
	}
	for _, svc := range r.spec.Services {
		if counted(svc.Name) {
			continue // its instrumentation counts it
		}
		if n := r.opts.Spans.Count(svc.Name, from, to); n > 0 {
			p.ci[svc.Name] = float64(n) / requests
		}
	}
	if n := r.opts.Spans.Count(r.opts.Target, from, to); n > 0 {
		p.c1, p.u1, r.spanned = float64(n)/requests, targetCPU/time.Duration(n), true
		r.progress("%s's OpenTelemetry spans: %d SERVER spans over %.0f requests in the %v window", r.opts.Target, n, requests, s.window.Round(time.Millisecond))
		return
	}
	// Not counted from spans: say why, and what is done instead.
	instead := "slowpoke counts one call per end-to-end request instead (c1 = 1, u1 its CPU per request; its rounds follow its CPU time)"
	if r.opts.Validate {
		instead += ", and validate learns its calls per request from its ground-truth knob in a run of its own"
	}
	// An application none of whose services exports spans is the common
	// case, not a fault: one line says what is done. A warning is for a
	// target silent where spans do arrive (its SDK misconfigured).
	if st := r.opts.Spans.Stats(); st.Spans == 0 && st.Rejected == 0 {
		r.progress("no OpenTelemetry span arrived from any service: %s (docs/opentelemetry.md)", instead)
		return
	}
	var names []string
	for _, svc := range r.spec.Services {
		names = append(names, svc.Name)
	}
	p.warnings = append(p.warnings, r.opts.Spans.MissingWarning(r.opts.Target, "during pre-profiling", names, instead))
}

// calibrateTruth learns, for validate on a target whose calls are not
// counted, the target's calls per request from its ground-truth knob:
// one run with all of the knob's work removed (base_us per call), whose
// drop in the target's CPU per request is c1 × base_us. The ground truth
// of a point then removes d / c1 per call. The target is restarted as it
// was afterwards.
func (r *Runner) calibrateTruth(ctx context.Context) error {
	svc, _ := r.spec.Service(r.opts.Target)
	base := svc.GroundTruth.BaseUS
	if base <= 0 {
		return fmt.Errorf("validate on %q, whose calls are not counted, needs a ground_truth base_us above 0 to learn its calls per request", r.opts.Target)
	}
	r.step++
	r.steps++
	if err := r.restartRaw(ctx, time.Duration(base*1e3)); err != nil {
		return err
	}
	s, err := r.run(ctx, nil, nil, r.opts.Warmup, false)
	if err != nil {
		return err
	}
	if err := r.restartRaw(ctx, 0); err != nil {
		return err
	}
	_, cpu := s.delta(r.opts.Target)
	n := s.responses()
	if n == 0 {
		return fmt.Errorf("no requests completed with %q's ground-truth work removed", r.opts.Target)
	}
	without := cpu.Seconds() / float64(n)
	drop := r.prof.u1.Seconds() - without
	c1 := drop / (base * 1e-6)
	r.progress("calibration: with %s's %gµs of ground-truth work removed per call, its CPU per request fell from %.1f to %.1f µs: %.3f calls per request",
		r.opts.Target, base, r.prof.u1.Seconds()*1e6, without*1e6, c1)
	if !(c1 > 0) {
		return fmt.Errorf("removing %q's ground-truth work (%s=0) did not lower its CPU per request (%.1f µs, against %.1f µs): check the knob in the spec",
			r.opts.Target, svc.GroundTruth.Env, without*1e6, r.prof.u1.Seconds()*1e6)
	}
	r.truthC1 = c1
	return nil
}

// truthText says by how much a ground truth reduces the target's work per
// call, for the model's d.
func (r *Runner) truthText(d time.Duration) string {
	if r.counted || r.truthC1 <= 0 {
		return d.Round(time.Microsecond).String()
	}
	return fmt.Sprintf("%v per call, %v per request", time.Duration(float64(d)/r.truthC1).Round(time.Microsecond), d.Round(time.Microsecond))
}
