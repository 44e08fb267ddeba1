package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// htmlDemoServices are the services of the fixtures: the demo shop.
var htmlDemoServices = []string{"frontend", "cart", "catalog", "currency"}

func htmlDemoNeighbours() map[string][]string {
	return map[string][]string{
		"frontend": {"cart", "catalog", "currency"},
		"cart":     {"frontend", "catalog"},
		"catalog":  {"frontend", "cart"},
		"currency": {"frontend"},
	}
}

// htmlSampleResults returns results of the demo with target as the target,
// predicting gains that flatten out, for kind KindPredict or KindValidate
// (with truth and errors). The larger points carry flags.
func htmlSampleResults(kind, target string) *Results {
	r := &Results{
		Version:   Version,
		Kind:      kind,
		App:       "shop",
		Target:    target,
		CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Settings: Settings{
			Spec: "examples/demo/app.yaml", Reductions: []string{"0,20,...,80%"}, Connections: 64,
			WarmupS: 1, DurationS: 3, Repetitions: 3, MaxRepetitions: 6, PrecisionPct: 1.5,
			MaxPauseMS: 50, PauseMethod: "cores", PlacementMode: "shared",
			Placement: map[string][]int{"frontend": {0, 1}, target: {2}, "catalog": {0, 1}, "currency": {0, 1}},
			LoadCPUs:  []int{0, 1}, Host: "box", NumCPU: 4,
		},
		Baseline: Baseline{RPS: 1000, Runs: []float64{990, 1000, 1012}, SpreadPct: 2.2, P50MS: 1.5, P99MS: 7.25, Errors: 0, Non2xx: 3},
		C1:       2, Q1: 1, Q1Assigned: 1, TargetCoresP95: 0.98, TargetCoresMean: 0.8, U1US: 250,
		Neighbours: htmlDemoNeighbours(),
		CallGraph:  htmlDemoNeighbours(),
		Warnings:   []string{"the machine has 4 CPUs: the other services share 2"},
	}
	for i, pct := range []float64{0, 20, 40, 60, 80} {
		pred := 1000 * (1 + 0.5*(1-math.Exp(-pct/30)))
		p := Point{
			ReductionPct: pct, ReductionUS: pct / 100 * 250, Batch: 8,
			SlowdownRPS: pred * (1 - pct/200), PredictedRPS: pred,
			PredictedRuns: []float64{pred * 0.98, pred, pred * 1.03}, SpreadPct: 5, StdErrPct: 1.2,
			Flags: []string{},
		}
		switch i {
		case 3:
			p.Flags = []string{FlagNoisy}
		case 4:
			p.Flags = []string{FlagMechanismCost, FlagStopsLate}
		}
		if kind == KindValidate {
			truth := pred * (1 - 0.01*float64(i))
			e := (pred - truth) / truth * 100
			p.TrueRPS, p.ErrorPct = &truth, &e
			p.TrueRuns = []float64{truth * 0.99, truth, truth * 1.01}
		}
		r.Points = append(r.Points, p)
	}
	if kind == KindValidate {
		rmse, worst := 2.6, 4.2
		r.RMSEPct, r.MaxAbsErrorPct = &rmse, &worst
	}
	return r
}

// htmlSampleRank returns a ranking of the demo: cart gains, catalog does not,
// currency failed before any measurement.
func htmlSampleRank() *Rank {
	cart := htmlSampleResults(KindPredict, "cart")
	catalog := htmlSampleResults(KindPredict, "catalog")
	catalog.C1, catalog.U1US = 1, 40
	for i := range catalog.Points {
		p := &catalog.Points[i]
		p.PredictedRPS = 1000 + float64(i)*2
		p.PredictedRuns = []float64{p.PredictedRPS - 8, p.PredictedRPS, p.PredictedRPS + 9}
		p.Flags = []string{}
	}
	catalog.Points[2].Flags = []string{FlagTargetStarved}
	r := &Rank{
		Version: Version, Kind: KindRank, App: "shop",
		CreatedAt:  time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC),
		Reductions: []string{"0%", "20%", "40%", "60%", "80%"},
		ElapsedS:   412,
		Entries: []RankEntry{
			{Service: "cart", Results: cart},
			{Service: "catalog", Results: catalog},
			{Service: "currency", Verdict: VerdictFailed, Reason: "the target exited during pre-profiling"},
		},
		Warnings: []string{"frontend is the entry service and was not ranked"},
	}
	for i := range r.Entries {
		Judge(&r.Entries[i], 2)
	}
	r.Order()
	return r
}

