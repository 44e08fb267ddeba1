package report

// The figures of report.html: gonum/plot charts drawn to SVG and inlined,
// and the geometry of the hand-drawn ones (the gain bars and the call
// graph), which report.html.tmpl turns into SVG elements so that every
// label goes through html/template's escaping.

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The gonum/plot figures of the page are smaller than plot.svg, so that
// their text stays legible when a phone shrinks them to its width.
const (
	htmlPlotWidth            = 4.5 * vg.Inch
	htmlPlotHeight           = 3.2 * vg.Inch
	htmlPlotMargin vg.Length = 4 // points: room all round the chart
)

var (
	svgViewBox    = regexp.MustCompile(`viewBox="([0-9. ]+)"`)
	svgFontFamily = regexp.MustCompile(`font-family:([^;"]+)`)
)

// inlineSVG draws p with vgsvg and returns the <svg> element, ready to be
// inlined in HTML: without the XML prolog, the fixed width and height and
// the namespaces, so that it scales to its container through its viewBox,
// and with fallbacks after the Liberation fonts gonum/plot measures text
// with. label is the element's accessible name.
func inlineSVG(p *plot.Plot, label string) (template.HTML, error) {
	htmlPlotStyle(p)
	c := vgsvg.New(htmlPlotWidth, htmlPlotHeight)
	// A margin all round, so that the browser's box of the text along
	// the edges (its font's full height) stays inside the figure.
	m := htmlPlotMargin
	p.Draw(draw.Crop(draw.New(c), m, -m, m, -m))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	start := strings.Index(s, "<svg")
	if start < 0 {
		return "", errors.New("vgsvg wrote no <svg> element")
	}
	s = s[start:]
	end := strings.IndexByte(s, '>')
	if end < 0 {
		return "", errors.New("vgsvg wrote an unterminated <svg> tag")
	}
	viewBox := fmt.Sprintf("0 0 %g %g", htmlPlotWidth.Points(), htmlPlotHeight.Points())
	if m := svgViewBox.FindStringSubmatch(s[:end]); m != nil {
		viewBox = m[1]
	}
	body := svgFontFamily.ReplaceAllStringFunc(s[end+1:], func(m string) string {
		family := strings.TrimPrefix(m, "font-family:")
		generic := "'Liberation Sans',Arimo,Arial,Helvetica,sans-serif"
		switch {
		case strings.Contains(family, "Serif"):
			generic = "'Liberation Serif',Tinos,'Times New Roman',Times,serif"
		case strings.Contains(family, "Mono"):
			generic = "'Liberation Mono',Cousine,'Courier New',monospace"
		}
		return "font-family:" + generic
	})
	// vgsvg escapes every text it draws (html.EscapeString), and the rest
	// is numbers and colours: the element is safe to inline.
	return template.HTML(`<svg viewBox="` + viewBox + `" role="img" aria-label="` +
		template.HTMLEscapeString(label) + `">` + "\n" + body), nil
}

// htmlPlotStyle sets p's text a little larger than plot.svg's, for the
// smaller canvas of the page, spaces its legend entries apart by more
// than the browser's box of their text (the font's full height) reaches
// past gonum/plot's, and fits a title or an axis label too long for the
// figure (a long service name in it) to it.
func htmlPlotStyle(p *plot.Plot) {
	p.Title.TextStyle.Font.Size = vg.Points(13)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(12)
		a.Tick.Label.Font.Size = vg.Points(11)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = vg.Points(3.5)
	w, h := htmlPlotWidth-2*htmlPlotMargin, htmlPlotHeight-2*htmlPlotMargin
	p.Title.Text = fitLabel(&p.Title.TextStyle, p.Title.Text, w, vg.Points(11.5))
	// The axis labels are centred on the axes, which the other axis
	// and the title leave shorter than the figure; no smaller than the
	// ticks' labels.
	p.X.Label.Text = fitLabel(&p.X.Label.TextStyle, p.X.Label.Text, 0.75*w, vg.Points(11))
	p.Y.Label.Text = fitLabel(&p.Y.Label.TextStyle, p.Y.Label.Text, 0.7*h, vg.Points(11))
}

