package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// The fixtures of an application of real size: 43 services, as the
// synthetic suite's tree (a gateway, six domains that it calls, six
// services under each), with names as long as real ones and a few links
// that are not a tree's (a session cache that three domains call, two
// domains that call each other).

// manyDomains are the six domains of the fixture, each with its six
// services under it.
var manyDomains = []struct {
	name     string
	services []string
}{
	{"checkout", []string{"pricing", "tax-rules", "promotions", "cart-store", "order-events", "fraud-score"}},
	{"catalog", []string{"inventory", "product-images", "availability", "price-history", "reviews", "bundles"}},
	{"accounts", []string{"session-cache", "profiles", "loyalty-points", "addresses", "preferences", "auth-tokens"}},
	{"shipping", []string{"quotes", "label-printer", "carrier-gateway", "tracking", "returns", "warehouse-slots"}},
	{"search", []string{"query-parser", "recommendations-ranker", "spelling", "facets", "autocomplete", "synonyms"}},
	{"payments", []string{"card-vault", "ledger", "refunds", "currency-rates", "invoices", "payouts"}},
}

// manyServices returns the services of the fixture, the gateway first,
// and its call graph (each service with the services it calls and is
// called by). Services are numbered as the tree's: svc-edge-gateway-00,
// svc-checkout-api-01 .. svc-payments-api-06, then the domains' own
// services 07 .. 42.
func manyServices() (names []string, graph map[string][]string) {
	graph = map[string][]string{}
	link := func(a, b string) {
		graph[a] = append(graph[a], b)
		graph[b] = append(graph[b], a)
	}
	root := "svc-edge-gateway-00"
	names = []string{root}
	apis := make([]string, len(manyDomains))
	for i, d := range manyDomains {
		apis[i] = fmt.Sprintf("svc-%s-api-%02d", d.name, i+1)
		names = append(names, apis[i])
		link(root, apis[i])
	}
	var cache string
	n := 1 + len(manyDomains)
	for i, d := range manyDomains {
		for _, s := range d.services {
			name := fmt.Sprintf("svc-%s-%s-%02d", d.name, s, n)
			n++
			names = append(names, name)
			link(apis[i], name)
			if s == "session-cache" {
				cache = name
			}
		}
	}
	// Links that are not a tree's: checkout and payments read the
	// accounts' session cache too, and call each other.
	link(apis[0], cache)
	link(apis[5], cache)
	link(apis[0], apis[5])
	for s := range graph {
		slices.Sort(graph[s])
	}
	return names, graph
}

// manyPlanted is the fixture's planted bottleneck; manyLesser gain less.
const manyPlanted = "svc-catalog-inventory-13"

var manyLesser = []string{"svc-search-recommendations-ranker-32", "svc-payments-ledger-38"}

// manyResults returns results of the fixture with target as the target
// and the given gain (%) at each reduction (with a 90% interval of ± 5
// points), as predict writes them, or validate with the truth.
func manyResults(kind, target string, reductions []float64, gains []float64, graph map[string][]string) *Results {
	r := htmlSampleResults(kind, target)
	r.App, r.Version = "bookstore", Version
	r.Settings.Spec = "deploy/bookstore/app.yaml"
	r.Settings.Placement = map[string][]int{target: {1}}
	for s := range graph {
		if s != target {
			r.Settings.Placement[s] = []int{0}
		}
	}
	r.Settings.NumCPU, r.Settings.LoadCPUs = 2, []int{0}
	r.CallGraph, r.Neighbours = graph, graph
	r.Baseline = Baseline{RPS: 240, Runs: []float64{236, 240, 245}, SpreadPct: 1.9, P50MS: 120, P99MS: 410}
	r.C1, r.U1US = 1, 230
	r.Warnings = []string{"the machine has 2 CPUs: the other 42 services share 1"}
	var reds []string
	r.Points = nil
	for i, pct := range reductions {
		pred := 240 * (1 + gains[i]/100)
		p := Point{
			ReductionPct: pct, ReductionUS: pct / 100 * 230, Batch: 4,
			SlowdownRPS: pred * (1 - pct/200), PredictedRPS: pred,
			PredictedRuns: []float64{pred * 0.98, pred, pred * 1.02}, SlowdownRuns: []float64{1, 1, 1},
			SpreadPct: 4, StdErrPct: 2,
			Estimate: EstimateValue, IntervalLowRPS: pred - 12, IntervalHighRPS: pred + 12,
			Flags: []string{},
		}
		if kind == KindValidate {
			truth := pred * 0.98
			e := (pred - truth) / truth * 100
			p.TrueRPS, p.ErrorPct, p.TrueRuns = &truth, &e, []float64{truth * 0.99, truth, truth * 1.01}
		}
		r.Points = append(r.Points, p)
		reds = append(reds, trimFloat(pct)+"%")
	}
	r.Settings.Reductions = reds
	return r
}

