package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
)

// Version is the results schema version written by this package. 2 added
// each point's inserted delays (delay_*), its prediction with the nominal
// delay, its 90% interval and estimate; 3 the deployed baseline's CPU
// use and each point's bound for the deployed placement; 4 moved each
// point's mechanism and research figures into its diagnostics
// (docs/results.md, "Changelog").
const Version = 4

// Kinds of experiment.
const (
	KindPredict  = "predict"
	KindValidate = "validate"
)

// Flags a point may carry; see docs/results.md for what to do about each.
const (
	FlagInfeasible           = "infeasible"
	FlagErrors               = "errors"
	FlagTargetStarved        = "target-starved"
	FlagPauseShortfall       = "pause-shortfall"
	FlagNeighbourUnreachable = "neighbour-unreachable"
	FlagNoisy                = "noisy"
	FlagStopsLate            = "stops-late"
	FlagMechanismCost        = "mechanism-cost"
	FlagHoldLeak             = "hold-leak"
	FlagSharedBound          = "shared-bound"
)

// Which delay per request a point's predictions took off (Point.DelayUsed).
const (
	DelayNominal  = "nominal"  // d·c1/q1, what the model asks for
	DelayMeasured = "measured" // what the pauses really inserted
	DelayMixed    = "mixed"    // some runs one, some the other
	DelayPool     = "pool"     // d·c1 over the cores of a saturated pool (keep placement)
)

// What a point's prediction is (Point.Estimate).
const (
	EstimateValue      = "value"       // a number, within its interval
	EstimateLowerBound = "lower-bound" // the truth is at least interval_low_rps
	EstimateUnknown    = "unknown"     // no number could be measured
)

// Results is the outcome of one experiment, stored as results.json.
type Results struct {
	Version   int       `json:"version"` // Version
	Kind      string    `json:"kind"`    // KindPredict or KindValidate
	App       string    `json:"app"`
	Target    string    `json:"target"`
	CreatedAt time.Time `json:"created_at"`
	Settings  Settings  `json:"settings"`
	Baseline  Baseline  `json:"baseline"`
	C1        float64   `json:"c1"` // target calls per completed user request
	Q1        float64   `json:"q1"` // target's cores used by the model
	// Q1Assigned is the target's cores as placed; Q1 is 1 instead when
	// the target never used more than one (TargetCoresP95).
	Q1Assigned float64 `json:"q1_assigned"`
	// TargetCoresP95 and TargetCoresMean: the target's CPU use during
	// pre-profiling, in cores, over 20 ms intervals (95th percentile) and
	// on average.
	TargetCoresP95  float64 `json:"target_cores_p95"`
	TargetCoresMean float64 `json:"target_cores_mean"`
	U1US            float64 `json:"u1_us"` // target CPU µs per call (kernel accounting)
	// Trigger is what the target's rounds followed: "calls" (counted by
	// its instrumentation) or "cpu" (its CPU time). CallsCounted says
	// whether its calls were counted at all: where they were not, a
	// "call" is one end-to-end request, C1 is 1 and U1US the target's CPU
	// per request.
	Trigger      string `json:"trigger"`
	CallsCounted bool   `json:"calls_counted"`
	// CallsFrom says what counted the target's calls: "instrumentation"
	// (instrument/slowhttp, instrument/slowgrpc) or "spans" (its
	// OpenTelemetry SERVER spans); empty where they were not counted.
	CallsFrom string `json:"calls_from,omitempty"`
	// TruthC1: validate on a target whose calls were not counted learns
	// its calls per request from its ground-truth knob (docs/method.md).
	TruthC1 *float64 `json:"truth_c1,omitempty"`
	// Neighbours is the graph rounds are sent along: the undirected call
	// graph seen by the instrumentation, with every service it does not
	// connect to the target linked to the target.
	Neighbours map[string][]string `json:"neighbours"`
	// CallGraph is the undirected call graph as counted (calls or spans),
	// without those links: empty where nothing was counted. Version 2.
	CallGraph      map[string][]string `json:"call_graph,omitempty"`
	Points         []Point             `json:"points"`
	RMSEPct        *float64            `json:"rmse_pct,omitempty"`          // validate only
	MaxAbsErrorPct *float64            `json:"max_abs_error_pct,omitempty"` // validate only
	// RawRMSEPct and RawMaxAbsErrorPct are RMSEPct and MaxAbsErrorPct of
	// the predictions as measured, before the shared-bound points were
	// levelled (validate only, and only when a point was).
	RawRMSEPct        *float64 `json:"raw_rmse_pct,omitempty"`
	RawMaxAbsErrorPct *float64 `json:"raw_max_abs_error_pct,omitempty"`
	// DeployedBaseline is the application measured as it ran before
	// slowpoke placed anything (attached applications), beside Baseline,
	// measured under slowpoke's placement; absent where not measured.
	DeployedBaseline *Baseline `json:"deployed_baseline,omitempty"`
	// ArmedCostPct is how far (%) a point without pauses (0%: the
	// controllers armed, rounds counted, nothing paused) measured from
	// the baseline, and ArmedNoisePct the standard error of that
	// difference, %; absent without such a point.
	ArmedCostPct  *float64 `json:"armed_cost_pct,omitempty"`
	ArmedNoisePct *float64 `json:"armed_noise_pct,omitempty"`
	// NominalRMSEPct is the RMSE of the predictions with the nominal
	// delay (predicted_nominal_rps), beside RMSEPct (validate only).
	NominalRMSEPct *float64 `json:"nominal_rmse_pct,omitempty"`
	// Coverage counts the points whose 90% interval held the truth
	// (validate only).
	Coverage *Coverage `json:"interval_coverage,omitempty"`
	// Plateau says where the gains stop, when some points are
	// shared-bound (ApplyPlateau); nil otherwise.
	Plateau *Plateau `json:"plateau,omitempty"`
	// NodeSkews, for a run on Kubernetes whose pods span nodes, is how far
	// each other node froze and thawed its pods from the target's node,
	// over every round of the run; nil otherwise.
	NodeSkews []NodeSkew `json:"node_skews,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"`
}

