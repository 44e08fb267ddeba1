package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrInfeasible means the measured slowdown throughput is too low for the
// requested reduction: 1/t_vs - d c1/q1 <= 0, so no finite prediction exists.
var ErrInfeasible = errors.New("infeasible: the slowdown measurement is at or above the throughput the reduction alone allows")

// Predict returns t_opt = 1 / (1/tVS - d c1 / q1). tVS is in requests per
// second, d in seconds of the target's resource per call, c1 the target's
// calls per user request and q1 the target's quota.
func Predict(tVS, d, c1, q1 float64) (float64, error) {
	if err := checkInputs(d, c1, q1); err != nil {
		return 0, err
	}
	return PredictDelay(tVS, d*c1/q1)
}

// PredictDelay returns t_opt = 1 / (1/tVS - delay), where delay is the
// pause in seconds that every other service received per user request in
// the slowdown run. Predict is PredictDelay with the delay the model asks
// for, d c1 / q1; a slowdown run that measured what its pauses really
// inserted can give that instead.
func PredictDelay(tVS, delay float64) (float64, error) {
	if delay < 0 || math.IsNaN(delay) || math.IsInf(delay, 0) {
		return 0, fmt.Errorf("delay per request must be >= 0 and finite, got %v", delay)
	}
	if !(tVS > 0) || math.IsInf(tVS, 0) {
		return 0, fmt.Errorf("slowdown throughput must be positive and finite, got %v", tVS)
	}
	den := 1/tVS - delay
	if den <= 0 {
		return 0, ErrInfeasible
	}
	return 1 / den, nil
}

// WithoutOverhead returns the throughput a slowdown run would have measured
// had the rounds themselves not cost overhead seconds per user request on
// the resources the pauses slow down (the controllers' signals and
// wake-ups, which the optimized system does not have). Removing it is
// right while those resources are the bottleneck; the result is therefore
// never above what the target's own demand of floor seconds per request
// (its resource per request divided by its quota) allows, nor below tVS.
func WithoutOverhead(tVS, overhead, floor float64) float64 {
	if !(tVS > 0) || math.IsInf(tVS, 0) || !(overhead > 0) {
		return tVS
	}
	inv := max(1/tVS-overhead, floor)
	if inv <= 0 || inv >= 1/tVS {
		return tVS
	}
	return 1 / inv
}

// PredictCorrected is PredictDelay with the rounds' own overhead (seconds
// per request, see WithoutOverhead) taken off tVS first, its removal capped
// after the delay comes off: the prediction never exceeds what the
// optimized target's own demand allows, floor seconds per request (its
// resource per request after the reduction, over its quota), nor falls
// below the prediction without the correction. Capping tVS by the
// original target's demand before the delay instead (WithoutOverhead)
// lets a delay larger than the reduction carry the prediction past the
// optimized target's capacity. A floor of 0 or less caps nothing; a
// correction that would leave no time per request is not made.
func PredictCorrected(tVS, overhead, delay, floor float64) (float64, error) {
	plain, err := PredictDelay(tVS, delay)
	if err != nil || !(overhead > 0) || math.IsInf(overhead, 0) {
		return plain, err
	}
	inv := 1/tVS - delay
	corrected := max(inv-overhead, floor)
	if corrected <= 0 {
		// More to take off than the run leaves (a cap of 0 or less: a
		// cut past the target's measured cost): the correction does
		// not hold, and the prediction stands without it.
		return plain, nil
	}
	return 1 / min(inv, corrected), nil
}

// SlowdownFor is the inverse of Predict: the throughput a slowdown run should
// measure if the optimized system runs at tOpt. Useful for checks and tests.
func SlowdownFor(tOpt, d, c1, q1 float64) (float64, error) {
	if err := checkInputs(d, c1, q1); err != nil {
		return 0, err
	}
	if !(tOpt > 0) || math.IsInf(tOpt, 0) {
		return 0, fmt.Errorf("optimized throughput must be positive and finite, got %v", tOpt)
	}
	return 1 / (1/tOpt + d*c1/q1), nil
}

// PausePerRound is the pause every non-target service takes once per round
// of batch target calls: batch * d / q1.
func PausePerRound(batch int, d time.Duration, q1 float64) time.Duration {
	if batch <= 0 || d <= 0 || !(q1 > 0) {
		return 0
	}
	return time.Duration(float64(batch) * float64(d) / q1)
}

// PausePerCall is the pause per call that service i would need if it paused
// on its own: d c1 / (q1 ci). It shows why simultaneous rounds work: over B
// target calls service i sees B ci / c1 calls, so its pause per round is
// B d / q1 whatever ci is.
func PausePerCall(d time.Duration, c1, q1, ci float64) time.Duration {
	if d <= 0 || !(c1 > 0) || !(q1 > 0) || !(ci > 0) {
		return 0
	}
	return time.Duration(float64(d) * c1 / (q1 * ci))
}