// fitLabel fits the one-line text s to width in sty: as it is if it fits,
// else in a smaller font, down to smallest, and if that is not enough,
// with its longest word cut in the middle until it fits. (Lines that
// gonum/plot sets one em apart would run into each other in a browser.)
func fitLabel(sty *text.Style, s string, width, smallest vg.Length) string {
	w := sty.Width(s)
	if w <= width {
		return s
	}
	sty.Font.Size = max(smallest, sty.Font.Size*width/w)
	for sty.Width(s) > width {
		words := strings.Split(s, " ")
		longest := 0
		for i, word := range words {
			if utf8.RuneCountInString(word) > utf8.RuneCountInString(words[longest]) {
				longest = i
			}
		}
		r := []rune(strings.Replace(words[longest], "…", "", 1))
		if len(r) < 3 {
			break
		}
		words[longest] = string(r[:(len(r)-1)/2]) + "…" + string(r[(len(r)-1)/2+1:])
		s = strings.Join(words, " ")
	}
	return s
}

// hasErrors reports whether some point of r has a prediction error.
func hasErrors(r *Results) bool {
	for _, p := range r.Points {
		if p.ErrorPct != nil && finite(*p.ErrorPct) {
			return true
		}
	}
	return false
}

// newErrorPlot draws the prediction error of every validated point against
// its reduction, around a zero line.
func newErrorPlot(r *Results) (*plot.Plot, error) {
	p := newFramedPlot(fmt.Sprintf("%s: prediction error of %s", r.App, r.Target),
		fmt.Sprintf("reduction of %s's CPU time per call (%%)", r.Target), "(predicted − true) / true (%)")

	var xys, flagged plotter.XYs
	ylo, yhi := 0.0, 0.0
	for _, pt := range sortedPoints(r) {
		if pt.ErrorPct == nil || !finite(*pt.ErrorPct) || !finite(pt.ReductionPct) {
			continue
		}
		xy := plotter.XY{X: pt.ReductionPct, Y: *pt.ErrorPct}
		xys = append(xys, xy)
		if len(pt.Flags) > 0 {
			flagged = append(flagged, xy)
		}
		ylo, yhi = min(ylo, xy.Y), max(yhi, xy.Y)
	}
	if len(xys) == 0 {
		return p, nil
	}
	xlo, xhi := xys[0].X, xys[len(xys)-1].X
	if xhi <= xlo {
		xlo, xhi = xlo-1, xhi+1
	}
	zero, err := baselineLine(xlo, xhi, 0)
	if err != nil {
		return nil, err
	}
	p.Add(zero)
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, err
	}
	line.Color = predictedColor
	points.Color, points.Shape, points.Radius = predictedColor, draw.CircleGlyph{}, vg.Points(3)
	p.Add(line, points)
	if _, err := addFlagged(p, flagged); err != nil {
		return nil, err
	}
	pad := 0.15 * max(yhi-ylo, 2)
	p.Y.Min, p.Y.Max = ylo-pad, yhi+pad
	padX(p, xlo, xhi)
	return p, nil
}

// gainPalette colours the services of the gain chart, in rank order; the
// services beyond it are drawn in grey without a legend entry each.
var gainPalette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x17, 0xbe, 0xcf, 0xff},
}

var gainGlyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{},
}

// newGainPlot draws every ranked service's predicted gain over its
// baseline against the reduction of its CPU time per call. ok is false
// when no service has a feasible point.
func newGainPlot(r *Rank) (p *plot.Plot, ok bool, err error) {
	p = newFramedPlot(fmt.Sprintf("%s: what if each service were faster", r.App),
		"reduction of the service's CPU time per call (%)", "predicted throughput gain (%)")
	topLeftLegend(p)
	ylo, yhi := 0.0, 0.0
	xlo, xhi := math.Inf(1), math.Inf(-1)
	gainers := 0
	for _, e := range r.Entries {
		if e.Verdict == VerdictGain {
			gainers++
		}
	}
	// The services that gain and the two after them have colours of
	// their own (four at least, as many as the palette at most), so that
	// the legend of many services leaves room for their curves.
	styles := gainStyles{limit: min(len(gainPalette), max(4, gainers+2))}
	for _, e := range r.Entries {
		s := gainSeries(e.Results)
		if len(s.XYs) == 0 {
			continue
		}
		for _, xy := range s.XYs {
			xlo, xhi = min(xlo, xy.X), max(xhi, xy.X)
		}
		lo, hi := s.extent()
		ylo, yhi = min(ylo, lo), max(yhi, hi)
		c, glyph, name := styles.next(e.Service)
		if err := addSeries(p, &s, name, c, glyph); err != nil {
			return nil, false, err
		}
		ok = true
	}
	if !ok {
		return p, false, nil
	}
	if err := finishGainPlot(p, xlo, xhi, ylo, yhi, styles.legendRows()); err != nil {
		return nil, false, err
	}
	return p, true, nil
}