// NodeSkew is one other node's round skew over a run (Results.NodeSkews):
// the absolute differences, in µs, between when it and the target's node
// froze (start) and thawed (end) their pods for the same round, and
// signed ones (late: it later than the target's node; longer: its freeze
// longer).
type NodeSkew struct {
	Node       string  `json:"node"`
	Rounds     int     `json:"rounds"`
	Missing    int     `json:"missing,omitempty"`  // rounds it did not report
	Capped     int     `json:"capped,omitempty"`   // freezes its own cap ended
	Timed      int     `json:"timed,omitempty"`    // freezes its own timer ended at the length asked
	Refrozen   int     `json:"refrozen,omitempty"` // frozen again for a lengthening that came after its timer thawed
	StartP50US float64 `json:"start_p50_us"`
	StartP99US float64 `json:"start_p99_us"`
	StartMaxUS float64 `json:"start_max_us"`
	EndP50US   float64 `json:"end_p50_us"`
	EndP99US   float64 `json:"end_p99_us"`
	EndMaxUS   float64 `json:"end_max_us"`

	LateStartP50US float64 `json:"late_start_p50_us"`
	LateEndP50US   float64 `json:"late_end_p50_us"`
	LongerP1US     float64 `json:"longer_p1_us"`
	LongerP50US    float64 `json:"longer_p50_us"`
	LongerP99US    float64 `json:"longer_p99_us"`
	// DeliverStart and DeliverEnd: the freeze and the thaw frames' way
	// from the target's node's agent to this node's, sent to read (the
	// thaw's over the rounds its frame thawed), 50th and 99th
	// percentiles; absent from runs before they were measured.
	DeliverStartP50US float64 `json:"deliver_start_p50_us,omitempty"`
	DeliverStartP99US float64 `json:"deliver_start_p99_us,omitempty"`
	DeliverEndP50US   float64 `json:"deliver_end_p50_us,omitempty"`
	DeliverEndP99US   float64 `json:"deliver_end_p99_us,omitempty"`
	// Lost says why the target's agent lost this node's agent ("": it
	// did not).
	Lost string `json:"lost,omitempty"`
}