// htmlDoc is what checkHTML learns from a page.
type htmlDoc struct {
	raw   string
	text  string            // all text, unescaped, with spaces between nodes
	tags  map[string]int    // start tags by name
	attrs map[string]string // "tag.attr" of interest -> value (the last seen)
}

// parseReportHTML tokenizes a page and fails the test on anything that would
// make it load something or run something: a script, an external URL in
// an attribute or in CSS.
func parseReportHTML(t *testing.T, raw string) htmlDoc {
	t.Helper()
	if _, err := html.Parse(strings.NewReader(raw)); err != nil {
		t.Fatalf("html.Parse: %v", err)
	}
	d := htmlDoc{raw: raw, tags: map[string]int{}, attrs: map[string]string{}}
	var text strings.Builder
	z := html.NewTokenizer(strings.NewReader(raw))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if err := z.Err(); !errors.Is(err, io.EOF) {
				t.Fatalf("tokenize: %v", err)
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.TextToken:
			text.WriteString(tok.Data)
			text.WriteByte(' ')
		case html.StartTagToken, html.SelfClosingTagToken:
			d.tags[tok.Data]++
			for _, a := range tok.Attr {
				key := strings.ToLower(a.Key)
				if a.Namespace != "" {
					key = a.Namespace + ":" + key
				}
				switch key {
				case "src", "href", "xlink:href", "action", "formaction", "poster", "data", "srcset", "background":
					v := strings.ToLower(strings.TrimSpace(a.Val))
					if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "//") {
						t.Errorf("<%s %s=%q> points at the network", tok.Data, a.Key, a.Val)
					}
				}
				if strings.HasPrefix(key, "on") {
					t.Errorf("<%s %s=...>: an event handler attribute", tok.Data, a.Key)
				}
				d.attrs[tok.Data+"."+key] = a.Val
				if tok.Data == "meta" && strings.EqualFold(a.Key, "http-equiv") {
					d.attrs["meta.http-equiv="+strings.ToLower(a.Val)] = htmlAttr(tok, "content")
				}
			}
		}
	}
	d.text = strings.Join(strings.Fields(text.String()), " ")
	if n := d.tags["script"]; n > 0 {
		t.Errorf("page has %d <script> elements", n)
	}
	for _, bad := range []string{"url(", "@import", "ZgotmplZ"} {
		if strings.Contains(raw, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	return d
}

func htmlAttr(tok html.Token, key string) string {
	for _, a := range tok.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

// checkReportPage asserts what every report must be: a parseable page with the
// policy that forbids network requests, a viewport for phones, figures,
// and the given services and flags named and explained.
func checkReportPage(t *testing.T, raw string, services, flags, want []string, figures bool) htmlDoc {
	t.Helper()
	d := parseReportHTML(t, raw)
	if !strings.HasPrefix(raw, "<!DOCTYPE html>") {
		t.Error("no <!DOCTYPE html> first")
	}
	csp := d.attrs["meta.http-equiv=content-security-policy"]
	for _, directive := range []string{"default-src 'none'", "style-src 'unsafe-inline'", "img-src data:"} {
		if !strings.Contains(csp, directive) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, directive)
		}
	}
	if strings.Contains(csp, "script-src") || strings.Contains(csp, "connect-src") {
		t.Errorf("Content-Security-Policy %q allows scripts or connections", csp)
	}
	if !strings.Contains(raw, `<meta name="viewport" content="width=device-width`) {
		t.Error("no viewport meta tag")
	}
	if figures && (d.tags["svg"] == 0 || !strings.Contains(raw, "<svg viewBox=")) {
		t.Error("no <svg> with a viewBox")
	}
	if strings.Contains(raw, "<?xml") || strings.Contains(raw, `width="360pt"`) {
		t.Error("an inlined SVG kept its XML prolog or its fixed size")
	}
	for _, s := range services {
		if !strings.Contains(d.text, s) {
			t.Errorf("service %q is not named", s)
		}
	}
	for _, f := range flags {
		if !strings.Contains(d.text, f) {
			t.Errorf("flag %q is not named", f)
		}
		// What happened; the advice depends on what the run did.
		if what, _, _ := strings.Cut(FlagMeaning(f), ";"); !strings.Contains(d.text, what) {
			t.Errorf("flag %q is not explained", f)
		}
	}
	for _, w := range want {
		if !strings.Contains(d.text, w) {
			t.Errorf("page text lacks %q", w)
		}
	}
	return d
}