func checkInputs(d, c1, q1 float64) error {
	switch {
	case d < 0 || math.IsNaN(d) || math.IsInf(d, 0):
		return fmt.Errorf("reduction d must be >= 0 and finite, got %v", d)
	case !(c1 > 0) || math.IsInf(c1, 0):
		return fmt.Errorf("target calls per request c1 must be positive and finite, got %v", c1)
	case !(q1 > 0) || math.IsInf(q1, 0):
		return fmt.Errorf("target quota q1 must be positive and finite, got %v", q1)
	}
	return nil
}

// Reduction is a what-if optimization of the target, as the user wrote it.
// Resolve turns it into d, the per-call reduction of the target's cost.
type Reduction struct {
	Kind  Kind
	Value float64 // percent (0..100), seconds, factor, or replicas m (with From n)
	From  float64 // scaling only: current replicas n
	Text  string  // as given
}

// Kind says how a Reduction is expressed.
type Kind int

const (
	Percent  Kind = iota // d = Value/100 * u1
	Absolute             // d = Value seconds
	Factor               // "2x": capacity factor f, d = u1 (1 - 1/f)
	Scale                // "1->2": replicas n to m, d = u1 (1 - n/m)
)

// Resolve returns d in seconds given u1, the target's measured cost per call
// in seconds.
func (r Reduction) Resolve(u1 float64) (float64, error) {
	if r.Kind != Absolute && !(u1 > 0) {
		return 0, fmt.Errorf("%s: needs the target's cost per call, which was not measured (u1 = %v)", r.Text, u1)
	}
	var d float64
	switch r.Kind {
	case Percent:
		d = r.Value / 100 * u1
	case Absolute:
		d = r.Value
	case Factor:
		d = u1 * (1 - 1/r.Value)
	case Scale:
		d = u1 * (1 - r.From/r.Value)
	default:
		return 0, fmt.Errorf("unknown reduction kind %d", r.Kind)
	}
	if r.Kind != Absolute && d >= u1 {
		return 0, fmt.Errorf("%s: would remove all of the target's cost", r.Text)
	}
	return d, nil
}

// PercentOf returns d as a percentage of u1 (0 when u1 is unknown).
func PercentOf(d, u1 float64) float64 {
	if !(u1 > 0) {
		return 0
	}
	return d / u1 * 100
}