// Settings records how the experiment was run.
type Settings struct {
	Spec        string   `json:"spec"`
	Reductions  []string `json:"reductions"`
	Batch       int      `json:"batch"`
	Connections int      `json:"connections"`
	WarmupS     float64  `json:"warmup_s"`
	DurationS   float64  `json:"duration_s"`
	Repetitions int      `json:"repetitions"`
	// MaxRepetitions and PrecisionPct: noisy points were repeated, up to
	// MaxRepetitions runs, until their standard error was within
	// PrecisionPct.
	MaxRepetitions int     `json:"max_repetitions"`
	PrecisionPct   float64 `json:"precision_pct"`
	MaxPauseMS     float64 `json:"max_pause_ms"`
	// PauseMethod is how the other services were paused: "signal",
	// "cgroup" or "cores" (docs/method.md).
	PauseMethod string `json:"pause_method"`
	// PauseLeadMS: with signals, how long after a round's trigger the
	// stops were due.
	PauseLeadMS float64 `json:"pause_lead_ms"`
	// Tuning records the research switches a benchmark set (nil for
	// every user command: the product's method).
	Tuning *Tuning `json:"tuning,omitempty"`
	// Placement maps each service to the CPU ids it was pinned to;
	// PlacementMode says whether the non-target services shared cores
	// ("shared") or had cores of their own ("dedicated").
	Placement     map[string][]int `json:"placement"`
	PlacementMode string           `json:"placement_mode,omitempty"`
	LoadCPUs      []int            `json:"load_cpus"`
	Host          string           `json:"host"`
	NumCPU        int              `json:"num_cpu"`
	// Carried is set on a rank confirmation that continued the service's
	// screening: what it kept from it. Version 4, optional.
	Carried *Carried `json:"carried,omitempty"`
}

// Carried is what a rank confirmation kept from the same service's
// screening (docs/method.md, "Screening, then confirmation"): its
// pre-profile (c1, q1, u1, the call graph) and, at Reduction (the
// screened one; "" where no reduction of the confirmation is), the
// pauses the screening settled on. DurationS is the screening's window.
// Every run of the confirmation is its own.
type Carried struct {
	Reduction string  `json:"reduction,omitempty"`
	DurationS float64 `json:"duration_s"`
}

// Baseline is the unmodified application's throughput.
type Baseline struct {
	RPS       float64   `json:"rps"`
	Runs      []float64 `json:"runs"`
	SpreadPct float64   `json:"spread_pct"`
	Errors    uint64    `json:"errors"`
	Non2xx    uint64    `json:"non_2xx"`
	P50MS     float64   `json:"p50_ms"`
	P99MS     float64   `json:"p99_ms"`
	// OthersCPUUS is the CPU time all services but the target used per
	// completed request (median over runs); compare with the points'.
	OthersCPUUS float64 `json:"others_cpu_us"`
	// PausedWorkUS is the busy time of the non-target services' cores per
	// completed request, summed over those cores (median over runs): the
	// services', the load generator's and the controllers' work there.
	PausedWorkUS float64 `json:"paused_work_us"`
	// ControllersCPUUS is the CPU time all controllers used per completed
	// request outside their services' stops (median over runs).
	ControllersCPUUS float64 `json:"controllers_cpu_us"`
	// SharedIdlePct is the share of time the cores of the non-target
	// services were idle during the window (median over runs).
	SharedIdlePct float64 `json:"shared_idle_pct"`
	// CPU is where the CPU went per request over the runs' windows; set
	// on the deployed baseline, absent elsewhere. Version 3.
	CPU *CPUUse `json:"cpu,omitempty"`
	// Unpinned says, on the deployed baseline, that slowpoke measured an
	// application it started with every service and the load on every
	// core, rather than one it attached to as it ran. Version 3.
	Unpinned bool `json:"unpinned,omitempty"`
	// HalfWidthPct is the half-width of the 90% interval of the
	// baseline's throughput, % of it: Student's t times the run-to-run
	// noise the points' intervals assume (its runs pooled with the
	// prior, and with the other services' screening baselines in a
	// screening), over the square root of its runs. A gain (rank) is
	// the point's prediction over the baseline, and its interval widens
	// by this in quadrature. Absent where not measured (before version 4
	// files, the deployed baseline).
	HalfWidthPct float64 `json:"half_width_pct,omitempty"`
}

// DeployedWords says in a few words how the deployed baseline b was
// measured: as the application ran before slowpoke placed anything, or
// (an application slowpoke started) unpinned.
func (b *Baseline) DeployedWords() string {
	if b.Unpinned {
		return "unpinned (every service on every core, before slowpoke's placement)"
	}
	return "as deployed (before slowpoke placed anything)"
}

// CPUUse is where a baseline's CPU went, per completed request, over its
// runs' measurement windows.
type CPUUse struct {
	// ServicesUS is each service's CPU time (its processes, their
	// live descendants included), µs per request.
	ServicesUS map[string]float64 `json:"services_us"`
	// MachineUS is the busy time of all the machine's cores, µs per
	// request: the services', the load generator's and anything else's.
	MachineUS float64 `json:"machine_us"`
	// BusyPct is how busy the machine's Cores were, % of their time.
	BusyPct float64 `json:"busy_pct"`
	Cores   int     `json:"cores"`
}

