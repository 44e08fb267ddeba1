package wire

import "time"

// Payloads of the control messages. All durations are nanoseconds.

// Neighbour is another controller this one forwards rounds to.
type Neighbour struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// Configure sets the slowdown parameters (TConfigure). It takes effect at the
// next TStart; configuring while active is refused. Check says whether it
// is well formed.
type Configure struct {
	Epoch  uint64 `json:"epoch"`  // identifies one slowdown run; rounds of other epochs are ignored
	Target bool   `json:"target"` // this service is the virtually sped-up target
	Batch  int    `json:"batch"`  // target: start a round every Batch calls
	// CPUPerCallNS, on the target, counts its calls from its CPU time
	// instead of its instrumentation: every CPUPerCallNS of CPU that its
	// processes use is one call, so rounds start every Batch×CPUPerCallNS
	// of CPU. For targets in any language, without slowpoke's wrappers.
	// 0: rounds follow the instrumentation's call counts.
	CPUPerCallNS    int64 `json:"cpu_per_call_ns,omitempty"`
	PausePerRoundNS int64 `json:"pause_per_round_ns"` // non-target: pause this long per round
	// Pause is how the services other than the target are paused, and
	// what that method needs.
	Pause Pause `json:"pause"`
}

// Pool sets the service's admission limit and good-call threshold (TPool),
// passed on to its instrumentation at once and to instrumentation that
// connects later. It works whether or not a slowdown is active.
type Pool struct {
	// Limit is the most calls the service admits at a time, the rest
	// waiting first in first out; 0 removes the limit.
	Limit int64 `json:"limit"`
	// ThresholdNS: a call ending within this long of its admission counts
	// as good (Stats.Good); 0 counts none.
	ThresholdNS int64 `json:"threshold_ns"`
}

// Latency starts or ends a latency what-if in the service's
// instrumentation (TLatency), at once and for instrumentation that
// connects later.
type Latency struct {
	// Store is the delay store file (a shared-memory file the
	// orchestrator made, absolute path); empty ends the what-if.
	Store string `json:"store"`
	// Target: this service is the one virtually sped up, by DelayNS per
	// call.
	Target  bool  `json:"target,omitempty"`
	DelayNS int64 `json:"delay_ns,omitempty"`
}

// MaxPoolThreshold bounds Pool.ThresholdNS.
const MaxPoolThreshold = int64(time.Hour)

// Round tells a controller to pause for Count rounds (TRound). Sent by the
// target's controller and forwarded once by each controller that sees it.
type Round struct {
	Epoch      uint64 `json:"epoch"`
	Round      uint64 `json:"round"`
	Count      int    `json:"count"` // rounds coalesced into this one (>= 1)
	Origin     string `json:"origin"`
	Via        string `json:"via"`
	Hops       int    `json:"hops"`
	SentUnixNS int64  `json:"sent_unix_ns"` // when the origin triggered it
}

// RoundRecord is what a controller remembers of one round.
type RoundRecord struct {
	Round       uint64 `json:"round"`
	Hops        int    `json:"hops"`
	DelayNS     int64  `json:"delay_ns"` // receipt minus trigger
	RequestedNS int64  `json:"requested_ns"`
}

