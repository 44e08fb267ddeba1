package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/slowpoke-dev/slowpoke/internal/atomicfile"
	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// Version is the version of the record format written by this package.
// Version 2 added Row.OtherPlacement and Summary.OtherPlacement; Load
// reads version 1 records as version 2 (upgrade). Version 3 added
// Record.Faults (records of version 2 have none). Version 4 added
// Record.Rankings (older records have none). Version 5 added
// Record.Attach (older records have none).
const Version = 5

// Record is one benchmark run.
type Record struct {
	Version   int       `json:"version"`
	Benchmark string    `json:"benchmark"` // "methods", "accuracy", "placement", "multinode", "faults", "rank", "attach"
	Date      time.Time `json:"date"`
	Machine   Machine   `json:"machine"`
	// Commit is the repository's commit the binary was built from, with
	// "-dirty" where the work tree had changes; "" where not in a
	// repository.
	Commit    string `json:"commit"`
	Command   string `json:"command"`   // as typed
	Placement string `json:"placement"` // shared or dedicated
	// Note says in a sentence what the run was for or what ran beside
	// it (--note).
	Note    string    `json:"note,omitempty"`
	Rows    []Row     `json:"rows"`
	Summary []Summary `json:"summary"`
	// Skews is, for a benchmark on Kubernetes whose pods span nodes, the
	// round skew of every other node in each configuration's runs.
	Skews []Skew `json:"skews,omitempty"`
	// Faults is, for the fault benchmark (no Rows), every trial.
	Faults []Fault `json:"faults,omitempty"`
	// Rankings is, for the rank benchmark (no Rows), every ranking run.
	Rankings []Ranking `json:"rankings,omitempty"`
	// Checks is, for the rank benchmark run with --validate, the first
	// ranking's leading services and the planted one, each against its
	// own ground truth (optional within version 4).
	Checks []RankCheck `json:"checks,omitempty"`
	// Attach is, for the attach benchmark (no Rows), the baseline and
	// every point of the demo attached to against the demo started by
	// slowpoke, pair by pair.
	Attach []AttachPoint `json:"attach,omitempty"`
}

// AttachPoint is the baseline or one point of bench attach: the same
// question asked of the demo started by a plain script and attached to,
// and of the demo started by slowpoke, in pairs run one after the other.
// There is no truth: the started demo's prediction is the reference.
type AttachPoint struct {
	Point    string    `json:"point"` // "baseline" or the reduction as --reduce gave it
	Attached []float64 `json:"attached_rps"`
	Started  []float64 `json:"started_rps"`
	// Paired are attached/started-1, %, pair by pair (a pair with an
	// infeasible or failed side is left out).
	Paired []float64 `json:"paired_diff_pct"`
	// MeanDiffPct is the mean of Paired; RatioPct the attached runs'
	// mean over the started runs' mean, -1, %.
	MeanDiffPct float64 `json:"mean_diff_pct"`
	RatioPct    float64 `json:"ratio_pct"`
	Within      bool    `json:"within_5pct"` // |RatioPct| <= 5
}

// RankCheck is one service of a ranking checked against its own
// validate: the ranking's gain at its largest reduction against the gain
// the service's ground truth measured (its work really reduced by that
// much, the service on a core of its own as the ranking placed it).
type RankCheck struct {
	Config    string `json:"config"`
	Variant   string `json:"variant"`
	Iteration int    `json:"iteration"`
	Service   string `json:"service"`
	Reduction string `json:"reduction"`
	// Place is the service's place in the ranking (1 first), among the
	// services it measured; 0 where it measured it not (ruled out by the
	// census, failed). Verdict, Stage and the gain are the ranking's.
	Place       int      `json:"place"`
	Verdict     string   `json:"verdict,omitempty"`
	Stage       string   `json:"stage,omitempty"`
	GainPct     *float64 `json:"gain_pct,omitempty"`
	GainLowPct  *float64 `json:"gain_low_pct,omitempty"`
	GainHighPct *float64 `json:"gain_high_pct,omitempty"`
	// TrueGainPct is the ground truth's throughput over validate's
	// baseline, less 1 (%); ValidateGainPct validate's own prediction
	// likewise. Absent where validate did not measure them.
	TrueGainPct     *float64 `json:"true_gain_pct,omitempty"`
	ValidateGainPct *float64 `json:"validate_gain_pct,omitempty"`
	// Error is why validate failed ("" where it did not).
	Error string `json:"error,omitempty"`
}