// Point is the prediction (and, for validate, the truth) for one reduction
// of the target's per-call CPU time.
type Point struct {
	ReductionPct float64 `json:"reduction_pct"` // of u1
	ReductionUS  float64 `json:"reduction_us"`  // d
	Batch        int     `json:"batch"`         // target calls per pause round
	// OverheadUS is the time per request taken off each slowdown run
	// before predicting, per shared core: unless --no-growth-correction, the
	// non-target services' CPU above the baseline's; with
	// --overhead-correction, the controllers' CPU above the baseline's;
	// unless --no-idle-correction, under shared placement with held cores
	// where the paused services bound the run, the shared cores' idle time
	// (what was taken off, after the target's demand capped it; median over
	// runs).
	OverheadUS    float64   `json:"overhead_us"`
	SlowdownRPS   float64   `json:"slowdown_rps"` // median measured throughput with pauses
	SlowdownRuns  []float64 `json:"slowdown_runs"`
	PredictedRPS  float64   `json:"predicted_rps"` // median of per-run predictions; 0 when infeasible
	PredictedRuns []float64 `json:"predicted_runs"`
	// RawPredictedRPS is, on a point whose prediction was raised to the
	// shared cores' capacity (the capacity run's, or the largest
	// shared-bound prediction: LevelSharedBound), the prediction as
	// measured (the median of predicted_runs); absent where
	// predicted_rps is that.
	RawPredictedRPS float64 `json:"raw_predicted_rps,omitempty"`
	SpreadPct       float64 `json:"spread_pct"` // (max-min)/median of predicted runs, %
	// StdErrPct is the standard error of the point's estimate relative to
	// it, %: of the mean prediction, combined with the mean ground truth's
	// for validate.
	StdErrPct float64   `json:"std_err_pct"`
	Errors    uint64    `json:"errors"`
	Non2xx    uint64    `json:"non_2xx"`
	Flags     []string  `json:"flags"`
	TrueRPS   *float64  `json:"true_rps,omitempty"` // validate only: median with the target really optimized
	TrueRuns  []float64 `json:"true_runs,omitempty"`
	ErrorPct  *float64  `json:"error_pct,omitempty"` // validate only: (predicted-true)/true*100
	// RawErrorPct is error_pct of raw_predicted_rps (validate only, and
	// only where the point was levelled).
	RawErrorPct *float64 `json:"raw_error_pct,omitempty"`

	// DelayNominalUS is the pause per user request the model asks of
	// every other service, d·c1/q1 (µs); DelayMeasuredUS what the pauses
	// really inserted per request completed in the measurement window
	// (median over the runs), on the resource named by
	// Diagnostics.DelayMeasuredBy.
	DelayNominalUS  float64 `json:"delay_nominal_us,omitempty"`
	DelayMeasuredUS float64 `json:"delay_measured_us,omitempty"`
	// DelayUsed is which delay the predictions took off: DelayMeasured
	// where the paused services bound the runs, DelayNominal where the
	// target did (or nothing was counted, or --nominal-delay), DelayMixed
	// where runs differed.
	DelayUsed string `json:"delay_used,omitempty"`
	// IntervalLowRPS and IntervalHighRPS bound the 90% interval of the
	// prediction: the runs' noise (as amplified by the model) and the
	// uncertainty of the corrections (docs/method.md, "Intervals");
	// IntervalHighRPS is absent for a lower bound.
	IntervalLowRPS  float64 `json:"interval_low_rps,omitempty"`
	IntervalHighRPS float64 `json:"interval_high_rps,omitempty"`
	// Estimate says what predicted_rps is: EstimateValue,
	// EstimateLowerBound (the target starved during the pauses, so the
	// optimized system does at least this) or EstimateUnknown
	// (infeasible).
	Estimate string `json:"estimate,omitempty"`
	// DeployedBoundRPS is, where the application was measured as it ran
	// (deployed_baseline with its cpu), the most throughput that
	// placement could reach with the target this much cheaper: its
	// cores' capacity with the work that much smaller, or its throughput
	// scaled by the target's own CPU, whichever is less
	// (model.DeployedBound). Absent otherwise, and where neither limits.
	// Version 3.
	DeployedBoundRPS float64 `json:"deployed_bound_rps,omitempty"`
	// Diagnostics is what the point's runs showed of the mechanism, for
	// research and for explaining its flags; no table, report or verdict
	// reads it. Version 4 moved it here from the point's top level.
	Diagnostics *PointDiagnostics `json:"diagnostics,omitempty"`
}