func TestWriteHTML(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	evilResults := htmlSampleResults(KindValidate, evil)
	evilResults.App = `shop"><img src=x onerror=alert(2)>`
	evilResults.CallGraph[evil] = []string{"frontend"}
	evilResults.Warnings = append(evilResults.Warnings, `<b>bold</b> & "quoted"`)

	nonFinite := htmlSampleResults(KindPredict, "cart")
	nonFinite.Points[1].PredictedRPS = math.NaN()
	nonFinite.Points[2].PredictedRuns = []float64{math.Inf(1), 0}
	nonFinite.Baseline.RPS = math.Inf(1)

	infeasible := htmlSampleResults(KindPredict, "cart")
	for i := range infeasible.Points {
		infeasible.Points[i].PredictedRPS = 0
		infeasible.Points[i].Flags = []string{FlagInfeasible, FlagErrors}
	}
	research := htmlSampleResults(KindPredict, "cart")
	research.Settings.Batch = 8
	research.Settings.Tuning = &Tuning{GraphRounds: true, NoGrowthCorrection: true}
	research.Settings.Reductions = []string{"1->2", "300us"}

	unknownFlag := htmlSampleResults(KindPredict, "cart")
	unknownFlag.Points[0].Flags = []string{"made-up-flag"}

	tests := []struct {
		name     string
		r        *Results
		services []string
		flags    []string
		want     []string
	}{
		{
			name:     "predict",
			r:        htmlSampleResults(KindPredict, "cart"),
			services: htmlDemoServices,
			flags:    []string{FlagNoisy, FlagMechanismCost, FlagStopsLate},
			want: []string{
				"slowpoke predict: shop, target cart",
				"If cart took 80% less CPU per call (200.0 of 250.0 µs), throughput would go from 1000 to 1465 req/s (+46.5%).",
				"That point is flagged (mechanism-cost, stops-late)",
				"2026-03-01 12:00:00 UTC",
				"slowpoke predict -f examples/demo/app.yaml --target cart --reduce 0,20,...,80% --reps 3 --max-reps 6 --precision 1.5 --connections 64 --warmup 1s --duration 3s --max-pause 50ms --pause cores --placement shared",
				"2 calls/req · 250 µs/call",
				"the machine has 4 CPUs: the other services share 2",
				"± 2.2%", "p50 latency", "1.50 ms", "7.25 ms", "0 failed, 3 non-2xx",
				"noisy on 60%",
			},
		},
		{
			name:     "validate",
			r:        htmlSampleResults(KindValidate, "cart"),
			services: htmlDemoServices,
			flags:    []string{FlagNoisy, FlagMechanismCost, FlagStopsLate},
			want: []string{
				"slowpoke validate: shop, target cart",
				"the prediction is off by +4.2%",
				"RMSE 2.6%",
				"True req/s", "+3.1%",
				"slowpoke validate -f examples/demo/app.yaml --target cart",
			},
		},
		{
			name:     "escaped",
			r:        evilResults,
			services: []string{evil, "frontend"},
			want:     []string{`<b>bold</b> & "quoted"`, `'<script>alert(1)</script>'`},
		},
		{
			name:     "non-finite",
			r:        nonFinite,
			services: htmlDemoServices,
		},
		{
			name:  "infeasible",
			r:     infeasible,
			flags: []string{FlagInfeasible, FlagErrors},
			want:  []string{"No reduction of cart's CPU time gave a prediction"},
		},
		{
			name: "research switches",
			r:    research,
			want: []string{
				"--reduce '1->2,300us'", "--batch 8",
				"This run also used --graph-rounds --no-growth-correction, which only slowpoke bench accuracy offers",
				"8 target calls per pause round",
			},
		},
		{
			name:  "unknown flag",
			r:     unknownFlag,
			flags: []string{"made-up-flag"},
		},
		{
			name: "empty",
			r:    &Results{},
			want: []string{"These results hold no points", "No call graph was recorded.", "No point carries a flag.", "slowpoke predict -f SPEC --target SERVICE"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.html")
			if err := WriteHTML(path, tc.r); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkReportPage(t, string(raw), tc.services, tc.flags, tc.want, true)
			if strings.Contains(string(raw), evil) || strings.Contains(string(raw), "<img src=x") {
				t.Error("a name reached the page unescaped")
			}
			if fi, err := os.Stat(path); err != nil {
				t.Error(err)
			} else if fi.Mode().Perm() != 0o644 {
				t.Errorf("report.html has mode %v, want 0644", fi.Mode().Perm())
			}
		})
	}
}