// Covered says whether the ranking's interval holds the true gain; false
// where either is missing.
func (c RankCheck) Covered() bool {
	return c.TrueGainPct != nil && c.GainLowPct != nil && c.GainHighPct != nil &&
		*c.GainLowPct <= *c.TrueGainPct && *c.TrueGainPct <= *c.GainHighPct
}

// CheckOf is the check of service in the ranking g, before its validate.
func CheckOf(g Ranking, service, reduction string) RankCheck {
	c := RankCheck{Config: g.Config, Variant: g.Variant, Iteration: g.Iteration, Service: service, Reduction: reduction}
	for i, e := range g.Entries {
		if e.Service == service {
			gain := e.GainPct
			c.Place, c.Verdict, c.Stage = i+1, e.Verdict, e.Stage
			c.GainPct, c.GainLowPct, c.GainHighPct = &gain, e.GainLowPct, e.GainHighPct
			break
		}
	}
	return c
}

// SetTruth records on c what validate measured at its last point: the
// ground truth's and its own prediction's gain over its baseline.
func (c *RankCheck) SetTruth(res *report.Results) {
	if res == nil || len(res.Points) == 0 || !(res.Baseline.RPS > 0) {
		return
	}
	p := res.Points[len(res.Points)-1]
	if p.TrueRPS != nil {
		t := (*p.TrueRPS/res.Baseline.RPS - 1) * 100
		c.TrueGainPct = &t
	}
	if p.PredictedRPS > 0 {
		v := (p.PredictedRPS/res.Baseline.RPS - 1) * 100
		c.ValidateGainPct = &v
	}
}

// Ranking is one run of slowpoke rank in the rank benchmark.
type Ranking struct {
	Config    string `json:"config"`
	Variant   string `json:"variant"` // e.g. census, no-census
	Iteration int    `json:"iteration"`
	// Expected is the service the configuration's bottleneck was planted
	// in ("" where none was).
	Expected string  `json:"expected,omitempty"`
	ElapsedS float64 `json:"elapsed_s"`
	// Services ranked; of them, Bounded were left out by the census,
	// Screened went through the screening (AtBaseline of them no
	// further than its first baseline, which found the other services
	// setting the throughput), Confirmed were measured in full (by
	// name).
	Services   int      `json:"services"`
	Bounded    int      `json:"bounded"`
	Screened   int      `json:"screened"`
	AtBaseline int      `json:"at_baseline,omitempty"`
	Confirmed  []string `json:"confirmed"`
	Partial    bool     `json:"partial,omitempty"`
	// Entries are the services measured (gain or no-gain), in rank order.
	Entries []RankedService `json:"entries"`
	// Error is why the run failed ("" where it did not).
	Error string `json:"error,omitempty"`
	// Drift is what the ranking's baselines showed of the machine's
	// speed moving: the screening baselines' noise and, per confirmed
	// service, its confirmation's baseline against its screening's (nil
	// where the ranking had no screening).
	Drift *report.RankDrift `json:"drift,omitempty"`
}

// RankedService is one measured service of a ranking.
type RankedService struct {
	Service     string   `json:"service"`
	Verdict     string   `json:"verdict"`
	Stage       string   `json:"stage,omitempty"`
	GainPct     float64  `json:"gain_pct"`
	GainLowPct  *float64 `json:"gain_low_pct,omitempty"`
	GainHighPct *float64 `json:"gain_high_pct,omitempty"`
}