// PointDiagnostics is a point's "diagnostics" in results.json
// (docs/results.md, "Diagnostics"): how its pauses went, where the CPU
// went, and the research comparisons. The flags are decided from some of
// it; the lab's benchmarks read some of it. Until version 4 these were
// fields of the point itself (Point.UnmarshalJSON reads them there).
type PointDiagnostics struct {
	// LongPauses says that the shared cores bound the point's first
	// slowdown run, so that the point was measured again, and only, with
	// pauses of up to 64 ms (batch and pause_per_round_us are those).
	LongPauses bool `json:"long_pauses,omitempty"`
	// ShortenedFromBatch is, where the target starved during the pauses
	// of the point's first run, the batch that run was made with: the
	// point was measured again, and only, with half the batch (up to
	// twice), so that the target's queue lasts through the pauses; batch
	// and pause_per_round_us are the shorter ones. Absent otherwise.
	ShortenedFromBatch int `json:"shortened_from_batch,omitempty"`
	// OthersCPUUS is the CPU time all services but the target used per
	// completed request during the slowdown runs (median). Virtual speedup
	// assumes it stays at the baseline's: a lower value means the paused
	// services ran more efficiently than in the baseline.
	OthersCPUUS float64 `json:"others_cpu_us"`
	// PausedWorkUS is the busy time of the non-target services' cores per
	// completed request during the slowdown runs, summed over those cores,
	// the pauses themselves (the cores method's holding threads) left out
	// (median). Compare with the baseline's.
	PausedWorkUS float64 `json:"paused_work_us"`
	// ControllersCPUUS is the controllers' CPU time per completed request
	// outside their services' stops during the slowdown runs (median).
	ControllersCPUUS float64 `json:"controllers_cpu_us"`
	// SharedIdlePct is the share of time the non-target services' cores
	// were idle during the slowdown runs, stops included (median).
	SharedIdlePct float64 `json:"shared_idle_pct"`
	// CapacityRPS is, on a point whose slowdown runs kept the shared
	// cores busy all the time outside the pauses, their capacity as the
	// capacity run measured it (the application unslowed, those cores
	// held for a fixed share of the time); predicted_rps is it, or the
	// target's own ceiling where lower, where that is above the measured
	// prediction (raw_predicted_rps). Absent where no capacity run bound
	// the shared cores.
	CapacityRPS float64 `json:"capacity_rps,omitempty"`
	// CapacityInflation is, with CapacityRPS, the shared services' CPU
	// per request in the baselines (the queue at the target) over theirs
	// in the capacity runs that bound them (the queue at them): the
	// cause the capacity runs correct, measured. predicted_rps is never
	// raised above raw_predicted_rps times it (not at all where it is 1
	// or less). Absent where either was not measured.
	CapacityInflation float64 `json:"capacity_inflation,omitempty"`
	// RoundDelayUS is how long rounds took from the target's trigger to
	// the slowest service's controller (mean per service, the largest over
	// services, median over runs). Pauses start that late, and services
	// that start late pause out of step with the others.
	RoundDelayUS float64 `json:"round_delay_us"`
	// LateRoundsPct is the share of rounds that reached a paused service
	// after the pause lead had passed, so that it stopped out of step with
	// the others (all services, all runs; 0 without a lead).
	LateRoundsPct float64 `json:"late_rounds_pct"`
	// StopLateMinUS and StopLateMaxUS: how late the paused services' stops
	// started after the time they were due (trigger plus lead), the mean
	// per service, the smallest and the largest over the services that had
	// such stops (medians over runs; 0 when none had: no lead, or
	// uncoordinated). Their difference is how far stops that should
	// coincide are out of step.
	StopLateMinUS float64 `json:"stop_late_min_us"`
	StopLateMaxUS float64 `json:"stop_late_max_us"`
	// PausePerRoundUS is the pause inserted into every other service per
	// round, batch·d/q1 (µs).
	PausePerRoundUS float64 `json:"pause_per_round_us"`
	// Rounds counts the pause rounds of the measured windows;
	// PauseRequestedMS and PauseActualMS the pause time asked for and
	// really got per run (per paused service with signals).
	Rounds           uint64  `json:"rounds"`
	PauseRequestedMS float64 `json:"pause_requested_ms"`
	PauseActualMS    float64 `json:"pause_actual_ms"`
	// HeldCPUPct is, with the cores method, the share of the holds' time
	// that the holding threads ran on the held cores (100: nothing else
	// ran there; lower: the kernel's real-time throttling or a higher
	// priority thread let something run during the pauses).
	HeldCPUPct float64 `json:"held_cpu_pct,omitempty"`
	// MechanismPct is by how much (%) what pausing itself cost the paused
	// services' cores moves the prediction: the correction taken off
	// (overhead_us) plus, with signals and cgroups, the controllers' CPU
	// per request above the baseline's, per shared core, times the
	// predicted throughput. Flagged "mechanism-cost" when it is larger
	// than the point's noise.
	MechanismPct      float64 `json:"mechanism_pct"`
	TargetBusyInPause float64 `json:"target_busy_in_pause"` // 0..1
	TargetBusyOverall float64 `json:"target_busy_overall"`  // 0..1
	// TrueOthersCPUUS is others_cpu_us in the ground-truth runs (validate
	// only): with the baseline's and the slowdown runs', it shows whether
	// the other services' cost per request moved with the load or with
	// the pauses.
	TrueOthersCPUUS *float64 `json:"true_others_cpu_us,omitempty"`
	// TrueSharedIdlePct is shared_idle_pct in the ground-truth runs.
	TrueSharedIdlePct *float64 `json:"true_shared_idle_pct,omitempty"`
	// DelayMeasuredBy names the resource Point.DelayMeasuredUS was read
	// on: the held cores or the frozen services (cores and cgroup
	// methods), or with signals the busiest paused service (dedicated
	// placement) or the shared cores (the median service).
	// PausePerRequestUS has each paused service's with signals.
	DelayMeasuredBy   string             `json:"delay_measured_by,omitempty"`
	PausePerRequestUS map[string]float64 `json:"pause_per_request_us,omitempty"`
	// PredictedNominalRPS is the prediction with the nominal delay taken
	// off every run (median), beside predicted_rps; ErrorNominalPct its
	// error (validate).
	PredictedNominalRPS float64  `json:"predicted_nominal_rps,omitempty"`
	ErrorNominalPct     *float64 `json:"error_nominal_pct,omitempty"`
	// DelayAcrossNodesUS, where the paused pods span nodes, is the part
	// of delay_measured_us that the pods of the node frozen longest
	// (AcrossNode) were frozen beyond the target's node's, per request
	// (median over the runs); PredictedNodeLocalRPS the prediction
	// without it, counting only the target's node's freezes.
	DelayAcrossNodesUS    float64 `json:"delay_across_nodes_us,omitempty"`
	AcrossNode            string  `json:"across_node,omitempty"`
	PredictedNodeLocalRPS float64 `json:"predicted_node_local_rps,omitempty"`
}