func TestWriteRankHTML(t *testing.T) {
	evil := htmlSampleRank()
	evil.Entries[2].Service = `<script>alert(1)</script>`
	evil.Entries[0].Results.CallGraph[`<script>alert(1)</script>`] = []string{"cart"}

	noGain := htmlSampleRank()
	noGain.Entries = noGain.Entries[1:]
	for i := range noGain.Entries {
		noGain.Entries[i].Verdict = ""
		Judge(&noGain.Entries[i], 2)
	}
	noGain.Order()

	tests := []struct {
		name     string
		r        *Rank
		services []string
		flags    []string
		want     []string
	}{
		{
			name:     "rank",
			r:        htmlSampleRank(),
			services: htmlDemoServices,
			flags:    []string{FlagNoisy, FlagMechanismCost, FlagStopsLate, FlagTargetStarved},
			want: []string{
				"slowpoke rank: shop, all services",
				"cart is the most worth optimizing: +46.5% throughput (± 1.4) at 80% less CPU per call.",
				"No gain beyond the noise: catalog.", "No prediction (see the reasons below): currency.",
				"the target exited during pre-profiling",
				"the bottleneck is elsewhere: cart limits throughput",
				"slowpoke rank -f examples/demo/app.yaml --reduce 0%,20%,40%,60%,80% --reps 3 --max-reps 6 --precision 1.5 --connections 64 --warmup 1s --duration 3s --max-pause 50ms --pause cores --placement shared",
				"Predicted req/s at a reduction of", "no-gain", "failed",
				"catalog at 40%",
				"cart: the machine has 4 CPUs: the other services share 2",
				"frontend is the entry service and was not ranked",
				"1 calls/req · 40 µs/call",
				"Elapsed", "6m52s",
			},
		},
		{
			name:     "escaped",
			r:        evil,
			services: []string{`<script>alert(1)</script>`, "cart", "catalog"},
		},
		{
			name:     "no gain",
			r:        noGain,
			services: []string{"catalog", "currency"},
			// currency failed: the headline speaks for catalog only.
			want: []string{"No measured service's optimization gains more than the noise of its estimate, but the ranking is incomplete.",
				"Incomplete: currency failed", "No measured service's optimization gains (catalog)"},
		},
		{
			name: "empty",
			r:    &Rank{},
			want: []string{"No services were ranked.", "slowpoke rank -f SPEC"},
		},
		{
			name:     "all failed",
			r:        &Rank{App: "x", Entries: []RankEntry{{Rank: 1, Service: "a", Verdict: VerdictFailed, Reason: "boom"}}},
			services: []string{"a"},
			want:     []string{"boom", "The ranking is incomplete: no service could be measured.", "Incomplete: a failed", "No prediction (see the reasons below): a."},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.html")
			if err := WriteRankHTML(path, tc.r); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d := checkReportPage(t, string(raw), tc.services, tc.flags, tc.want, len(tc.r.Entries) > 0)
			if strings.Contains(string(raw), "<script>alert(1)</script>") {
				t.Error("a service name reached the page unescaped")
			}
			// Every service is in the graph and the ranking, so in the text
			// at least twice.
			for _, s := range tc.services {
				if n := strings.Count(d.text, s); n < 2 {
					t.Errorf("%q named %d times, want at least 2 (ranking and graph)", s, n)
				}
			}
		})
	}
}