// manySampleRank returns a screened ranking of the fixture, partial: the
// planted bottleneck and the two services that gain less confirmed, one
// candidate confirmed without a gain and one left unconfirmed when the
// budget ran out, most services ruled out by their screening, two failed,
// one not called, one skipped and three not reached.
func manySampleRank() *Rank {
	names, graph := manyServices()
	r := &Rank{
		Version: Version, Kind: KindRank, App: "bookstore",
		CreatedAt:  time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC),
		Reductions: []string{"25%", "50%"}, MinGainPct: 5, ElapsedS: 298,
		BudgetS: 300, Partial: true, PartialReason: "the budget of 5m0s ran out",
		Screening: &RankScreening{Reduction: "50%", WarmupS: 0.5, DurationS: 1.5, Seed: 7, FullRuns: 3, ElapsedS: 210},
	}
	failed := map[string]string{
		"svc-shipping-carrier-gateway-27": "configure svc-shipping-carrier-gateway-27: wire: peer reported an error: core 0 runs the target, which is never paused",
		"svc-checkout-order-events-11":    "the target exited during pre-profiling",
	}
	notReached := []string{"svc-payments-payouts-42", "svc-payments-invoices-41", "svc-search-synonyms-36"}
	candidates := []string{manyPlanted, manyLesser[0], manyLesser[1], "svc-checkout-pricing-07", "svc-accounts-session-cache-19"}
	confirmed := map[string][]float64{
		manyPlanted: {31, 62}, manyLesser[0]: {6, 14}, manyLesser[1]: {4, 11}, "svc-checkout-pricing-07": {0.5, 1},
	}
	for i, s := range names {
		e := RankEntry{Service: s, Stage: StageScreened}
		switch {
		case failed[s] != "":
			e.Stage, e.Verdict, e.Reason = StageFailed, VerdictFailed, failed[s]
		case slices.Contains(notReached, s):
			e.Stage, e.Verdict, e.Reason = StageNotReached, VerdictNotReached, "not measured: the budget of 5m0s ran out"
		case s == "svc-shipping-returns-29":
			e.Verdict, e.Reason = VerdictNotCalled, "the workload does not call it"
		case s == "svc-accounts-preferences-23":
			e.Verdict, e.Reason = VerdictSkipped, `target "svc-accounts-preferences-23" used almost no CPU during pre-profiling (0.2% of a core, 9µs per request)`
		case confirmed[s] != nil:
			e.Stage = StageConfirmed
			e.Results = manyResults(KindPredict, s, []float64{25, 50}, confirmed[s], graph)
			e.Screen = &RankScreen{GainPct: confirmed[s][1], BaselineRPS: 240}
		default:
			// Screened at 50% only, gaining a little or losing a little.
			gain := float64(i%7) - 3
			if s == "svc-accounts-session-cache-19" {
				gain = 4
			}
			e.Results = manyResults(KindPredict, s, []float64{50}, []float64{gain}, graph)
		}
		Judge(&e, r.MinGainPct)
		r.Entries = append(r.Entries, e)
		if e.Stage != StageNotReached {
			r.Screening.Order = append(r.Screening.Order, s)
		}
	}
	r.Screening.Candidates = candidates
	r.Order()
	r.Drift = DriftOf(r.Entries)
	return r
}