// UnmarshalJSON reads a point of any version: before version 4 its
// diagnostics were fields of the point itself, and are read into
// Diagnostics from there, so that old results load as new ones.
func (p *Point) UnmarshalJSON(data []byte) error {
	type plain Point // without this method
	if err := json.Unmarshal(data, (*plain)(p)); err != nil {
		return err
	}
	if p.Diagnostics != nil {
		return nil
	}
	d, err := flatDiagnostics[PointDiagnostics](data)
	p.Diagnostics = d
	return err
}

// flatDiagnostics reads diagnostics of type T from a point written before
// version 4, when they were fields of the point itself: nil where it had
// none.
func flatDiagnostics[T any](data []byte) (*T, error) {
	var d T
	if err := json.Unmarshal(data, &d); err != nil || reflect.ValueOf(d).IsZero() {
		return nil, err
	}
	return &d, nil
}

// Coverage is how often the points' 90% intervals held the truth: the
// mean of its runs.
type Coverage struct {
	Covered int `json:"covered"`
	Points  int `json:"points"` // points with a truth and an interval
}

// Pct is the share of points covered, % (0 for none).
func (c Coverage) Pct() float64 {
	if c.Points == 0 {
		return 0
	}
	return 100 * float64(c.Covered) / float64(c.Points)
}

// Covers reports whether p's interval holds v; ok is false where p has
// no interval.
func (p *Point) Covers(v float64) (covered, ok bool) {
	if p.Estimate == "" || p.Estimate == EstimateUnknown || p.IntervalLowRPS <= 0 && p.IntervalHighRPS <= 0 {
		return false, false
	}
	return v >= p.IntervalLowRPS && (p.IntervalHighRPS <= 0 || v <= p.IntervalHighRPS), true
}

// TrueMean is the mean of p's ground-truth runs, what its interval is
// checked against; ok is false where it has none.
func (p *Point) TrueMean() (mean float64, ok bool) {
	if len(p.TrueRuns) == 0 {
		return 0, false
	}
	for _, v := range p.TrueRuns {
		mean += v
	}
	return mean / float64(len(p.TrueRuns)), true
}