// RankingOf is r as the rank benchmark records it.
func RankingOf(config, variant string, iteration int, expected string, r *report.Rank) Ranking {
	g := Ranking{Config: config, Variant: variant, Iteration: iteration, Expected: expected, ElapsedS: r.ElapsedS,
		Services: len(r.Entries), Partial: r.Partial, Confirmed: []string{}, Entries: []RankedService{}, Drift: r.Drift}
	var atBaseline []string
	if r.Screening != nil {
		atBaseline = r.Screening.OthersBind
	}
	for _, e := range r.Entries {
		switch {
		case e.Stage == report.StageBounded && slices.Contains(atBaseline, e.Service):
			g.AtBaseline++
			g.Screened++
		case e.Stage == report.StageBounded:
			g.Bounded++
		case e.Stage == report.StageConfirmed:
			g.Confirmed = append(g.Confirmed, e.Service)
			g.Screened++
		case e.Stage == report.StageScreened, e.Stage == report.StageFailed:
			g.Screened++
		}
		if e.Verdict == report.VerdictGain || e.Verdict == report.VerdictNoGain {
			g.Entries = append(g.Entries, RankedService{Service: e.Service, Verdict: e.Verdict, Stage: e.Stage,
				GainPct: e.GainPct, GainLowPct: e.GainLowPct, GainHighPct: e.GainHighPct})
		}
	}
	return g
}

// Gainers are the services of g whose verdict is gain, in rank order.
func (g Ranking) Gainers() []string {
	var out []string
	for _, e := range g.Entries {
		if e.Verdict == report.VerdictGain {
			out = append(out, e.Service)
		}
	}
	return out
}

// Fault is one trial of the multi-node fault benchmark: a fault struck
// while pods were frozen, and what followed.
type Fault struct {
	Fault  string `json:"fault"` // e.g. agent-killed, partition
	Trial  int    `json:"trial"`
	Frozen int    `json:"frozen_at_fault"` // pods frozen when the fault struck
	// ThawedS is how long after the fault every pod was thawed; -1 if
	// that was never seen.
	ThawedS float64 `json:"thawed_after_s"`
	BoundS  float64 `json:"lease_s"`      // the bound the trial checks (the lease, or the partition's cap)
	Within  bool    `json:"within_lease"` // thawed within it
	// RunError is the run's last line ("" where the run was killed),
	// NamesNode whether it names the node (or the pod).
	RunError  string  `json:"run_error"`
	NamesNode bool    `json:"run_error_names_node_pod"`
	Restore   string  `json:"restore"`           // what slowpoke restore said afterwards
	Restarted bool    `json:"app_pod_restarted"` // an application pod restarted (a deleted one aside)
	TrialS    float64 `json:"trial_s"`           // the trial's wall time
	// Passed: every check of the trial held (nothing left frozen, no
	// agent left, no change left to restore).
	Passed bool `json:"passed"`
}

// Skew is one other node's round skew over one configuration's run.
type Skew struct {
	Config string `json:"config"`
	report.NodeSkew
}

// SkewsOf is a run's round skews (report.Results.NodeSkews) for config.
func SkewsOf(config string, skews []report.NodeSkew) []Skew {
	var out []Skew
	for _, k := range skews {
		out = append(out, Skew{Config: config, NodeSkew: k})
	}
	return out
}

// Machine is where a record was made.
type Machine struct {
	Host   string `json:"host"`
	CPUs   int    `json:"cpus"`
	Model  string `json:"model,omitempty"` // the processor's model name
	Kernel string `json:"kernel,omitempty"`
}