// The geometry of the figures of 43 services, before any browser: the
// call graph is a list narrow enough for a phone, every name fits its
// node, no two nodes overlap, every link is drawn once; the gain bars
// give every service a row and no two tick labels share room. The demo's
// call graph stays in layers.
func TestManyServicesLayout(t *testing.T) {
	names, graph := manyServices()
	links := 0
	for _, ns := range graph {
		links += len(ns)
	}
	info := map[string]graphNodeInfo{}
	for _, s := range names {
		info[s] = graphNodeInfo{Known: true, C1: 1, U1US: 230, Class: "n-no-gain"}
	}
	g, rows := callGraph(graph, nil, info)
	if !g.List {
		t.Error("43 services in layers: want a list")
	}
	if len(g.Nodes) != 43 || len(rows) != 43 || len(g.Edges) != links/2 {
		t.Errorf("%d nodes, %d rows, %d edges; want 43, 43, %d", len(g.Nodes), len(rows), len(g.Edges), links/2)
	}
	if w := parseNum(t, g.Width); w > 400 {
		t.Errorf("the list is %g wide: too wide for a phone", w)
	}
	type box struct{ x, y, w, h float64 }
	var boxes []box
	for _, n := range g.Nodes {
		b := box{parseNum(t, n.X), parseNum(t, n.Y), parseNum(t, n.W), parseNum(t, n.H)}
		for _, o := range boxes {
			if b.x < o.x+o.w && o.x < b.x+b.w && b.y < o.y+o.h && o.y < b.y+b.h {
				t.Errorf("node %s overlaps another", n.Title)
			}
		}
		boxes = append(boxes, b)
		if textWidth(n.Name, nodeNamePx, true) > b.w-2*nodePad || textWidth(n.Detail, nodeDetailPx, false) > b.w-2*nodePad {
			t.Errorf("node %s: %q / %q do not fit %g", n.Title, n.Name, n.Detail, b.w)
		}
	}

	demo, _ := callGraph(htmlDemoNeighbours(), nil, nil)
	if demo.List || demo.Width != "476" {
		t.Errorf("the demo's graph: list %v, %s wide; want layers, 476 wide as before", demo.List, demo.Width)
	}

	bars := gainBars(manySampleRank())
	if len(bars.Rows) != 43 {
		t.Fatalf("%d rows of bars, want 43", len(bars.Rows))
	}
	end := math.Inf(-1)
	for _, tick := range bars.Ticks {
		if tick.Label == "" {
			continue
		}
		x, half := parseNum(t, tick.X), textWidth(tick.Label, barsTickPx, false)/2
		if x-half < end || x-half < 0 || x+half > barsWidth {
			t.Errorf("tick label %q at %g runs into the one before or past the edge", tick.Label, x)
		}
		end = x + half
	}
	for _, row := range bars.Rows {
		if textWidth(row.Label, barsLabelPx, true) > barsWidth-2*barsMargin {
			t.Errorf("label %q is wider than the chart", row.Label)
		}
		if row.HasBar && parseNum(t, row.ErrX2) > parseNum(t, bars.Right) {
			t.Errorf("%q: its whisker reaches into the figures", row.Label)
		}
	}
}

func parseNum(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// Names too wide are cut in the middle, keeping both ends; names that fit
// are left alone.
func TestFitText(t *testing.T) {
	if got := fitText("cart", 100, 14, true); got != "cart" {
		t.Errorf("fitText(cart) = %q", got)
	}
	long := "svc-search-recommendations-ranker-32"
	got := fitText(long, 200, 14, true)
	if !strings.HasPrefix(got, "svc-search") || !strings.HasSuffix(got, "-32") || !strings.Contains(got, "…") {
		t.Errorf("fitText(%s) = %q: want both ends kept, cut in the middle", long, got)
	}
	if w := textWidth(got, 14, true); w > 200 {
		t.Errorf("%q is %g wide, more than 200", got, w)
	}
	// Wider characters are wider: bold more than regular, unknown ones an em.
	if textWidth("mmm", 10, false) <= textWidth("iii", 10, false) || textWidth("abc", 10, true) <= textWidth("abc", 10, false) || textWidth("漢", 10, false) != 10 {
		t.Error("textWidth does not tell wide from narrow")
	}
}

// A chart's label too long for it is set smaller, down to a floor, then
// cut in its longest word; a label that fits is left alone.
func TestFitLabel(t *testing.T) {
	sty := plot.New().X.Label.TextStyle
	sty.Font.Size = vg.Points(12)
	if got := fitLabel(&sty, "reduction (%)", vg.Points(200), vg.Points(11)); got != "reduction (%)" || sty.Font.Size != vg.Points(12) {
		t.Errorf("a short label became %q at %v", got, sty.Font.Size)
	}
	long := "reduction of svc-search-recommendations-ranker-32's CPU time per call (%)"
	got := fitLabel(&sty, long, vg.Points(230), vg.Points(11))
	if sty.Width(got) > vg.Points(230) || sty.Font.Size != vg.Points(11) {
		t.Errorf("%q at %v is %v wide: want at most 230pt at 11pt", got, sty.Font.Size, sty.Width(got))
	}
	if !strings.HasPrefix(got, "reduction of svc-") || !strings.Contains(got, "…") || !strings.HasSuffix(got, "-32's CPU time per call (%)") {
		t.Errorf("%q: want the service's name cut in the middle and the rest kept", got)
	}
}