// gainSeries is the predicted gain over the baseline (%) of res's feasible
// points against their reduction, with their 90% intervals as error bars;
// empty for no results or no usable baseline.
func gainSeries(res *Results) series {
	var s series
	if res == nil || res.Baseline.RPS <= 0 || !finite(res.Baseline.RPS) {
		return s
	}
	base := res.Baseline.RPS
	for _, pt := range sortedPoints(res) {
		if pt.Infeasible() || !finite(pt.PredictedRPS) || !finite(pt.ReductionPct) {
			continue
		}
		runs := usable(errorBars(pt))
		for i := range runs {
			runs[i] = (runs[i]/base - 1) * 100
		}
		s.add(pt.ReductionPct, (pt.PredictedRPS/base-1)*100, runs)
	}
	return s
}

// gainStyles hands out the services' colours and glyphs in the gain chart,
// in rank order: the palette's to the first limit services, then grey.
type gainStyles struct {
	limit  int  // services that may have a colour of their own
	named  int  // services with a colour and a legend entry of their own
	greyed bool // some service was drawn in grey
}

// next is the colour, glyph and legend name of the next service drawn: its
// own, or grey beyond the palette, where only the first grey one has a
// legend entry ("other services").
func (g *gainStyles) next(service string) (color.Color, draw.GlyphDrawer, string) {
	if g.named < min(g.limit, len(gainPalette)) {
		i := g.named
		g.named++
		return gainPalette[i], gainGlyphs[i], service
	}
	name := ""
	if !g.greyed {
		name, g.greyed = "other services", true
	}
	return color.Gray{Y: 0xa0}, draw.CircleGlyph{}, name
}

// legendRows is how many lines the gain chart's legend has, the baseline's
// included.
func (g *gainStyles) legendRows() float64 {
	rows := float64(g.named + 1)
	if g.greyed {
		rows++
	}
	return rows
}

// finishGainPlot draws the gain chart's zero line over the reductions
// xlo..xhi (and 0) and sets its axes for gains ylo..yhi, leaving room at
// the top for the legend's rows.
func finishGainPlot(p *plot.Plot, xlo, xhi, ylo, yhi, rows float64) error {
	if xhi <= xlo {
		xlo, xhi = xlo-1, xhi+1
	}
	zero, err := baselineLine(min(0, xlo), xhi, 0)
	if err != nil {
		return err
	}
	p.Add(zero)
	p.Legend.Add("baseline (no gain)", zero)

	span := yhi - ylo
	if span <= 0 {
		span = 1
	}
	f := min(0.6, 0.05+rows*0.06)
	p.Y.Min = ylo - 0.08*span
	p.Y.Max = yhi + span*f/(1-f)
	padX(p, min(0, xlo), xhi)
	return nil
}

// htmlBars is the geometry of the gain chart of a ranking: one row per
// service in rank order, its name on a line of its own above a bar of the
// gain at the largest reduction with its interval as whiskers, and the
// gain in figures right of the bars, so that no name runs into a number
// however many services there are.
type htmlBars struct {
	Width, Height string
	Left, Right   string // the bars' area
	Zero          string // x of 0%
	AxisY, TickY  string // the axis line and its labels
	Ticks         []htmlTick
	Rows          []htmlBarRow
}

// htmlTick is a grid line of the gain chart and its label ("" where the
// label would run into another or past the edge).
type htmlTick struct{ X, Label string }

type htmlBarRow struct {
	Label, Value, Title, Class string
	LabelY                     string
	ValueX, ValueY             string
	HasBar                     bool
	BarX, BarY, BarW, BarH     string
	ErrX1, ErrX2, ErrY         string
	CapY1, CapY2               string
}

// Layout of the gain bars, in SVG user units (CSS pixels at full size),
// and the sizes of its text (report.html.tmpl's CSS).
const (
	barsWidth   = 420.0
	barsMargin  = 8.0
	barsRow     = 46.0
	barsBar     = 16.0
	barsGap     = 10.0 // between the bars and the figures right of them
	barsLabelPx = 14.0 // bold
	barsValuePx = 13.0
	barsTickPx  = 12.0
)

