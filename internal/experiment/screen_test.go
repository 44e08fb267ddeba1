package experiment

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/report"
	"github.com/slowpoke-dev/slowpoke/model"
)

// screenFake screens the fake app's target t at 50% with the noise groups
// given.
func screenFake(t *testing.T, reduce string, groups [][]float64) (*Screening, *report.Results, error) {
	t.Helper()
	app := newFakeApp(t, sharedPlacement, threeServices()...)
	reds, err := model.ParseReductions(reduce)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range reds {
		texts = append(texts, r.Text)
	}
	// Windows of 400 ms, not the fake's 100: a slowdown run that
	// completed no request in 100 ms of a loaded unit tier had no
	// prediction to give an interval.
	r, err := New(app, Options{Target: "t", Reductions: reds, ReductionsText: texts, Repetitions: 3, MaxRepetitions: 6, NoiseGroups: groups, Duration: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.Screen(ctx, 0)
}

// Screening is a baseline, one slowdown run and a second baseline,
// whatever the repetitions asked; other services' baseline pairs that
// agree narrow the interval that the prior noise alone would give.
func TestScreen(t *testing.T) {
	sc, res, err := screenFake(t, "50%", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Baseline.Runs) != 2 || len(res.Points) != 1 || len(res.Points[0].SlowdownRuns) != 1 {
		t.Fatalf("%d baseline runs, %d points: want 2 and 1 with one slowdown run; %+v", len(res.Baseline.Runs), len(res.Points), res.Points)
	}
	p := res.Points[0]
	if p.Estimate != report.EstimateValue || p.IntervalHighRPS <= p.IntervalLowRPS {
		t.Fatalf("point without an interval: %+v", p)
	}
	if !(res.Baseline.HalfWidthPct > 0) {
		t.Errorf("baseline without a half-width: %+v", res.Baseline)
	}
	if res.Settings.Repetitions != 1 || res.Settings.MaxRepetitions != 1 {
		t.Errorf("settings say %d/%d repetitions, want 1/1", res.Settings.Repetitions, res.Settings.MaxRepetitions)
	}
	var quiet [][]float64
	for range 20 {
		quiet = append(quiet, []float64{1000, 1001})
	}
	// The same runs, judged with and without the quiet groups: the fake's
	// runs take real time, so two screenings of it differ on a busy
	// machine, and only the same runs make the comparison exact.
	samples := sc.points[0].samples
	w := sc.r.noiseHalfWidth(&p, samples)
	sc.r.opts.NoiseGroups = quiet
	nw := sc.r.noiseHalfWidth(&p, samples)
	sc.r.opts.NoiseGroups = nil
	if !(w > 0) || nw >= w {
		t.Errorf("quiet noise groups gave a half-width of %.1f req/s, not below %.1f without them", nw, w)
	}
	if _, narrow, err := screenFake(t, "50%", quiet); err != nil || len(narrow.Points) != 1 {
		t.Fatalf("screening with noise groups: %v, %+v", err, narrow)
	}
	if _, _, err := screenFake(t, "25,50%", nil); err == nil {
		t.Error("two reductions screened")
	}
	// A second round adds a slowdown run and a baseline to the same point.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	more, err := sc.More(ctx, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if len(more.Baseline.Runs) != 3 || len(more.Points) != 1 || len(more.Points[0].SlowdownRuns) != 2 {
		t.Fatalf("after a second round: %d baseline runs, %d points, %+v", len(more.Baseline.Runs), len(more.Points), more.Points)
	}
	if len(res.Points) != 1 || len(res.Baseline.Runs) != 2 {
		t.Errorf("the second round changed the first round's results: %d points, %d baseline runs", len(res.Points), len(res.Baseline.Runs))
	}
}

// A confirmation continues the screening: its profile and the screened
// point's pauses are kept; every run, baselines included, is the
// confirmation's own.
func TestScreeningConfirm(t *testing.T) {
	reds, err := model.ParseReductions("25,50%")
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{reds[0].Text, reds[1].Text}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full := ConfirmOptions{Reductions: reds, ReductionsText: texts, Duration: 400 * time.Millisecond, Repetitions: 2, MaxRepetitions: 2}
	for _, tc := range []struct {
		name      string
		rounds    int // screening rounds before the confirmation
		reds      []model.Reduction
		reduction string
	}{
		{name: "one round", rounds: 1, reds: reds, reduction: "50%"},
		{name: "two rounds", rounds: 2, reds: reds, reduction: "50%"},
		// A reduction that was not screened keeps no pauses.
		{name: "other reduction", rounds: 1, reds: reds[:1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, _, err := screenFake(t, "50%", nil)
			if err != nil {
				t.Fatal(err)
			}
			for range tc.rounds - 1 {
				if _, err := sc.More(ctx, nil); err != nil {
					t.Fatal(err)
				}
			}
			screened := sc.points[0].sd
			o := full
			o.Reductions, o.ReductionsText = tc.reds, texts[:len(tc.reds)]
			res, err := sc.Confirm(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Baseline.Runs) != 2 {
				t.Errorf("%d baseline runs, want the confirmation's own 2", len(res.Baseline.Runs))
			}
			if len(res.Points) != len(tc.reds) {
				t.Fatalf("%d points, want %d", len(res.Points), len(tc.reds))
			}
			for i, p := range res.Points {
				if len(p.SlowdownRuns) != 2 {
					t.Errorf("point %d: %d slowdown runs, want the confirmation's own 2", i, len(p.SlowdownRuns))
				}
			}
			if tc.reduction != "" && res.Points[len(res.Points)-1].Batch != screened.batch {
				t.Errorf("the screened point's batch %d, want the screening's %d", res.Points[1].Batch, screened.batch)
			}
			c := res.Settings.Carried
			if c == nil || c.Reduction != tc.reduction || !(c.DurationS > 0) {
				t.Errorf("carried %+v, want the pauses at %q", c, tc.reduction)
			}
			if res.Settings.Repetitions != 2 || len(res.Settings.Reductions) != len(tc.reds) {
				t.Errorf("settings %+v: want the full measurement's", res.Settings)
			}
		})
	}
	sc, _, err := screenFake(t, "50%", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Confirm(ctx, ConfirmOptions{Reductions: reds, ReductionsText: texts[:1]}); err == nil {
		t.Error("reductions and texts that differ in number were confirmed")
	}
}

// A confirmation makes Repetitions and repeats noisy points up to
// MaxRepetitions unless Settled, asked before each repetition after the
// first with the results so far, says they answer the question.
func TestConfirmSettled(t *testing.T) {
	reds, err := model.ParseReductions("25,50%")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		settled *bool // nil: no Settled
		runs    int   // each point's slowdown runs
		asked   int   // calls of Settled
	}{
		{name: "settled at once", settled: new(true), runs: 1, asked: 1},
		{name: "never settled", settled: new(false), runs: 3, asked: 2},
		{name: "no question", runs: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sc, _, err := screenFake(t, "50%", nil)
			if err != nil {
				t.Fatal(err)
			}
			// Every point stays noisier than this.
			sc.r.opts.PrecisionPct = 1e-9
			o := ConfirmOptions{Reductions: reds, ReductionsText: []string{reds[0].Text, reds[1].Text}, Duration: 200 * time.Millisecond, Repetitions: 2, MaxRepetitions: 3}
			asked := 0
			if tc.settled != nil {
				o.Settled = func(res *report.Results) (bool, string) {
					asked++
					if len(res.Points) != 2 || len(res.Baseline.Runs) != asked || len(res.Points[0].SlowdownRuns) != asked {
						t.Errorf("asked for the %d time with %d points, %d baseline runs and %d slowdown runs: want the 2 points and the runs so far", asked, len(res.Points), len(res.Baseline.Runs), len(res.Points[0].SlowdownRuns))
					}
					return *tc.settled, "the test says so"
				}
			}
			res, err := sc.Confirm(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range res.Points {
				if len(p.SlowdownRuns) != tc.runs {
					t.Errorf("point %d: %d slowdown runs, want %d", i, len(p.SlowdownRuns), tc.runs)
				}
			}
			if asked != tc.asked {
				t.Errorf("Settled asked %d times, want %d", asked, tc.asked)
			}
		})
	}
}

// A screening ends at its pre-profiling baseline exactly where that
// baseline, under shared placement, left the shared cores idle under 1%
// of the time while the target kept its cores busy under half of it.
func TestOthersBind(t *testing.T) {
	dedicated := backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}, Services: map[string][]int{"t": {1}, "a": {0}}}
	for _, tt := range []struct {
		name  string
		pl    backend.Placement
		idle  time.Duration // the shared cores' idle time in the 1 s window
		busy  float64       // the target's CPU seconds in it
		tune  Tuning
		ended bool
	}{
		{"saturated, target mostly idle", sharedPlacement, 5 * time.Millisecond, 0.1, Tuning{}, true},
		{"saturated, target busy 49%", sharedPlacement, 0, 0.49, Tuning{}, true},
		{"saturated, target busy 83%", sharedPlacement, 0, 0.83, Tuning{}, false},
		{"idle 2%", sharedPlacement, 20 * time.Millisecond, 0.1, Tuning{}, false},
		{"saturated, --screen-all", sharedPlacement, 0, 0.1, Tuning{ScreenAll: true}, false},
		{"dedicated placement", dedicated, 0, 0.1, Tuning{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{d: placed{pl: tt.pl}, opts: Options{Target: "t", Tuning: tt.tune}, prof: &profile{c1: 1, q1: 1}}
			s := delaySample(tt.busy, nil, nil)
			s.idle = tt.idle
			r.base = []*sample{s}
			err := r.othersBind()
			var ob *OthersBindError
			if got := errors.As(err, &ob); got != tt.ended {
				t.Fatalf("othersBind() = %v, want the screening ended: %v", err, tt.ended)
			}
			if tt.ended && (ob.Target != "t" || math.Abs(ob.TargetBusyPct-100*tt.busy) > 1e-6 || !strings.Contains(err.Error(), "the other services, not t, set the throughput")) {
				t.Errorf("error %+v: %v", ob, err)
			}
		})
	}
}
