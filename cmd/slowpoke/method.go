package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"github.com/slowpoke-dev/slowpoke/internal/backend/local"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// methodConfig holds the flags that change how slowdown runs are made and
// repeated, shared by predict, validate and bench accuracy so that they
// mean the same everywhere; demo runs with defaultMethod. The user-facing
// ones are methodFlags; the knobs that exist to measure what each part of
// the method buys are researchFlags, which only the benchmarks offer.
type methodConfig struct {
	precision float64
	lead      time.Duration
	graph     bool
	uncoord   bool
	noExtend  bool
	noPeers   bool
	overhead  bool
	noGrowth  bool
	noIdle    bool
	noStarve  bool
	nominal   bool
	placement string // a local.Mode
	pause     string // a pause.Method
	trigger   string // an experiment trigger
	kubeMode  string // a kube.Mode
}

// defaultMethod is the method every command uses unless told otherwise.
func defaultMethod() methodConfig {
	return methodConfig{precision: experiment.DefaultPrecisionPct, lead: experiment.DefaultPauseLead, placement: string(local.ModeAuto), pause: string(pause.MethodAuto), trigger: experiment.TriggerAuto}
}

// methodFlags are the method flags a user of predict and validate needs.
func methodFlags(fs *flag.FlagSet, m *methodConfig) {
	fs.Float64Var(&m.precision, "precision", m.precision, "standard error (%) a noisy point is repeated down to")
	fs.StringVar(&m.placement, "placement", m.placement, "auto, shared, dedicated or keep: dedicated gives every service its spec'd cores of its own (as the paper's one service per node) and keeps 2 for the load generator and the controllers; shared gives only the target cores of its own; auto is dedicated where the machine has the cores; keep pins nothing, so that the answer is for the placement the application has (the machine's cores read as one pool; pauses by cgroup or signal)")
	fs.StringVar(&m.pause, "pause", m.pause, "how the other services are paused: cores (hold the cores they run on; needs the target on cores of its own and real-time scheduling), cgroup (freeze their cgroups), signal (SIGSTOP/SIGCONT each), or auto (cores where the target has cores of its own and real-time scheduling is allowed, signal otherwise)")
	fs.StringVar(&m.trigger, "trigger", m.trigger, "what starts the target's pause rounds: calls (counted by its slowhttp/slowgrpc instrumentation), cpu (its CPU time: any language, no instrumentation), or auto (calls where the target is instrumented, cpu otherwise)")
}

// kubeModeFlag is how predict and rank reach the pods on Kubernetes.
func kubeModeFlag(fs *flag.FlagSet, m *methodConfig) {
	fs.StringVar(&m.kubeMode, "kube-mode", string(kube.ModeAuto), "on Kubernetes: agent (a node agent per node freezes the pods from outside; nothing rolls out, every replica counts), template (each Deployment rolls out with its service under a controller, one replica, and back), or auto (agent where the cluster admits its privileged pod, template otherwise, and for validate's ground truth)")
}

// kubeOptions is what the Kubernetes backend needs of the method: the
// mode, whether the command restarts the target, the pause method.
func (m methodConfig) kubeOptions(restarts bool) kube.Options {
	mode, _ := kube.ParseMode(m.kubeMode)
	if m.kubeMode == "" {
		mode = kube.ModeTemplate // a command without --kube-mode
	}
	return kube.Options{Mode: mode, Restarts: restarts, Pause: m.pauseMethod()}
}

// tuning is the research switches as the experiment takes them (only
// the benchmarks offer their flags; elsewhere they keep their defaults,
// the product's method).
func (m methodConfig) tuning() experiment.Tuning {
	lead := m.lead
	return experiment.Tuning{PauseLead: &lead, GraphRounds: m.graph, Uncoordinated: m.uncoord, NoColocatedExtension: m.noExtend,
		NoPeerExtension: m.noPeers, OverheadCorrection: m.overhead, NoGrowthCorrection: m.noGrowth,
		NoIdleCorrection: m.noIdle, NoStarvedRepair: m.noStarve, NominalDelay: m.nominal}
}

// pauseMethod is the pause method (checked by check).
func (m methodConfig) pauseMethod() pause.Method {
	p, _ := pause.ParseMethod(m.pause)
	return p
}

// mode is the placement mode (checked by check).
func (m methodConfig) mode() local.Mode {
	mode, _ := local.ParseMode(m.placement)
	return mode
}

// check refuses what the experiment would refuse, before anything starts.
func (m methodConfig) check() error {
	if err := experiment.CheckPauseLead(m.lead); err != nil {
		return fmt.Errorf("--pause-lead: %w", err)
	}
	if !(m.precision > 0 && m.precision <= 100) {
		return fmt.Errorf("--precision must be a standard error in (0, 100] per cent, got %v", m.precision)
	}
	if _, err := local.ParseMode(m.placement); err != nil {
		return fmt.Errorf("--placement: %w", err)
	}
	if _, err := pause.ParseMethod(m.pause); err != nil {
		return fmt.Errorf("--pause: %w", err)
	}
	if _, err := experiment.ParseTrigger(m.trigger); err != nil {
		return fmt.Errorf("--trigger: %w", err)
	}
	return nil
}

// checkFor refuses, before anything starts, what the spec's backend would
// refuse only once the application is up: on Kubernetes, the pause methods
// the backend cannot make (kube.PauseMethod), and a placement, which the
// cluster makes.
func (m methodConfig) checkFor(s *spec.Spec) error {
	if s.Kubernetes == nil {
		return nil
	}
	mode, err := kube.ParseMode(m.kubeMode)
	if err != nil {
		return fmt.Errorf("--kube-mode: %w", err)
	}
	if m.kubeMode == "" {
		mode = kube.ModeTemplate
	}
	if err := kube.CheckPause(mode, m.pauseMethod()); err != nil {
		return err
	}
	if mode := m.mode(); mode != local.ModeAuto {
		return fmt.Errorf("--placement %s: not available on Kubernetes, where the cluster's scheduler places the pods (docs/kubernetes.md)", mode)
	}
	return nil
}

// checkRuns refuses repetition and window flags no run could use.
func checkRuns(reps, maxReps int, warmup, duration time.Duration) error {
	switch {
	case reps < 1:
		return fmt.Errorf("--reps must be at least 1, got %d", reps)
	case maxReps < 0:
		return fmt.Errorf("--max-reps must be >= 0, got %d", maxReps)
	case warmup < 0:
		return fmt.Errorf("--warmup must be >= 0 (0: the spec's), got %v", warmup)
	case duration < 0:
		return fmt.Errorf("--duration must be > 0 (0: the spec's), got %v", duration)
	}
	return nil
}

// checkWindow refuses a negative --connections (0: chosen), --warmup or
// --duration, for the commands whose 0 is not the spec's.
func checkWindow(conns int, warmup, duration time.Duration) error {
	switch {
	case conns < 0:
		return fmt.Errorf("--connections must be > 0, got %d", conns)
	case warmup < 0:
		return fmt.Errorf("--warmup must be >= 0, got %v", warmup)
	case duration < 0:
		return fmt.Errorf("--duration must be > 0, got %v", duration)
	}
	return nil
}