func TestWriteHTMLNil(t *testing.T) {
	dir := t.TempDir()
	if err := WriteHTML(filepath.Join(dir, "a.html"), nil); err == nil {
		t.Error("WriteHTML(nil) succeeded")
	}
	if err := WriteRankHTML(filepath.Join(dir, "b.html"), nil); err == nil {
		t.Error("WriteRankHTML(nil) succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %d files behind", len(entries))
	}
}

// TestWriteHTMLLeavesResults checks that rendering does not change what it
// renders (the rank fixtures share their Results with the caller).
func TestWriteHTMLLeavesResults(t *testing.T) {
	r := htmlSampleRank()
	before := htmlSampleRank()
	if err := WriteRankHTML(filepath.Join(t.TempDir(), "r.html"), r); err != nil {
		t.Fatal(err)
	}
	for i := range r.Entries {
		if r.Entries[i].Service != before.Entries[i].Service {
			t.Fatalf("entry %d: %s, was %s", i, r.Entries[i].Service, before.Entries[i].Service)
		}
		if a, b := r.Entries[i].Results, before.Entries[i].Results; a != nil && !slices.EqualFunc(a.Points, b.Points, func(p, q Point) bool {
			return p.ReductionPct == q.ReductionPct && slices.Equal(p.Flags, q.Flags)
		}) {
			t.Errorf("entry %d: points changed", i)
		}
	}
}

