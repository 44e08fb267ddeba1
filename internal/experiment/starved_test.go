package experiment

import (
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// A point whose first run starved the target is measured again with half
// the batch, at most twice, and only where the batch was chosen, the
// pauses are not the long ones and the repair is not turned off.
func TestShortenStarved(t *testing.T) {
	tests := []struct {
		name       string
		busyIn     float64 // target busy during pauses, share of its core
		batch      int     // --batch; 0: chosen
		long       bool
		earlier    int // runs the point already has
		off        bool
		repairs    int // times shorten already halved it
		wantBatch  int // after shorten; 40 (unchanged) where not
		wantResult bool
	}{
		{"starved", 0.1, 0, false, 0, false, 0, 20, true},
		{"busy during pauses", 0.65, 0, false, 0, false, 0, 40, false},
		{"batch given", 0.1, 40, false, 0, false, 0, 40, false},
		{"long pauses", 0.1, 0, true, 0, false, 0, 40, false},
		{"not the first run", 0.1, 0, false, 1, false, 0, 40, false},
		{"turned off", 0.1, 0, false, 0, true, 0, 40, false},
		{"halved once already", 0.1, 0, false, 0, false, 1, 20, true},
		{"halved twice already", 0.1, 0, false, 0, false, 2, 40, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const d = 500 * time.Microsecond
			r := &Runner{
				prof: &profile{c1: 1, q1: 1, u1: time.Millisecond},
				d:    placed{spec: &spec.Spec{}, pl: backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}},
				opts: Options{Target: "t", Batch: tt.batch, Tuning: Tuning{NoStarvedRepair: tt.off}},
			}
			// Where it was halved before, the point now runs at 40
			// calls, chosen as 40 << repairs.
			pr := &pointRuns{sd: slowdown{batch: 40, pause: 20 * time.Millisecond}, long: tt.long}
			if tt.repairs > 0 {
				pr.shortenedFrom = 40 << tt.repairs
			}
			run := func() *sample {
				s := busySample(0.7, 5)
				s.rounds["t"].PauseBusyNS, s.rounds["t"].PauseWindowNS = int64(tt.busyIn*1e6), 1e6
				return s
			}
			for range tt.earlier {
				pr.samples = append(pr.samples, run())
			}
			got := r.shorten(pr, d, run())
			want := tt.wantBatch
			if tt.wantResult && tt.repairs > 0 {
				want = 20
			}
			if got != tt.wantResult || pr.sd.batch != want {
				t.Fatalf("shorten = %v, batch %d; want %v, %d", got, pr.sd.batch, tt.wantResult, want)
			}
			if got && (pr.sd.pause != time.Duration(pr.sd.batch)*d || pr.shortenedFrom != 40<<tt.repairs) {
				t.Fatalf("after shorten: pause %v at batch %d, shortened from %d", pr.sd.pause, pr.sd.batch, pr.shortenedFrom)
			}
			if got {
				pr.samples = append(pr.samples, run())
				if p := r.point(d, pr, nil); p.Diagnostics.ShortenedFromBatch != 40<<tt.repairs || p.Batch != pr.sd.batch {
					t.Fatalf("point: shortened_from_batch %d, batch %d", p.Diagnostics.ShortenedFromBatch, p.Batch)
				}
			}
		})
	}
}