// CoversTruth reports whether p's interval holds the mean of its truth;
// ok is false where p has no truth or no interval.
func (p *Point) CoversTruth() (covered, ok bool) {
	mean, ok := p.TrueMean()
	if !ok {
		return false, false
	}
	return p.Covers(mean)
}

// CoverageOf counts how many of ps's points with a truth their interval
// covers; nil where none has both.
func CoverageOf(ps []Point) *Coverage {
	var c Coverage
	for i := range ps {
		if in, ok := ps[i].CoversTruth(); ok {
			c.Points++
			if in {
				c.Covered++
			}
		}
	}
	if c.Points == 0 {
		return nil
	}
	return &c
}

// NominalRMSE is the RMSE (%) of ps's predictions with the nominal delay
// against their truth; nil where no point has both.
func NominalRMSE(ps []Point) *float64 {
	var sq float64
	n := 0
	for _, p := range ps {
		if p.Diagnostics != nil && p.Diagnostics.ErrorNominalPct != nil {
			e := *p.Diagnostics.ErrorNominalPct
			sq += e * e
			n++
		}
	}
	if n == 0 {
		return nil
	}
	v := math.Sqrt(sq / float64(n))
	return &v
}

// countedGraph is the call graph to show: CallGraph, what was counted;
// Neighbours in results of version 1, which have no CallGraph.
func (r *Results) countedGraph() map[string][]string {
	if r.Version >= 2 || r.CallGraph != nil {
		return r.CallGraph
	}
	return r.Neighbours
}

// Infeasible reports whether the point has no prediction.
func (p *Point) Infeasible() bool {
	return p.PredictedRPS <= 0 || slices.Contains(p.Flags, FlagInfeasible)
}

// Median returns the median of xs, or 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// SpreadPct returns (max-min)/median*100, the spread of repeated runs; 0 for
// fewer than two values or a zero median.
func SpreadPct(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := Median(xs)
	if m == 0 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / math.Abs(m) * 100
}

// WriteJSON writes r to path as indented JSON, atomically: readers see the
// old file or the new one, never half of one. Nil lists are written as []
// and non-finite numbers, which JSON cannot hold, as 0 with a warning, so
// that an experiment's results are never lost to one bad value. A zero
// Version is written as the current one.
func WriteJSON(path string, r *Results) error {
	c := r.clone()
	if c.Version == 0 {
		c.Version = Version
	}
	fixNonFinite(reflect.ValueOf(c).Elem(), "", &c.Warnings)
	return writeJSON(path, c)
}

// ReadJSON reads results written by WriteJSON.
func ReadJSON(path string) (*Results, error) {
	var r Results
	if err := readJSON(path, &r); err != nil {
		return nil, err
	}
	switch {
	case r.Version == 0:
		return nil, fmt.Errorf("%s: not a slowpoke results file (no version)", path)
	case r.Version > Version:
		return nil, newerVersion(path, r.Version)
	}
	return &r, nil
}

// writeJSON writes v to path as indented JSON ending in a newline,
// atomically (atomicfile.WriteFunc).
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	return atomicfile.WriteFunc(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// readJSON reads path into v; a decoding error names the file.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func newerVersion(path string, v int) error {
	return fmt.Errorf("%s: results version %d is newer than this slowpoke understands (%d)", path, v, Version)
}