func TestCallGraphLayout(t *testing.T) {
	g, rows := callGraph(htmlDemoNeighbours(), []string{"lonely"}, map[string]graphNodeInfo{
		"cart": {Known: true, C1: 2, U1US: 250, Class: "n-target"},
	})
	if g == nil {
		t.Fatal("no graph")
	}
	if len(g.Nodes) != 5 || len(rows) != 5 {
		t.Fatalf("%d nodes, %d rows; want 5 (4 services and one without edges)", len(g.Nodes), len(rows))
	}
	// frontend talks to everyone: first layer, alone with the unconnected one.
	first := map[string]bool{}
	for _, n := range g.Nodes {
		if n.X == svgNum(graphMargin) {
			first[n.Title] = true
		}
	}
	if !first["frontend"] || first["cart"] {
		t.Errorf("first layer %v, want frontend and not cart", first)
	}
	// 4 undirected edges: frontend-cart, frontend-catalog, frontend-currency, cart-catalog.
	if len(g.Edges) != 4 {
		t.Errorf("%d edges, want 4: %v", len(g.Edges), g.Edges)
	}
	if g, _ := callGraph(nil, nil, nil); g != nil {
		t.Error("a graph from nothing")
	}

	// A tree of 43 services, as the synthetic suite's largest: every
	// service placed once, every edge drawn once, in 6 layers.
	tree := map[string][]string{}
	for i := 1; i < 43; i++ {
		parent, child := fmt.Sprintf("s%02d", (i-1)/2), fmt.Sprintf("s%02d", i)
		tree[parent] = append(tree[parent], child)
	}
	g, rows = callGraph(tree, nil, nil)
	if len(g.Nodes) != 43 || len(rows) != 43 || len(g.Edges) != 42 {
		t.Errorf("tree: %d nodes, %d rows, %d edges; want 43, 43, 42", len(g.Nodes), len(rows), len(g.Edges))
	}
	seen := map[[2]string]bool{}
	for _, n := range g.Nodes {
		if seen[[2]string{n.X, n.Y}] {
			t.Errorf("two nodes at %s,%s", n.X, n.Y)
		}
		seen[[2]string{n.X, n.Y}] = true
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"cart":           "cart",
		"0,10,...,90%":   "0,10,...,90%",
		"1->2":           "'1->2'",
		"my app.yaml":    "'my app.yaml'",
		"it's":           `'it'\''s'`,
		"":               "''",
		"$(rm -rf /)":    "'$(rm -rf /)'",
		"examples/a.yml": "examples/a.yml",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{0, 1, 2, 3}, "0-3"},
		{[]int{6, 0, 1, 3, 1}, "0-1,3,6"},
	} {
		if got := cpuList(tc.in); got != tc.want {
			t.Errorf("cpuList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A run on a cluster is repeated without --placement: the scheduler placed
// its pods, and predict has no "cluster" placement to ask for.
func TestReproduceOnCluster(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want string // in the command; "" when no --placement
	}{
		{"cluster", ""},
		{"shared", "--placement shared"},
		{"dedicated", "--placement dedicated"},
	} {
		r := &Results{Target: "cart", Settings: Settings{Spec: "app.yaml", PlacementMode: tc.mode}}
		cmd, _ := reproduceResults("predict", r)
		if tc.want == "" && strings.Contains(cmd, "--placement") || tc.want != "" && !strings.Contains(cmd, tc.want) {
			t.Errorf("placement %s: %q, want %q", tc.mode, cmd, tc.want)
		}
	}
}

// report.html draws the call graph as counted, not the links rounds were
// sent along: an uninstrumented target linked to every service for its
// rounds is drawn alone; results of version 1, which have no counted
// graph, still draw theirs.
func TestCallGraphShowsOnlyCounted(t *testing.T) {
	tests := []struct {
		name      string
		version   int
		counted   map[string][]string
		wantEdges bool
	}{
		{"nothing counted", Version, nil, false},
		{"counted", Version, htmlDemoNeighbours(), true},
		{"version 1", 1, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := htmlSampleResults(KindPredict, "cart")
			r.Version = tt.version
			r.Neighbours = map[string][]string{"cart": {"catalog", "currency", "frontend"}, "catalog": {"cart"}, "currency": {"cart"}, "frontend": {"cart"}}
			r.CallGraph = tt.counted
			page, err := newResultsPage(r)
			if err != nil {
				t.Fatal(err)
			}
			edges := page.Graph != nil && len(page.Graph.Edges) > 0
			if edges != tt.wantEdges {
				t.Fatalf("graph drawn with edges %v, want %v (rows %+v)", edges, tt.wantEdges, page.GraphRows)
			}
		})
	}
}

// A flag's advice leaves out what the run already did: no "--pause cores"
// for a run that held cores, no dedicated placement for one that had it.
func TestFlagAdviceNamesWhatWasNotDone(t *testing.T) {
	tests := []struct {
		flag     string
		s        Settings
		want     string
		wantNot  string
		wantSame bool // the advice for nil settings
	}{
		{FlagMechanismCost, Settings{PauseMethod: "cores"}, "a larger --batch", "--pause cores", false},
		{FlagMechanismCost, Settings{PauseMethod: "signal"}, "--pause cores", "", true},
		{FlagSharedBound, Settings{PlacementMode: "dedicated"}, "check it with validate", "--placement dedicated", false},
		{FlagNoisy, Settings{PlacementMode: "shared"}, "dedicated cores", "", true},
		{FlagTargetStarved, Settings{}, "lower bound", "not the bottleneck", true},
	}
	for _, tt := range tests {
		t.Run(tt.flag+"/"+tt.s.PauseMethod+tt.s.PlacementMode, func(t *testing.T) {
			got := flagMeaningFor(tt.flag, &tt.s)
			if !strings.Contains(got, tt.want) || tt.wantNot != "" && strings.Contains(got, tt.wantNot) {
				t.Fatalf("%q: want %q and not %q", got, tt.want, tt.wantNot)
			}
			if (got == FlagMeaning(tt.flag)) != tt.wantSame {
				t.Fatalf("%q against the general %q: same %v, want %v", got, FlagMeaning(tt.flag), !tt.wantSame, tt.wantSame)
			}
		})
	}
}