// Row is one point of one variant against its truth.
type Row struct {
	Config      string  `json:"config"` // the application or synthetic configuration
	Target      string  `json:"target"`
	Variant     string  `json:"variant"`
	ReductionUS float64 `json:"reduction_us"`
	// TrueRPS is the mean of the truth's runs (what intervals are
	// checked against); 0 where there was no truth.
	TrueRPS float64 `json:"true_rps"`
	// TrueMedianRPS is the median of the truth's runs, the truth that
	// ErrorPct is against (validate's); unset in records before it was
	// kept, and where the truth has no runs.
	TrueMedianRPS   float64  `json:"true_median_rps,omitempty"`
	PredictedRPS    float64  `json:"predicted_rps"` // 0: infeasible
	ErrorPct        *float64 `json:"error_pct,omitempty"`
	NominalErrorPct *float64 `json:"nominal_error_pct,omitempty"`
	IntervalLowRPS  float64  `json:"interval_low_rps,omitempty"`
	IntervalHighRPS float64  `json:"interval_high_rps,omitempty"`
	Estimate        string   `json:"estimate,omitempty"`
	Covered         *bool    `json:"covered,omitempty"`
	DelayUsed       string   `json:"delay_used,omitempty"`
	Flags           []string `json:"flags"`
	// OtherPlacement says that the prediction is for a placement other
	// than the one its truth was measured in (bench placement's
	// slowpoke's placement against the application's own, unpinned;
	// the multinode benchmark's one-node prediction against the truth
	// of the demo spread over two nodes):
	// its error and interval are shown, but its interval answers a
	// different question and is not counted in the coverage of
	// intervals.
	OtherPlacement bool `json:"other_placement,omitempty"`
	// TrueRunCount and TrueRelSD are how many runs the truth had and
	// their standard deviation relative to their mean (0 for fewer than
	// two), for CoveredNoisy.
	TrueRunCount int     `json:"true_run_count,omitempty"`
	TrueRelSD    float64 `json:"true_rel_sd,omitempty"`
	// CoveredNoisy is Covered with the truth's own noise allowed for:
	// whether the interval, each side widened in quadrature by the 90%
	// half-width of the truth's mean, holds that mean. A 90% interval of
	// the prediction holds a truth that is itself a mean of few noisy
	// runs less often than 90% even where both are unbiased. The
	// half-width is Student's t times the truths' relative standard
	// deviation pooled over the record's rows (one row's two or three
	// runs say little of their own spread), over the square root of the
	// row's runs (Summarize sets it). Unset where the truth has fewer
	// than two runs, where Covered is, or where the record's truths give
	// fewer than two degrees of freedom.
	CoveredNoisy *bool `json:"covered_allowing_truth_noise,omitempty"`
}

// Summary is one variant's figures over a record's rows.
type Summary struct {
	Variant        string   `json:"variant"`
	Points         int      `json:"points"` // with an error
	RMSEPct        float64  `json:"rmse_pct"`
	MeanPct        float64  `json:"mean_error_pct"`
	MaxAbsPct      float64  `json:"max_abs_error_pct"`
	NominalRMSEPct *float64 `json:"nominal_rmse_pct,omitempty"`
	Covered        int      `json:"covered"`
	WithInterval   int      `json:"with_interval"`
	// OtherPlacement: the variant's rows are for another placement than
	// their truth's (Row.OtherPlacement).
	OtherPlacement bool `json:"other_placement,omitempty"`
}

// RowOf is point p of variant on config (target) as a row.
func RowOf(config, target, variant string, p report.Point) Row {
	row := Row{Config: config, Target: target, Variant: variant, ReductionUS: p.ReductionUS,
		PredictedRPS: p.PredictedRPS, ErrorPct: p.ErrorPct,
		IntervalLowRPS: p.IntervalLowRPS, IntervalHighRPS: p.IntervalHighRPS, Estimate: p.Estimate,
		DelayUsed: p.DelayUsed, Flags: slices.Clone(p.Flags)}
	if p.Diagnostics != nil {
		row.NominalErrorPct = p.Diagnostics.ErrorNominalPct
	}
	if row.Flags == nil {
		row.Flags = []string{}
	}
	if p.Infeasible() {
		row.PredictedRPS = 0
	}
	row.TrueRPS, _ = p.TrueMean()
	if p.TrueRPS != nil && len(p.TrueRuns) > 0 {
		row.TrueMedianRPS = *p.TrueRPS
	}
	if in, ok := p.CoversTruth(); ok {
		row.Covered = &in
	}
	row.TrueRunCount = len(p.TrueRuns)
	if row.TrueRunCount >= 2 && row.TrueRPS > 0 {
		row.TrueRelSD = stats.StdDev(p.TrueRuns) / row.TrueRPS
	}
	return row
}

