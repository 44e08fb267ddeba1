package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
	"github.com/slowpoke-dev/slowpoke/model"
)

func TestQuantileCI(t *testing.T) {
	s := make([]float64, 1000)
	for i := range s {
		s[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		q      float64
		want   float64
		lo, hi float64
	}{
		{0.5, 500, 469, 531},
		{0.99, 990, 983, 996},
	} {
		v, ci := quantileCI(s, tc.q)
		if v != tc.want || ci[0] < tc.lo-2 || ci[0] > tc.lo+2 || ci[1] < tc.hi-2 || ci[1] > tc.hi+2 {
			t.Errorf("q%v: %v %v, want %v [%v, %v]", tc.q, v, ci, tc.want, tc.lo, tc.hi)
		}
	}
	if p := lowerP([]float64{1, 2, 3, 4, 5, 6, 7, 8}, []float64{11, 12, 13, 14, 15, 16, 17, 18}); p > 0.01 {
		t.Errorf("clearly lower sample: p = %v", p)
	}
	if p := lowerP([]float64{11, 12, 13, 14, 15, 16, 17, 18}, []float64{1, 2, 3, 4, 5, 6, 7, 8}); p < 0.9 {
		t.Errorf("clearly higher sample: p = %v", p)
	}
	if got := (saturated{cpu: 2000, calls: 1}).predictionRate(500, 500); got != 375 {
		t.Errorf("prediction rate %v, want 375 (a quarter of the cores' time freed)", got)
	}
	if got := (saturated{}).predictionRate(500, 500); got != 500 {
		t.Errorf("prediction rate without a measured cost %v, want the baseline's", got)
	}
}

// PredictLatency against a fake backend: what it refuses before anything
// runs (a backend without a delay store among them, as on Kubernetes),
// and, for a run cancelled at its start, the delay store made where the
// backend says, every controller told it, and every one taken out of the
// what-if and the store removed at the end.
func TestPredictLatencyFakeBackend(t *testing.T) {
	tests := []struct {
		name     string
		services func(s []fakeService)
		app      func(a *fakeApp, dir string)
		opts     func(o *LatencyOptions)
		want     string // in the error
		wantIs   error
		joined   bool // every controller joined the what-if, and left it
	}{
		{name: "no delay store", app: func(a *fakeApp, _ string) { a.sharedDir = "" },
			want: "a latency what-if needs a delay store shared with every service's controller", wantIs: errors.ErrUnsupported},
		{name: "service without controller", services: func(s []fakeService) { s[2].noController = true }, want: `service "a" runs without a controller`},
		{name: "holds without cores of its own", app: func(a *fakeApp, _ string) { a.pl = backend.Placement{Target: "t", Cluster: true} },
			opts: func(o *LatencyOptions) { o.CompareHolds = true }, want: "holding the other services' cores needs"},
		{name: "unknown target", opts: func(o *LatencyOptions) { o.Target = "nosuch" }, want: `no service "nosuch" is running`},
		{name: "no reduction", opts: func(o *LatencyOptions) { o.Reductions = nil }, want: "no reduction given"},
		{name: "negative rate", opts: func(o *LatencyOptions) { o.Rate = -1 }, want: "rate must be a positive number"},
		{name: "validate without ground truth", opts: func(o *LatencyOptions) { o.Validate = true },
			want: `validate needs a way to really reduce "t"'s work: add ground_truth (env, base_us) to it in the spec (docs/spec.md)`},
		{name: "validate on an attached target without a command", opts: func(o *LatencyOptions) { o.Validate = true },
			app:  func(a *fakeApp, _ string) { a.spec.Services[1].Attach = &spec.Attach{Port: 9} },
			want: `validate: service "t" is attached to (attach: {port: 9}) and has no command`},
		{name: "cancelled at the start", want: context.Canceled.Error(), wantIs: context.Canceled, joined: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svcs := threeServices()
			if tt.services != nil {
				tt.services(svcs)
			}
			app := newFakeApp(t, sharedPlacement, svcs...)
			dir := t.TempDir()
			app.sharedDir = dir
			if tt.app != nil {
				tt.app(app, dir)
			}
			reds, _ := model.ParseReductions("50%")
			o := LatencyOptions{Target: "t", Reductions: reds, ReductionsText: []string{"50%"}}
			if tt.opts != nil {
				tt.opts(&o)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := PredictLatency(ctx, app, o)
			if err == nil || !strings.Contains(err.Error(), tt.want) || tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Fatalf("error %v, want one with %q (is %v)", err, tt.want, tt.wantIs)
			}
			store := filepath.Join(dir, storeKind+"-fake")
			for name, c := range app.ctls {
				ls := c.latencyWhatIfs()
				if !tt.joined {
					if len(ls) != 0 {
						t.Errorf("%s was told %+v before the run was refused", name, ls)
					}
					continue
				}
				if len(ls) < 2 || ls[0].Store != store || ls[0].Target != (name == "t") || ls[len(ls)-1] != (wire.Latency{}) {
					t.Errorf("%s was told %+v: want to join the what-if with store %s, then to leave it", name, ls, store)
				}
			}
			if _, err := os.Stat(store); !os.IsNotExist(err) {
				t.Errorf("the delay store is left behind: %v", err)
			}
		})
	}
}
