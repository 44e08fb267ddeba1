package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refDefRE  = regexp.MustCompile(`(?m)^\s*\[[^\]]+\]:\s*(\S+)`)
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	idRE      = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	codeRE    = regexp.MustCompile("`[^`]*`")
)

// Broken is one link that goes nowhere.
type Broken struct {
	Page, Link, Why string
	Line            int
}

func (b Broken) String() string { return fmt.Sprintf("%s:%d: %s: %s", b.Page, b.Line, b.Link, b.Why) }

// Check lists the broken relative links of the Markdown pages given.
// Links with a scheme (https:, mailto:) are not followed.
func Check(pages []string) ([]Broken, error) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		a, err := pageAnchors(page)
		anchors[page] = a
		return a, err
	}
	var out []Broken
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			return nil, err
		}
		for i, line := range proseLines(string(data)) {
			for _, target := range links(line) {
				if b, ok := check(page, target, anchorsOf); !ok {
					b.Line = i + 1
					out = append(out, b)
				}
			}
		}
	}
	return out, nil
}

// check follows one link of page.
func check(page, target string, anchorsOf func(string) (map[string]bool, error)) (Broken, bool) {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return Broken{}, true
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := page
	if path != "" {
		dest = filepath.Join(filepath.Dir(page), path)
		if _, err := os.Stat(dest); err != nil {
			return Broken{Page: page, Link: target, Why: "no such file"}, false
		}
	}
	if anchor == "" || filepath.Ext(dest) != ".md" {
		return Broken{}, true
	}
	a, err := anchorsOf(dest)
	if err != nil {
		return Broken{Page: page, Link: target, Why: err.Error()}, false
	}
	if !a[anchor] {
		return Broken{Page: page, Link: target, Why: "no heading or id " + anchor + " in " + dest}, false
	}
	return Broken{}, true
}

// proseLines is the page's lines with fenced and indented code blocks
// blanked (their brackets are not links), line numbers kept.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced || strings.HasPrefix(l, "    ") && !strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "|") && !strings.HasPrefix(t, "*") {
			lines[i] = ""
		}
	}
	return lines
}

// links lists the link targets of a line, inline code left out.
func links(line string) []string {
	line = codeRE.ReplaceAllString(line, "")
	var out []string
	for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
		out = append(out, strings.Trim(m[1], "<>"))
	}
	for _, m := range refDefRE.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	return out
}

// pageAnchors lists the anchors of a page: its headings' slugs, as
// GitHub makes them (numbered -1, -2, ... where they repeat), and
// explicit <a id> or <a name>.
func pageAnchors(page string) (map[string]bool, error) {
	data, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(string(data)) {
		if m := headingRE.FindStringSubmatch(line); m != nil {
			s := Slug(m[2])
			if n := seen[s]; n > 0 {
				out[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
		for _, m := range idRE.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	return out, nil
}

// Slug is a heading's anchor as GitHub makes it: lower case, inline
// markup and punctuation dropped but for hyphens and underscores, spaces
// made hyphens.
func Slug(heading string) string {
	heading = strings.ToLower(heading)
	var b strings.Builder
	for _, r := range heading {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