// gainBars lays out the gain chart of r, or returns nil for no entries.
func gainBars(r *Rank) *htmlBars {
	if len(r.Entries) == 0 {
		return nil
	}
	lo, hi := 0.0, 0.0
	measured := func(e RankEntry) bool {
		return (e.Verdict == VerdictGain || e.Verdict == VerdictNoGain) && finite(e.GainPct) && finite(e.GainStdErrPct)
	}
	left, right := barsMargin, barsWidth-barsMargin
	valueW := 0.0
	for _, e := range r.Entries {
		if measured(e) {
			elo, ehi := e.GainRange()
			lo, hi = min(lo, elo), max(hi, ehi)
			valueW = max(valueW, textWidth(barValue(e, 1), barsValuePx, false))
		}
	}
	valueW = min(valueW, 0.45*(right-left))
	if hi-lo <= 0 {
		hi = 1
	}
	pad := 0.04 * (hi - lo)
	lo, hi = lo-pad, hi+pad
	barsRight := right
	if valueW > 0 {
		barsRight = right - valueW - barsGap
	}
	x := func(v float64) float64 { return left + (v-lo)/(hi-lo)*(barsRight-left) }

	b := &htmlBars{Width: svgNum(barsWidth), Left: svgNum(left), Right: svgNum(barsRight), Zero: svgNum(x(0))}
	y := barsMargin
	for _, e := range r.Entries {
		prefix := fmt.Sprintf("%d. ", e.Rank)
		row := htmlBarRow{
			Label:  prefix + fitText(e.Service, right-left-textWidth(prefix, barsLabelPx, true), barsLabelPx, true),
			Class:  verdictClass(e.Verdict),
			LabelY: svgNum(y + 14),
			ValueY: svgNum(y + 35),
			Title:  e.Service + ": " + e.Verdict,
		}
		if e.Reason != "" {
			row.Title += " — " + e.Reason
		}
		if measured(e) {
			row.Value, row.ValueX = barValueFit(e, valueW), svgNum(right)
			row.Title += ": " + e.GainText()
			barY := y + 22
			x0, x1 := x(0), x(e.GainPct)
			row.HasBar = true
			row.BarX, row.BarW = svgNum(min(x0, x1)), svgNum(max(math.Abs(x1-x0), 1))
			row.BarY, row.BarH = svgNum(barY), svgNum(barsBar)
			elo, ehi := e.GainRange()
			row.ErrX1, row.ErrX2 = svgNum(x(elo)), svgNum(x(ehi))
			row.ErrY = svgNum(barY + barsBar/2)
			row.CapY1, row.CapY2 = svgNum(barY+2), svgNum(barY+barsBar-2)
		} else {
			// No bar: the verdict in words where the bar would be.
			row.Value = strings.ReplaceAll(e.Verdict, "-", " ")
			row.ValueX = svgNum(left)
		}
		b.Rows = append(b.Rows, row)
		y += barsRow
	}
	b.AxisY = svgNum(y + 2)
	b.TickY = svgNum(y + 18)
	b.Ticks = barTicks(lo, hi, x)
	b.Height = svgNum(y + 26)
	return b
}

// barValue is e's gain in figures for the gain chart: the gain and its
// 90% interval in brackets ("+12.3% (+5.0 to +20.1)", "+12.3% (≥ +5.0)"
// for a lower bound), or the gain ± its standard error; the interval's
// ends (or the standard error) with digits decimals.
func barValue(e RankEntry, digits int) string {
	switch {
	case e.GainLowPct == nil:
		return fmt.Sprintf("%+.1f%% ± %.*f", e.GainPct, digits, e.GainStdErrPct)
	case e.GainHighPct == nil:
		return fmt.Sprintf("%+.1f%% (≥ %+.*f)", e.GainPct, digits, *e.GainLowPct)
	}
	return fmt.Sprintf("%+.1f%% (%+.*f to %+.*f)", e.GainPct, digits, *e.GainLowPct, digits, *e.GainHighPct)
}

// barValueFit is barValue(e, 1) if it fits width at the chart's size,
// else the same with whole percents ("+106.8% (+87 to +127)"), else the
// gain alone: a figure is never cut in the middle (the table and the
// bar's title give it in full).
func barValueFit(e RankEntry, width float64) string {
	for _, f := range []string{barValue(e, 1), barValue(e, 0), fmt.Sprintf("%+.1f%%", e.GainPct)} {
		if textWidth(f, barsValuePx, false) <= width {
			return f
		}
	}
	return fitText(fmt.Sprintf("%+.1f%%", e.GainPct), width, barsValuePx, false)
}