// Stats is the reply to TStats: cumulative counters since the controller
// started (instrumentation counts) or since the last TReset (round and pause counts).
type Stats struct {
	Service        string            `json:"service"`
	PID            int               `json:"pid"`
	AgentConnected bool              `json:"agent_connected"`
	Calls          uint64            `json:"calls"`
	InFlight       int64             `json:"inflight"`
	Endpoints      map[string]uint64 `json:"endpoints"`
	Downstream     map[string]uint64 `json:"downstream"`
	// Pool figures of the instrumentation, cumulative (see Pool): calls
	// ended, those ended within the threshold, the number of calls in
	// flight integrated over time (its rate is the mean number in flight),
	// the sum of time spent queued for admission; and the current limit,
	// threshold and queue length.
	Done        uint64 `json:"done"`
	Good        uint64 `json:"good"`
	BusyNS      int64  `json:"busy_ns"`
	WaitNS      int64  `json:"wait_ns"`
	Limit       int64  `json:"limit"`
	ThresholdNS int64  `json:"threshold_ns"`
	Queued      int64  `json:"queued"`
	// PoolAtUnixNS is when the instrumentation read these figures (the
	// latest of its processes): time samples by it, not by TakenUnixNS,
	// which also counts the report's way to the controller.
	PoolAtUnixNS int64 `json:"pool_at_unix_ns"`
	CPUNS        int64 `json:"cpu_ns"` // CPU time of the service's process group
	// ControllerCPUNS is the controller's own CPU time since it started;
	// ControllerCPUStoppedNS the part of it spent while its service was
	// stopped, since the last TReset. The rest is what rounds cost the
	// cores the controller shares with services.
	ControllerCPUNS        int64 `json:"controller_cpu_ns"`
	ControllerCPUStoppedNS int64 `json:"controller_cpu_stopped_ns"`
	// TakenUnixNS is when the pause counters were read: what they count
	// between two snapshots is scaled to a measurement window by it.
	TakenUnixNS int64 `json:"taken_unix_ns"`

	Active          bool   `json:"active"`
	Target          bool   `json:"target"`
	Epoch           uint64 `json:"epoch"`
	Batch           int    `json:"batch"`
	PausePerRoundNS int64  `json:"pause_per_round_ns"`
	MaxPauseNS      int64  `json:"max_pause_ns"`

	RoundsStarted   uint64 `json:"rounds_started"`   // target: rounds triggered
	RoundsReceived  uint64 `json:"rounds_received"`  // new rounds received (coalesced rounds counted each)
	RoundsDuplicate uint64 `json:"rounds_duplicate"` // already seen, dropped
	RoundsLate      uint64 `json:"rounds_late"`      // received after the lead had passed: stopped late
	RoundsStale     uint64 `json:"rounds_stale"`     // other epoch or not active
	RoundsForwarded uint64 `json:"rounds_forwarded"` // messages sent to neighbours
	ForwardErrors   uint64 `json:"forward_errors"`   // neighbour unreachable or send failed
	AuthFailures    uint64 `json:"auth_failures"`    // control connections dropped for a bad frame
	// ControlRefused counts control connections closed at once because
	// maxUnauthenticated were already waiting to authenticate;
	// HandshakeTimeouts those closed for sending no valid frame within the
	// handshake deadline.
	ControlRefused    uint64 `json:"control_refused,omitempty"`
	HandshakeTimeouts uint64 `json:"handshake_timeouts,omitempty"`

	Pauses           uint64 `json:"pauses"` // stop/continue cycles
	PauseRequestedNS int64  `json:"pause_requested_ns"`
	PauseActualNS    int64  `json:"pause_actual_ns"`
	PauseClippedNS   int64  `json:"pause_clipped_ns"`  // dropped to honour the hard cap
	PauseMaxNS       int64  `json:"pause_max_ns"`      // longest single stop
	PauseExtendedNS  int64  `json:"pause_extended_ns"` // added for co-located CPU use during stops
	// PauseHeldCPUNS is the CPU time the holding threads got while they
	// held cores (method "cores"; on the target's controller, which holds
	// them, as for every Pause field with that method), summed over holds
	// and averaged over the cores. Below PauseActualNS, something else ran
	// on a held core.
	PauseHeldCPUNS int64 `json:"pause_held_cpu_ns,omitempty"`
	// StopLateMeanNS is how late, on average, stops that were due at a
	// given time (a round's trigger plus the lead) started: services that
	// share cores are stopped together only as far as their stops overlap.
	StopLateMeanNS int64  `json:"stop_late_mean_ns"`
	StopsDue       uint64 `json:"stops_due"` // stops that had a due time: what StopLateMeanNS averages over

	DelayMeanNS int64 `json:"delay_mean_ns"` // trigger-to-receipt, mean over received rounds
	DelayMaxNS  int64 `json:"delay_max_ns"`
	HopsMax     int   `json:"hops_max"`

	// Target only: CPU time the target used during the pauses it triggered,
	// and the length of those pause windows, to detect a starved target.
	PauseBusyNS   int64 `json:"pause_busy_ns"`
	PauseWindowNS int64 `json:"pause_window_ns"`

	Recent []RoundRecord `json:"recent,omitempty"` // last rounds, newest last

	// NodeSkews, on the target's controller in a node agent whose run
	// spans nodes, is how far each other node's freezes started and ended
	// from this node's, over every round since the agent started.
	NodeSkews []NodeSkew `json:"node_skews,omitempty"`
}

// NodeSkew is one other node's skew over rounds (Stats.NodeSkews): the
// absolute differences between when it and the target's node froze (and
// thawed) their pods for the same round, and signed ones.
type NodeSkew struct {
	Node       string `json:"node"`
	Rounds     int    `json:"rounds"`
	Missing    int    `json:"missing,omitempty"`  // rounds it did not report
	Capped     int    `json:"capped,omitempty"`   // freezes its own cap ended
	Timed      int    `json:"timed,omitempty"`    // freezes its own timer ended at the length asked
	Refrozen   int    `json:"refrozen,omitempty"` // rounds it froze again, a lengthening having come after its timer thawed
	StartP50NS int64  `json:"start_p50_ns"`
	StartP99NS int64  `json:"start_p99_ns"`
	StartMaxNS int64  `json:"start_max_ns"`
	EndP50NS   int64  `json:"end_p50_ns"`
	EndP99NS   int64  `json:"end_p99_ns"`
	EndMaxNS   int64  `json:"end_max_ns"`
	// Signed, per round: the medians of when it froze (thawed) less when
	// the target's node did, and how much longer its freeze lasted than
	// the target's node's (negative: shorter), its 1st, 50th and 99th
	// percentiles. LongerP50NS is the pause it got beyond what the
	// target's node got, at the median.
	LateStartP50NS int64 `json:"late_start_p50_ns,omitempty"`
	LateEndP50NS   int64 `json:"late_end_p50_ns,omitempty"`
	LongerP1NS     int64 `json:"longer_p1_ns,omitempty"`
	LongerP50NS    int64 `json:"longer_p50_ns,omitempty"`
	LongerP99NS    int64 `json:"longer_p99_ns,omitempty"`
	// LongerSumNS is how much longer its freezes lasted than the target's
	// node's, summed over every round since the agent started, updated
	// as each round's thaws are known (so two snapshots' difference is
	// what a window's rounds added).
	LongerSumNS int64 `json:"longer_sum_ns,omitempty"`
	// DeliverStart and DeliverEnd are the freeze and the thaw frames'
	// way from the target's agent to this node's, sent to read, 50th and
	// 99th percentiles (the thaw's over the rounds its frame, not the
	// node's own timer, thawed); the rest of a skew is the two agents'
	// own work around the frame. Across clocks that differ, they
	// include the offset.
	DeliverStartP50NS int64 `json:"deliver_start_p50_ns,omitempty"`
	DeliverStartP99NS int64 `json:"deliver_start_p99_ns,omitempty"`
	DeliverEndP50NS   int64 `json:"deliver_end_p50_ns,omitempty"`
	DeliverEndP99NS   int64 `json:"deliver_end_p99_ns,omitempty"`
	// Lost says why the target's agent lost this node's agent during
	// the slowdown under way ("": it did not); its pods thaw within
	// their cap there.
	Lost string `json:"lost,omitempty"`
}
