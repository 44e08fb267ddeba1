package report

import (
	"fmt"
	"strings"
	"testing"
)

// The geometry of the labels of report.html's figures, as the browser
// lays them out (browser_test.go collects the boxes): no two labels of a
// figure may overlap, and none may leave its figure, its node of the call
// graph or the page.

// labelTolerance is how far, in CSS pixels, two labels may overlap or a
// label may go past a box before it counts: the boxes are of the glyphs'
// full em height, so lines set close together touch.
const labelTolerance = 1.0

// labelRect is a box in CSS pixels, in the page's coordinates.
type labelRect struct {
	X, Y, W, H float64
}

func (r labelRect) String() string {
	return fmt.Sprintf("(%.0f,%.0f %.0f×%.0f)", r.X, r.Y, r.W, r.H)
}

// svgFigure is one figure of the page: the box of its <svg> and of every
// text in it.
type svgFigure struct {
	Name   string     `json:"name"`
	Box    labelRect  `json:"box"`
	Labels []svgLabel `json:"labels"`
}

// svgLabel is one text of a figure; Node is the box of the call graph's
// node it labels, if it is in one.
type svgLabel struct {
	Text string     `json:"text"`
	Box  labelRect  `json:"box"`
	Node *labelRect `json:"node,omitempty"`
}

// overlaps reports whether a and b overlap by more than tol both across
// and down.
func overlaps(a, b labelRect, tol float64) bool {
	w := min(a.X+a.W, b.X+b.W) - max(a.X, b.X)
	h := min(a.Y+a.H, b.Y+b.H) - max(a.Y, b.Y)
	return w > tol && h > tol
}

// outside reports whether a goes past box by more than tol on some side.
func outside(a, box labelRect, tol float64) bool {
	return a.X < box.X-tol || a.Y < box.Y-tol || a.X+a.W > box.X+box.W+tol || a.Y+a.H > box.Y+box.H+tol
}

// labelProblems lists what is wrong with the labels of figs on a page
// pageWidth pixels wide: two labels of a figure that overlap, a label
// that leaves its figure, its node or the page's width.
func labelProblems(figs []svgFigure, pageWidth float64) []string {
	var out []string
	for _, f := range figs {
		for i, a := range f.Labels {
			switch {
			case outside(a.Box, f.Box, labelTolerance):
				out = append(out, fmt.Sprintf("%s: label %q %v leaves the figure %v", f.Name, a.Text, a.Box, f.Box))
			case a.Node != nil && outside(a.Box, *a.Node, labelTolerance):
				out = append(out, fmt.Sprintf("%s: label %q %v leaves its node %v", f.Name, a.Text, a.Box, *a.Node))
			}
			if a.Box.X < -labelTolerance || a.Box.X+a.Box.W > pageWidth+labelTolerance {
				out = append(out, fmt.Sprintf("%s: label %q %v leaves the page's %.0f px", f.Name, a.Text, a.Box, pageWidth))
			}
			for _, b := range f.Labels[i+1:] {
				if overlaps(a.Box, b.Box, labelTolerance) {
					out = append(out, fmt.Sprintf("%s: labels %q %v and %q %v overlap", f.Name, a.Text, a.Box, b.Text, b.Box))
				}
			}
		}
	}
	return out
}

// The check must catch what it is there for: labels on top of each
// other, a label past its figure's edge, its node's or the page's, and
// leave alone labels that only touch.
func TestLabelProblems(t *testing.T) {
	// A figure wider than the page, as a call graph that scrolls.
	box := labelRect{0, 0, 500, 300}
	label := func(text string, x, y, w, h float64) svgLabel {
		return svgLabel{Text: text, Box: labelRect{x, y, w, h}}
	}
	inNode := func(l svgLabel, node labelRect) svgLabel {
		l.Node = &node
		return l
	}
	tests := []struct {
		name   string
		labels []svgLabel
		want   []string // each a problem's substring; none: no problem
	}{
		{"apart", []svgLabel{label("a", 10, 10, 100, 16), label("b", 10, 30, 100, 16)}, nil},
		{"touching rows", []svgLabel{label("a", 10, 10, 100, 16), label("b", 10, 26, 100, 16)}, nil},
		{"within the tolerance", []svgLabel{label("a", 10, 10, 100, 16), label("b", 109, 10, 100, 16)}, nil},
		{"on top of each other", []svgLabel{label("a", 10, 10, 100, 16), label("b", 10, 10, 100, 16)}, []string{`labels "a"`}},
		{"side by side, running into each other", []svgLabel{label("name", 10, 10, 200, 16), label("+60%", 180, 12, 80, 14)}, []string{`labels "name" (10,10 200×16) and "+60%"`}},
		{"rows two pixels into each other", []svgLabel{label("a", 10, 10, 100, 16), label("b", 60, 24, 100, 16)}, []string{`labels "a"`}},
		{"one inside another", []svgLabel{label("long", 10, 10, 300, 20), label("x", 50, 14, 10, 10)}, []string{`labels "long"`}},
		{"past the right edge", []svgLabel{label("a", 450, 10, 60, 16)}, []string{`label "a" (450,10 60×16) leaves the figure`, "leaves the page's 390 px"}},
		{"above the top", []svgLabel{label("a", 10, -5, 60, 16)}, []string{"leaves the figure"}},
		{"past its node", []svgLabel{inNode(label("a", 10, 10, 190, 16), labelRect{5, 5, 184, 44})}, []string{"leaves its node"}},
		{"in its node", []svgLabel{inNode(label("a", 10, 10, 170, 16), labelRect{5, 5, 184, 44})}, nil},
		{"past the page", []svgLabel{label("a", 320, 10, 75, 16)}, []string{"leaves the page's 390 px"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := labelProblems([]svgFigure{{Name: "graph", Box: box, Labels: tt.labels}}, 390)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d: %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q, want %q in it", got[i], w)
				}
			}
		})
	}
}

// TestBarValueFit: a gain's figures in the gain chart are never cut in
// the middle of a number: the interval's ends lose their decimals first,
// then the interval goes.
func TestBarValueFit(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	wide := RankEntry{GainPct: 106.8, GainStdErrPct: 3.9, GainLowPct: f(86.6), GainHighPct: f(127.1)}
	bound := RankEntry{GainPct: 11.8, GainStdErrPct: 2, GainLowPct: f(-1.5)}
	se := RankEntry{GainPct: 12.3, GainStdErrPct: 4.25}
	for _, tc := range []struct {
		name  string
		e     RankEntry
		width float64
		want  string
	}{
		{"fits", wide, 1000, "+106.8% (+86.6 to +127.1)"},
		{"whole percent", wide, textWidth("+106.8% (+87 to +127)", barsValuePx, false), "+106.8% (+87 to +127)"},
		{"gain alone", wide, textWidth("+106.8%", barsValuePx, false) + 1, "+106.8%"},
		{"bound", bound, textWidth("+11.8% (≥ -2)", barsValuePx, false), "+11.8% (≥ -2)"},
		{"standard error", se, textWidth("+12.3% ± 4", barsValuePx, false), "+12.3% ± 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := barValueFit(tc.e, tc.width); got != tc.want {
				t.Errorf("barValueFit(width %.0f) = %q, want %q", tc.width, got, tc.want)
			}
		})
	}
}