// barTicks are the gain chart's grid lines over lo..hi, about five at
// round values (0 among them where it is in range), x placing them,
// labelled but where a label would run into the one before it or past the
// chart's edge.
func barTicks(lo, hi float64, x func(float64) float64) []htmlTick {
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/5)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if (hi-lo)/(m*step) <= 6 {
			step *= m
			break
		}
	}
	var ticks []htmlTick
	end := math.Inf(-1) // where the last label drawn ends
	for k := math.Ceil(lo / step); k*step <= hi; k++ {
		v := math.Round(k*step*1e6) / 1e6
		if v == 0 {
			v = 0 // not -0
		}
		label := strconv.FormatFloat(v, 'f', -1, 64) + "%"
		if v > 0 {
			label = "+" + label
		}
		tx := x(v)
		half := textWidth(label, barsTickPx, false) / 2
		if tx-half < end+6 || tx-half < 1 || tx+half > barsWidth-1 {
			label = ""
		} else {
			end = tx + half
		}
		ticks = append(ticks, htmlTick{X: svgNum(tx), Label: label})
	}
	return ticks
}

// htmlGraph is the geometry of the call graph: services in layers from
// left to right, breadth first from the most connected service, or, where
// that would be too wide for a phone, a list of them, each under the one
// it was reached from.
type htmlGraph struct {
	Width, Height      string
	MinWidth, MaxWidth string // CSS pixels: how far a narrow screen shrinks it, how far a wide one grows it
	List               bool   // drawn as a list
	Nodes              []htmlNode
	Edges              []string // SVG path data
}

type htmlNode struct {
	X, Y, W, H            string
	TextX, NameY, DetailY string
	Name, Detail, Title   string
	Class                 string
}

// graphNodeInfo is what is known about a service of the graph: its calls
// per request and CPU per call (when Known), and its CSS class.
type graphNodeInfo struct {
	Known    bool
	C1, U1US float64
	Class    string
}

// Layout of the call graph, in SVG user units, and the sizes of its text
// (report.html.tmpl's CSS).
const (
	nodeW        = 184.0 // the narrowest node
	nodeMaxW     = 268.0 // the widest: longer names are shortened
	nodeH        = 44.0
	nodeGapX     = 56.0
	nodeGapY     = 14.0
	nodePad      = 10.0 // left and right of a node's text
	nodeNamePx   = 14.0 // bold
	nodeDetailPx = 12.0
	graphMargin  = 8.0
	graphArc     = 36.0 // room right of the last layer for arcs within a layer
	// graphLayeredMax is the widest call graph drawn in layers: wider, it
	// would shrink its text below about 10 px on a phone, and it is drawn
	// as a list.
	graphLayeredMax = 500.0
	listIndent      = 24.0 // per level of the list
	listIndentMax   = 72.0 // all levels together
	listGap         = 6.0
)

// callGraph lays out the undirected graph adj, with the services in extra
// added as nodes even when they have no edge, and returns its geometry and
// its table; nil when there is no service at all.
func callGraph(adj map[string][]string, extra []string, info map[string]graphNodeInfo) (*htmlGraph, []htmlGraphRow) {
	edges := graphEdges(adj, extra)
	if len(edges) == 0 {
		return nil, nil
	}
	names := slices.Sorted(maps.Keys(edges))
	layers, layer := graphLayers(names, edges)
	orderLayers(layers, layer, edges)
	w := nodeWidth(names, info)
	var g *htmlGraph
	if layeredWidth(len(layers), w) <= graphLayeredMax {
		var at map[string]graphPoint
		g, at = placeNodes(layers, info, w)
		g.Edges = edgePaths(names, edges, layer, at, w)
	} else {
		g = listGraph(names, layers, layer, edges, info, w)
	}
	return g, graphRows(names, edges, info)
}

// nodeWidth is how wide the call graph's nodes are drawn: wide enough for
// every name and detail line, from nodeW to nodeMaxW.
func nodeWidth(names []string, info map[string]graphNodeInfo) float64 {
	w := 0.0
	for _, s := range names {
		w = max(w, textWidth(s, nodeNamePx, true), textWidth(nodeDetail(info[s]), nodeDetailPx, false))
	}
	return min(max(w+2*nodePad, nodeW), nodeMaxW)
}

// layeredWidth is the width of a call graph of n layers of nodes w wide.
func layeredWidth(n int, w float64) float64 {
	return 2*graphMargin + float64(n)*w + float64(n-1)*nodeGapX + graphArc
}

// graphEdges makes adj undirected: every service of adj or extra maps to
// the set of its neighbours, without self-loops and the empty name.
func graphEdges(adj map[string][]string, extra []string) map[string]map[string]bool {
	edges := map[string]map[string]bool{}
	link := func(a, b string) {
		if edges[a] == nil {
			edges[a] = map[string]bool{}
		}
		if a != b && b != "" {
			edges[a][b] = true
		}
	}
	for a, ns := range adj {
		link(a, "")
		for _, b := range ns {
			link(a, b)
			link(b, a)
		}
	}
	for _, s := range extra {
		link(s, "")
	}
	delete(edges, "")
	for _, ns := range edges {
		delete(ns, "")
	}
	return edges
}