// clone deep-copies everything WriteJSON may change and turns nil lists into
// empty ones, so the file has [] rather than null and the caller's data is
// left alone.
func (r *Results) clone() *Results {
	c := *r
	c.Settings.Reductions = cloneList(r.Settings.Reductions)
	c.Settings.LoadCPUs = cloneList(r.Settings.LoadCPUs)
	c.Settings.Placement = cloneMap(r.Settings.Placement)
	c.Baseline.Runs = cloneList(r.Baseline.Runs)
	c.Neighbours = cloneMap(r.Neighbours)
	c.RMSEPct = clonePtr(r.RMSEPct)
	c.MaxAbsErrorPct = clonePtr(r.MaxAbsErrorPct)
	c.RawRMSEPct = clonePtr(r.RawRMSEPct)
	c.NominalRMSEPct = clonePtr(r.NominalRMSEPct)
	c.ArmedCostPct, c.ArmedNoisePct = clonePtr(r.ArmedCostPct), clonePtr(r.ArmedNoisePct)
	if r.DeployedBaseline != nil {
		db := *r.DeployedBaseline
		db.Runs = cloneList(db.Runs)
		if db.CPU != nil {
			u := *db.CPU
			u.ServicesUS = maps.Clone(u.ServicesUS)
			db.CPU = &u
		}
		c.DeployedBaseline = &db
	}
	if r.Coverage != nil {
		cv := *r.Coverage
		c.Coverage = &cv
	}
	c.RawMaxAbsErrorPct = clonePtr(r.RawMaxAbsErrorPct)
	if r.Plateau != nil {
		pl := *r.Plateau
		pl.Shared = slices.Clone(pl.Shared)
		c.Plateau = &pl
	}
	c.Warnings = slices.Clone(r.Warnings)
	c.Points = cloneList(r.Points)
	for i := range c.Points {
		p := &c.Points[i]
		p.SlowdownRuns = cloneList(p.SlowdownRuns)
		p.PredictedRuns = cloneList(p.PredictedRuns)
		p.Flags = cloneList(p.Flags)
		p.TrueRuns = slices.Clone(p.TrueRuns)
		p.TrueRPS = clonePtr(p.TrueRPS)
		p.ErrorPct = clonePtr(p.ErrorPct)
		p.RawErrorPct = clonePtr(p.RawErrorPct)
		if p.Diagnostics != nil {
			d := *p.Diagnostics
			d.TrueOthersCPUUS = clonePtr(d.TrueOthersCPUUS)
			d.TrueSharedIdlePct = clonePtr(d.TrueSharedIdlePct)
			d.ErrorNominalPct = clonePtr(d.ErrorNominalPct)
			d.PausePerRequestUS = maps.Clone(d.PausePerRequestUS)
			p.Diagnostics = &d
		}
	}
	return &c
}

func cloneList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return slices.Clone(s)
}

func cloneMap[T any](m map[string][]T) map[string][]T {
	c := make(map[string][]T, len(m))
	for k, v := range m {
		c[k] = cloneList(v)
	}
	return c
}

func clonePtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// fixNonFinite zeroes NaN and ±Inf floats under v, noting each by its JSON
// path in warnings. It only descends into what clone copied.
func fixNonFinite(v reflect.Value, path string, warnings *[]string) {
	switch v.Kind() {
	case reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			*warnings = append(*warnings, fmt.Sprintf("non-finite %s (%v) written as 0", path, f))
			v.SetFloat(0)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			fixNonFinite(v.Elem(), path, warnings)
		}
	case reflect.Slice:
		for i := range v.Len() {
			fixNonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i), warnings)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if path != "" {
				name = path + "." + name
			}
			fixNonFinite(v.Field(i), name, warnings)
		}
	}
}

// sortedPoints returns the points ordered by reduction.
func sortedPoints(r *Results) []Point {
	ps := slices.Clone(r.Points)
	slices.SortStableFunc(ps, func(a, b Point) int {
		return cmp.Compare(a.ReductionPct, b.ReductionPct)
	})
	return ps
}

// PerRequest says whether the target's calls went uncounted, so that C1 is
// 1 and U1US (and every µs of a reduction) is per end-to-end request.
// Results written before triggers existed counted calls.
func (r *Results) PerRequest() bool { return r.Trigger != "" && !r.CallsCounted }

// Tuning is what a benchmark changed in the method to measure what a part
// of it buys (the switches of the same names of slowpoke bench accuracy;
// false or 0 when not set).
type Tuning struct {
	GraphRounds          bool    `json:"graph_rounds,omitempty"`
	Uncoordinated        bool    `json:"uncoordinated,omitempty"`
	NoColocatedExtension bool    `json:"no_colocated_extension,omitempty"`
	NoPeerExtension      bool    `json:"no_peer_extension,omitempty"`
	OverheadCorrection   bool    `json:"overhead_correction,omitempty"`
	NoGrowthCorrection   bool    `json:"no_growth_correction,omitempty"`
	NoIdleCorrection     bool    `json:"no_idle_correction,omitempty"`
	ShortPausesOnly      bool    `json:"short_pauses_only,omitempty"`
	NominalDelay         bool    `json:"nominal_delay,omitempty"`
	NoStarvedRepair      bool    `json:"no_starved_repair,omitempty"`
	NoCapacityRun        bool    `json:"no_capacity_run,omitempty"`
	ScreenAll            bool    `json:"screen_all,omitempty"`
	LongPauseCapMS       float64 `json:"long_pause_cap_ms,omitempty"`
	OpenLoopRate         float64 `json:"open_loop_rate,omitempty"`
}