// ParseReductions parses a comma-separated list such as "0,10,...,90%",
// "10%,20%", "300us,1ms", "2x" or "1->2". A "..." between two numbers
// extends the arithmetic sequence given by the two numbers before it. A
// unit on the last element applies to bare numbers before it.
func ParseReductions(s string) ([]Reduction, error) {
	raw := strings.Split(s, ",")
	for i := range raw {
		raw[i] = strings.TrimSpace(raw[i])
	}
	if len(raw) == 0 || (len(raw) == 1 && raw[0] == "") {
		return nil, errors.New("empty reduction list")
	}
	unit := trailingUnit(raw[len(raw)-1])
	var out []Reduction
	for i, item := range raw {
		if item == "..." {
			if len(out) < 2 || i+1 >= len(raw) {
				return nil, errors.New(`"..." needs two values before it and one after it, as in 0,10,...,90%`)
			}
			a, b := out[len(out)-2], out[len(out)-1]
			if a.Kind != b.Kind || (a.Kind != Percent && a.Kind != Absolute) {
				return nil, errors.New(`"..." works only between percentages or absolute times`)
			}
			end, err := parseOne(raw[i+1], unit)
			if err != nil {
				return nil, err
			}
			step := b.Value - a.Value
			if step <= 0 || end.Kind != a.Kind || end.Value < b.Value {
				return nil, fmt.Errorf("cannot extend %s, %s to %s: need an increasing sequence of one kind", a.Text, b.Text, end.Text)
			}
			if n := (end.Value - b.Value) / step; n > 1000 {
				return nil, fmt.Errorf("sequence up to %s has too many points", end.Text)
			}
			for v := b.Value + step; v < end.Value-step*1e-9; v += step {
				out = append(out, Reduction{Kind: a.Kind, Value: v, Text: formatValue(a.Kind, v)})
			}
			continue
		}
		r, err := parseOne(item, unit)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func trailingUnit(s string) string {
	for _, u := range []string{"%", "us", "µs", "ms", "s"} {
		if strings.HasSuffix(s, u) && !strings.HasSuffix(s, "x") {
			return u
		}
	}
	return ""
}

func parseOne(s, unit string) (Reduction, error) {
	if s == "" {
		return Reduction{}, errors.New("empty element in reduction list")
	}
	if n, m, ok := strings.Cut(s, "->"); ok {
		from, err1 := parseFinite(strings.TrimSpace(n))
		to, err2 := parseFinite(strings.TrimSpace(m))
		if err1 != nil || err2 != nil || from <= 0 || to <= from {
			return Reduction{}, fmt.Errorf("%q: scaling is written n->m with 0 < n < m replicas or cores", s)
		}
		return Reduction{Kind: Scale, Value: to, From: from, Text: s}, nil
	}
	if f, ok := strings.CutSuffix(s, "x"); ok {
		v, err := parseFinite(f)
		if err != nil || v <= 1 {
			return Reduction{}, fmt.Errorf("%q: a capacity factor is written like 2x and must be > 1", s)
		}
		return Reduction{Kind: Factor, Value: v, Text: s}, nil
	}
	if _, err := parseFinite(s); err == nil {
		if unit == "" {
			return Reduction{}, fmt.Errorf("%q has no unit: write 10%% for a share of the target's cost or 300us for an absolute time", s)
		}
		s += unit
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := parseFinite(p)
		if err != nil {
			return Reduction{}, fmt.Errorf("%q: not a number followed by %%; separate values with commas, as in 10%%,20%%", s)
		}
		if v < 0 || v >= 100 {
			return Reduction{}, fmt.Errorf("%q: a percentage must be in [0, 100)", s)
		}
		return Reduction{Kind: Percent, Value: v, Text: s}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		hint := ""
		if strings.HasSuffix(s, "-") {
			hint = " (quote a scaling such as '1->2': unquoted, the shell reads > as a redirection)"
		}
		return Reduction{}, fmt.Errorf("%q: not a percentage (10%%), time (300us), factor (2x) or scaling (1->2)%s", s, hint)
	}
	return Reduction{Kind: Absolute, Value: d.Seconds(), Text: s}, nil
}

// parseFinite parses a decimal number, refusing NaN and infinities, which
// strconv.ParseFloat accepts.
func parseFinite(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = fmt.Errorf("%q is not a finite number", s)
	}
	return v, err
}

func formatValue(k Kind, v float64) string {
	if k == Percent {
		return strconv.FormatFloat(v, 'g', 6, 64) + "%"
	}
	return time.Duration(v * float64(time.Second)).String()
}

// DeployedBound is the most throughput a placement could reach with the
// target's CPU per request cut by cut seconds, from what it measured:
// tput requests per second, machine seconds of its cores' busy time per
// request (everything on them), target seconds of the target's CPU per
// request, on cores cores. It is the lesser of two limits: the cores'
// capacity with the work that much smaller, cores/(machine-cut), and tput
// scaled by the target's own time, tput*target/(target-cut), which no
// resource's time per request can shrink by more than (where the target
// binds, its time per request is at least its CPU). +Inf where neither
// limits (the cut takes all of the target's CPU and the cores' capacity
// is not known); 0 for inputs that say nothing.
//
// It assumes that every busy moment of the cores competes with the
// application (work on them that does not makes machine too large and the
// bound too low), and that the target binds, if it does, as a whole: a
// single thread of it binding on less than its total CPU can gain more
// from the same cut.
func DeployedBound(tput, machine, target, cut float64, cores int) float64 {
	if !(tput > 0) || !(target > 0) || !(cut >= 0) || math.IsInf(tput, 0) {
		return 0
	}
	cut = min(cut, target)
	bound := math.Inf(1)
	if cut < target {
		bound = tput * target / (target - cut)
	}
	if cores > 0 && machine > cut {
		bound = min(bound, float64(cores)/(machine-cut))
	}
	return max(bound, tput)
}

// GainBound is the largest throughput gain, as a fraction of the
// baseline's (0.25 for +25%), that cutting a share p (0..1) of a
// service's CPU per call can give in the model, where the service kept
// its cores at most busy (0..1) of the time at the baseline's throughput
// t: where the service did not bind, its cut gains nothing; where it did
// (busy 1), its capacity grows by 1/(1-p) and no other resource's, so
// t_opt <= t/(1 - p·busy). The model's virtual speedup agrees: it takes
// d·c1/q1 = p·u1·c1/q1 = p·busy/t off 1/t_vs with t_vs <= t. A measured
// prediction can still pass it, by noise (t_vs above t) or by the
// corrections slowpoke makes for what the pauses cost. busy above 1
// counts as 1. +Inf where p and busy are both 1; 0 for inputs that say
// nothing (p or busy not positive).
func GainBound(p, busy float64) float64 {
	if !(p > 0) || !(busy > 0) {
		return 0
	}
	left := 1 - min(1, p)*min(1, busy)
	if left <= 0 {
		return math.Inf(1)
	}
	return 1/left - 1
}

// BusyBound is the most busy (0..1) a service's cores can be, in any
// placement of an application on cores cores, where the service spends
// share (0..1) of the application's CPU per request and has at least one
// core: the application's throughput is at most cores/D for D its CPU per
// request, so the service uses at most cores·share of a core. It assumes
// that the CPU per request does not fall as throughput rises; a caller
// allows for that with a margin of its own.
func BusyBound(share float64, cores int) float64 {
	if !(share > 0) || cores <= 0 {
		return 0
	}
	return min(1, float64(cores)*share)
}