// graphRows is the table of the call graph: one row per service in names,
// with its neighbours and, when known, its calls and CPU per call.
func graphRows(names []string, edges map[string]map[string]bool, info map[string]graphNodeInfo) []htmlGraphRow {
	var rows []htmlGraphRow
	for _, s := range names {
		row := htmlGraphRow{Service: s, Neighbours: orDash(strings.Join(slices.Sorted(maps.Keys(edges[s])), ", ")), Calls: "–", CPU: "–"}
		if in := info[s]; in.Known {
			row.Calls, row.CPU = num3(in.C1), fmt.Sprintf("%.1f", in.U1US)
		}
		rows = append(rows, row)
	}
	return rows
}

// graphLayers puts the services in layers, breadth first from the most
// connected service not yet placed, so that an entry service (the one
// that calls the others) comes first; layer maps a service to its layer.
func graphLayers(names []string, edges map[string]map[string]bool) (layers [][]string, layer map[string]int) {
	byDegree := slices.Clone(names)
	slices.SortStableFunc(byDegree, func(a, b string) int { return len(edges[b]) - len(edges[a]) })
	layer = map[string]int{}
	for _, root := range byDegree {
		if _, done := layer[root]; done {
			continue
		}
		layer[root] = 0
		queue := []string{root}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			for len(layers) <= layer[s] {
				layers = append(layers, nil)
			}
			layers[layer[s]] = append(layers[layer[s]], s)
			for _, n := range slices.Sorted(maps.Keys(edges[s])) {
				if _, done := layer[n]; !done {
					layer[n] = layer[s] + 1
					queue = append(queue, n)
				}
			}
		}
	}
	return layers, layer
}