// truthNoise is the relative standard deviation of one truth run pooled
// over rows (each against its own mean), and its degrees of freedom.
func truthNoise(rows []Row) (rel float64, dof int) {
	var ss float64
	for _, row := range rows {
		if row.TrueRunCount >= 2 {
			ss += row.TrueRelSD * row.TrueRelSD * float64(row.TrueRunCount-1)
			dof += row.TrueRunCount - 1
		}
	}
	if dof == 0 {
		return 0, 0
	}
	return math.Sqrt(ss / float64(dof)), dof
}

// coversNoisy is Row.CoveredNoisy for row, with the truths' pooled
// relative noise rel of dof degrees of freedom; ok is false where it is
// not checked.
func coversNoisy(row Row, rel float64, dof int) (covered, ok bool) {
	if row.Covered == nil || row.TrueRunCount < 2 || row.TrueRPS <= 0 || dof < 2 {
		return false, false
	}
	if *row.Covered {
		return true, true
	}
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(dof)}.Quantile(0.95) * rel / math.Sqrt(float64(row.TrueRunCount)) * row.TrueRPS
	lo := row.PredictedRPS - math.Hypot(row.PredictedRPS-row.IntervalLowRPS, half)
	if row.TrueRPS < lo {
		return false, true
	}
	if row.IntervalHighRPS > 0 && row.TrueRPS > row.PredictedRPS+math.Hypot(row.IntervalHighRPS-row.PredictedRPS, half) {
		return false, true
	}
	return true, true
}

// Summarize sets r.Summary from its rows, one per variant in the order
// they first appear, and each row's CoveredNoisy.
func (r *Record) Summarize() {
	r.Summary = nil
	rel, dof := truthNoise(r.Rows)
	for i := range r.Rows {
		r.Rows[i].CoveredNoisy = nil
		if in, ok := coversNoisy(r.Rows[i], rel, dof); ok {
			r.Rows[i].CoveredNoisy = &in
		}
	}
	index := map[string]int{}
	sq, nomSq, nomN := map[string]float64{}, map[string]float64{}, map[string]int{}
	for _, row := range r.Rows {
		i, ok := index[row.Variant]
		if !ok {
			i = len(r.Summary)
			index[row.Variant] = i
			r.Summary = append(r.Summary, Summary{Variant: row.Variant})
		}
		s := &r.Summary[i]
		s.OtherPlacement = s.OtherPlacement || row.OtherPlacement
		if row.ErrorPct != nil {
			e := *row.ErrorPct
			s.Points++
			sq[row.Variant] += e * e
			s.MeanPct += e
			s.MaxAbsPct = max(s.MaxAbsPct, math.Abs(e))
		}
		if row.NominalErrorPct != nil {
			nomSq[row.Variant] += *row.NominalErrorPct * *row.NominalErrorPct
			nomN[row.Variant]++
		}
		if row.Covered != nil {
			s.WithInterval++
			if *row.Covered {
				s.Covered++
			}
		}
	}
	for i := range r.Summary {
		s := &r.Summary[i]
		if s.Points > 0 {
			s.RMSEPct = math.Sqrt(sq[s.Variant] / float64(s.Points))
			s.MeanPct /= float64(s.Points)
		}
		if n := nomN[s.Variant]; n > 0 {
			v := math.Sqrt(nomSq[s.Variant] / float64(n))
			s.NominalRMSEPct = &v
		}
	}
}

// Stamp fills in what every record says of its run: the date and the
// commit (those of its start, from Begin), the machine, and the command
// line args (none: the Command already set stays).
func (r *Record) Stamp(start Start, args []string) {
	r.Version = Version
	r.Date, r.Commit = start.Date, start.Commit
	r.Machine = ThisMachine()
	if len(args) > 0 {
		r.Command = strings.Join(quoteArgs(args), " ")
	}
}

// Start is when a benchmark run began, and the commit of the work tree it
// began in: what its binary was built from where it was built there.
type Start struct {
	Date   time.Time
	Commit string
}

// Begin notes the start of a run in the work tree dir (the current
// directory for "").
func Begin(dir string) Start {
	return Start{Date: time.Now().UTC().Truncate(time.Second), Commit: commitOf(dir)}
}

// ThisMachine describes the machine this process runs on.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU()}
	m.Host, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// commitOf is dir's commit, short, with "-dirty" for a changed work tree;