// orderLayers sorts each layer after the first by the mean position of its
// neighbours in the one before (then by name), which keeps edges from
// crossing in trees.
func orderLayers(layers [][]string, layer map[string]int, edges map[string]map[string]bool) {
	pos := map[string]float64{}
	for i, s := range layers[0] {
		pos[s] = float64(i)
	}
	for k := 1; k < len(layers); k++ {
		bary := map[string]float64{}
		for _, s := range layers[k] {
			sum, n := 0.0, 0
			for nb := range edges[s] {
				if layer[nb] == k-1 {
					sum += pos[nb]
					n++
				}
			}
			if n > 0 {
				bary[s] = sum / float64(n)
			}
		}
		slices.SortStableFunc(layers[k], func(a, b string) int {
			if c := cmp.Compare(bary[a], bary[b]); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		for i, s := range layers[k] {
			pos[s] = float64(i)
		}
	}
}

// graphPoint is the top left corner of a node of the call graph.
type graphPoint struct{ x, y float64 }

// placeNodes sizes the call graph for its layers of nodes w wide, one
// column each, every column centred vertically, and returns it with its
// nodes and where each service's node is.
func placeNodes(layers [][]string, info map[string]graphNodeInfo, w float64) (*htmlGraph, map[string]graphPoint) {
	tallest := 0
	for _, l := range layers {
		tallest = max(tallest, len(l))
	}
	height := 2*graphMargin + float64(tallest)*nodeH + float64(tallest-1)*nodeGapY
	width := layeredWidth(len(layers), w)
	at := map[string]graphPoint{}
	g := &htmlGraph{Width: svgNum(width), Height: svgNum(height), MaxWidth: svgNum(max(width*1.25, 320))}
	g.MinWidth = svgNum(min(width, max(width*0.6, 320)))
	for k, l := range layers {
		colH := float64(len(l))*nodeH + float64(len(l)-1)*nodeGapY
		x := graphMargin + float64(k)*(w+nodeGapX)
		y0 := graphMargin + (height-2*graphMargin-colH)/2
		for i, s := range l {
			y := y0 + float64(i)*(nodeH+nodeGapY)
			at[s] = graphPoint{x, y}
			g.Nodes = append(g.Nodes, graphNode(s, x, y, w, info[s]))
		}
	}
	return g, at
}

// listGraph draws the call graph as a list, one row per service: each
// layer's services under the service of the layer before that they are
// first linked to (the one placed first), indented by layer, joined to it
// by an elbow, and every other link as an arc right of the list. Its
// nodes all end at the same x, so the deeper ones are narrower.
func listGraph(names []string, layers [][]string, layer map[string]int, edges map[string]map[string]bool, info map[string]graphNodeInfo, w float64) *htmlGraph {
	pos := map[string]int{}
	for _, l := range layers {
		for i, s := range l {
			pos[s] = i
		}
	}
	parent := map[string]string{}
	children := map[string][]string{}
	for k := 1; k < len(layers); k++ {
		for _, s := range layers[k] {
			best := ""
			for nb := range edges[s] {
				if layer[nb] == k-1 && (best == "" || pos[nb] < pos[best]) {
					best = nb
				}
			}
			parent[s] = best
			children[best] = append(children[best], s) // in the layer's order
		}
	}
	var rows []string
	var visit func(s string)
	visit = func(s string) {
		rows = append(rows, s)
		for _, c := range children[s] {
			visit(c)
		}
	}
	for _, s := range layers[0] {
		visit(s)
	}

	indent := listIndent
	if deepest := len(layers) - 1; deepest > 0 {
		indent = min(listIndent, listIndentMax/float64(deepest))
	}
	right := graphMargin + float64(len(layers)-1)*indent + w // where every node ends
	arcs := false
	for _, a := range names {
		for b := range edges[a] {
			arcs = arcs || parent[a] != b && parent[b] != a
		}
	}
	width := right + graphMargin
	if arcs {
		width += graphArc
	}
	height := 2*graphMargin + float64(len(rows))*nodeH + float64(len(rows)-1)*listGap
	g := &htmlGraph{List: true, Width: svgNum(width), Height: svgNum(height), MinWidth: svgNum(min(width, 300)), MaxWidth: svgNum(width)}
	at := map[string]graphPoint{}
	row := map[string]int{}
	for i, s := range rows {
		x := graphMargin + float64(layer[s])*indent
		y := graphMargin + float64(i)*(nodeH+listGap)
		at[s], row[s] = graphPoint{x, y}, i
		g.Nodes = append(g.Nodes, graphNode(s, x, y, right-x, info[s]))
	}
	for _, s := range rows {
		if p, ok := parent[s]; ok {
			pa, c := at[p], at[s]
			g.Edges = append(g.Edges, fmt.Sprintf("M%s %s V%s H%s", svgNum(pa.x+nodePad), svgNum(pa.y+nodeH), svgNum(c.y+nodeH/2), svgNum(c.x)))
		}
	}
	for _, a := range names {
		for _, b := range slices.Sorted(maps.Keys(edges[a])) {
			if a > b || parent[a] == b || parent[b] == a {
				continue
			}
			// The further apart, the further out, so that arcs nest.
			out := min(graphArc/0.75-4, 12+4*math.Abs(float64(row[a]-row[b])))
			ya, yb := at[a].y+nodeH/2, at[b].y+nodeH/2
			g.Edges = append(g.Edges, edgeCurve(right, ya, right+out, right, yb))
		}
	}
	return g
}

// nodeDetail is the line under a measured service's name in the call
// graph: its calls per request and CPU per call; "" where it was not
// measured.
func nodeDetail(in graphNodeInfo) string {
	switch {
	case !in.Known:
		return ""
	case in.C1 > 0:
		return fmt.Sprintf("%s calls/req · %.0f µs/call", num3(in.C1), in.U1US)
	}
	return "not called"
}

// graphNode is the box, w wide, of service s at x, y: its name (shortened
// to fit), and below it its calls and CPU per call when known (otherwise
// the name alone, centred).
func graphNode(s string, x, y, w float64, in graphNodeInfo) htmlNode {
	node := htmlNode{
		X: svgNum(x), Y: svgNum(y), W: svgNum(w), H: svgNum(nodeH),
		TextX: svgNum(x + nodePad), NameY: svgNum(y + 18), DetailY: svgNum(y + 35),
		Name: fitText(s, w-2*nodePad, nodeNamePx, true), Title: s, Class: orPlaceholder(in.Class, "n-other"),
	}
	if !in.Known {
		node.NameY = svgNum(y + nodeH/2 + 5) // alone: centred
		return node
	}
	node.Detail = fitText(nodeDetail(in), w-2*nodePad, nodeDetailPx, false)
	node.Title += ": " + nodeDetail(in)
	return node
}

// edgePaths draws every edge once, in the order of names: between layers
// from the right side of one node (w wide) to the left side of the other,
// within a layer as an arc right of it.
func edgePaths(names []string, edges map[string]map[string]bool, layer map[string]int, at map[string]graphPoint, w float64) []string {
	var paths []string
	for _, a := range names {
		for _, b := range slices.Sorted(maps.Keys(edges[a])) {
			if a > b {
				continue
			}
			pa, pb := at[a], at[b]
			switch {
			case layer[a] == layer[b]:
				x := pa.x + w
				paths = append(paths, edgeCurve(x, pa.y+nodeH/2, x+graphArc, x, pb.y+nodeH/2))
			default:
				if layer[a] > layer[b] {
					pa, pb = pb, pa
				}
				x1, x2 := pa.x+w, pb.x
				paths = append(paths, edgeCurve(x1, pa.y+nodeH/2, (x1+x2)/2, x2, pb.y+nodeH/2))
			}
		}
	}
	return paths
}

// edgeCurve is the SVG path of a cubic curve from (x1, y1) to (x2, y2)
// whose control points are at x cx, level with either end.
func edgeCurve(x1, y1, cx, x2, y2 float64) string {
	return fmt.Sprintf("M%s %s C%s %s %s %s %s %s",
		svgNum(x1), svgNum(y1), svgNum(cx), svgNum(y1), svgNum(cx), svgNum(y2), svgNum(x2), svgNum(y2))
}

// svgNum formats a coordinate with at most one decimal.
func svgNum(x float64) string {
	return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64)
}

// The advance widths of DejaVu Sans and DejaVu Sans Bold, in thousandths
// of an em, of the printable ASCII characters (space to ~) and then of
// textExtra: the widest of the sans-serif fonts a browser is likely to
// pick for the page's font list, so that a text measured by textWidth
// is no narrower on the screen.
var (
	dejaVuSans = [...]uint16{
		318, 401, 460, 838, 637, 951, 780, 275, 391, 391, 500, 838, 318, 361, 318, 337, 637, 637, 637,
		637, 637, 637, 637, 637, 637, 637, 337, 337, 838, 838, 838, 531, 1000, 685, 687, 699, 771, 632,
		576, 775, 752, 295, 295, 656, 558, 863, 749, 788, 604, 788, 695, 635, 611, 732, 685, 989, 686,
		611, 686, 391, 337, 391, 838, 500, 500, 613, 635, 550, 635, 616, 353, 635, 634, 278, 278, 580,
		278, 975, 634, 612, 635, 635, 412, 521, 393, 634, 592, 818, 592, 592, 525, 637, 337, 637, 838,
		637, 318, 1000, 838, 838, 838, 838, 500,
	}
	dejaVuSansBold = [...]uint16{
		349, 457, 521, 838, 696, 1002, 873, 307, 458, 458, 523, 838, 380, 416, 380, 366, 696, 696, 696,
		696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838, 838, 581, 1000, 774, 763, 734, 831, 684,
		684, 821, 837, 373, 373, 775, 638, 996, 837, 851, 733, 851, 771, 721, 683, 813, 774, 1104, 771,
		725, 726, 458, 366, 458, 838, 500, 500, 675, 716, 593, 716, 679, 436, 716, 712, 343, 343, 666,
		343, 1042, 712, 688, 716, 716, 494, 596, 479, 712, 652, 924, 646, 652, 583, 712, 366, 712, 838,
		736, 380, 1000, 838, 838, 838, 838, 500,
	}
	textExtra = []rune("µ·…−±≥×–")
)

// textWidth is how wide s is set in the page's sans-serif font at size
// px, bold or not, at most: DejaVu Sans's widths, and an em for a
// character it does not list.
func textWidth(s string, px float64, bold bool) float64 {
	widths := dejaVuSans[:]
	if bold {
		widths = dejaVuSansBold[:]
	}
	em := 0
	for _, r := range s {
		switch i := slices.Index(textExtra, r); {
		case r >= ' ' && r <= '~':
			em += int(widths[r-' '])
		case i >= 0:
			em += int(widths[95+i])
		default:
			em += 1000
		}
	}
	return float64(em) / 1000 * px
}

// fitText shortens s to fit width when set at size px (textWidth),
// cutting it in the middle, where names of services differ least
// ("svc-search-recom…ranker-32"); s when it fits.
func fitText(s string, width, px float64, bold bool) string {
	if textWidth(s, px, bold) <= width {
		return s
	}
	r := []rune(s)
	for keep := len(r) - 1; keep > 0; keep-- {
		head := (keep + 1) / 2
		cut := string(r[:head]) + "…" + string(r[len(r)-(keep-head):])
		if textWidth(cut, px, bold) <= width {
			return cut
		}
	}
	return "…"
}