// outside a work tree, the commit this binary was built from, as the go
// command stamped it ("" where it did not).
func commitOf(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return builtFrom()
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "-dirty"
	}
	return c
}

var plainArg = regexp.MustCompile(`^[A-Za-z0-9_./:=,%+@-]+$`)

// quoteArgs quotes for a shell the arguments that need it.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if plainArg.MatchString(a) {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return out
}

// fileUnsafe is a run of characters other than letters, digits, '.', '-'
// and '_' (a configuration's "/", " " or "#"): Write turns each into one
// '_', so that a record's file name needs no quoting in a shell or a
// link.
var fileUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Write writes r into dir (made if missing) as
// DATE-BENCHMARK-NAME.json, NAME the first row's configuration, and
// returns its path.
func Write(dir string, r *Record) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := r.Benchmark
	if len(r.Rows) > 0 {
		name += "-" + r.Rows[0].Config
	} else if len(r.Rankings) > 0 {
		name += "-" + r.Rankings[0].Config
	}
	name = fileUnsafe.ReplaceAllString(name, "_")
	path := filepath.Join(dir, r.Date.Format("20060102-150405")+"-"+name+".json")
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	return path, atomicfile.WriteFunc(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}

// Load reads every record in dir, oldest first; a missing dir is none.
func Load(dir string) ([]Record, error) {
	var out []Record
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == dir {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() || filepath.Ext(path) != ".json" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var r Record
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if r.Version == 0 || r.Version > Version {
			return fmt.Errorf("%s: record version %d, want 1..%d", path, r.Version, Version)
		}
		r.upgrade()
		out = append(out, r)
		return nil
	})
	slices.SortStableFunc(out, func(a, b Record) int { return a.Date.Compare(b.Date) })
	return out, err
}

// upgrade brings a record of an older version to this one. Version 1
// did not mark predictions for another placement than their truth's: in
// bench placement, the variant "shared" (slowpoke's placement) always was
// one, judged against the unpinned truth.
func (r *Record) upgrade() {
	if r.Version >= Version {
		return
	}
	// Version 2 to 3 adds only Faults, 3 to 4 only Rankings and 4 to 5
	// only Attach, which older records lack.
	if r.Version < 2 && r.Benchmark == "placement" {
		for i := range r.Rows {
			if r.Rows[i].Variant == "shared" {
				r.Rows[i].OtherPlacement = true
			}
		}
		for i := range r.Summary {
			if r.Summary[i].Variant == "shared" {
				r.Summary[i].OtherPlacement = true
			}
		}
	}
	r.Version = Version
}

// Coverage is how many intervals held the truth over recs' points:
// those whose prediction is for the placement its truth was measured in
// (own), and those for another placement (other).
func Coverage(recs []Record) (own, other Count) {
	for _, r := range recs {
		for _, s := range r.Summary {
			c := &own
			if s.OtherPlacement {
				c = &other
			}
			c.Covered += s.Covered
			c.With += s.WithInterval
		}
	}
	return own, other
}

// CoverageNoisy is Coverage's own for the rows that can allow for
// their truth's own noise (Row.CoveredNoisy): how many held it with that
// allowance, and how many held it without (Row.Covered), of the same
// rows, and the date of the earliest record with such a row.
func CoverageNoisy(recs []Record) (noisy, strict Count, since time.Time) {
	for _, r := range recs {
		for _, row := range r.Rows {
			if row.OtherPlacement || row.CoveredNoisy == nil || row.Covered == nil {
				continue
			}
			if since.IsZero() || r.Date.Before(since) {
				since = r.Date
			}
			noisy.With++
			strict.With++
			if *row.CoveredNoisy {
				noisy.Covered++
			}
			if *row.Covered {
				strict.Covered++
			}
		}
	}
	return noisy, strict, since
}

// Count is a number of intervals that held the truth (Covered) of those
// checked (With).
type Count struct{ Covered, With int }

// builtFrom is the commit the running binary was built from, short, with
// "-dirty" for a changed work tree, from its build information.
func builtFrom() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}
