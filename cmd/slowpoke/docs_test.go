package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// flagPages says which page documents each command's flags, and where on
// it: the text from the first line that starts with from up to the next
// heading or bench paragraph.
var flagPages = []struct {
	args       []string
	page, from string
}{
	{[]string{"demo"}, "docs/cli.md", "## demo"},
	{[]string{"predict"}, "docs/cli.md", "## predict and validate"},
	{[]string{"validate"}, "docs/cli.md", "## predict and validate"},
	{[]string{"rank"}, "docs/cli.md", "## rank"},
	{[]string{"restore"}, "docs/cli.md", "## restore"},
	{[]string{"image"}, "docs/cli.md", "## image"},
	{[]string{"latency"}, "docs/latency.md", "## Flags"},
	{[]string{"pools"}, "docs/pools.md", "## Flags"},
	{[]string{"controller"}, "docs/controller.md", "# The controller"},
	{[]string{"agent"}, "docs/kubernetes.md", "## The node agent"},
	{[]string{"bench", "overhead"}, "docs/cli.md", "**`bench overhead`**"},
	{[]string{"bench", "pausecost"}, "docs/lab.md", "**`bench pausecost`**"},
	{[]string{"bench", "methods"}, "docs/lab.md", "**`bench methods`**"},
	{[]string{"bench", "pools"}, "docs/lab.md", "**`bench pools`**"},
	{[]string{"bench", "latency"}, "docs/lab.md", "**`bench latency`**"},
	{[]string{"bench", "accuracy"}, "docs/lab.md", "**`bench accuracy`**"},
	{[]string{"bench", "attach"}, "docs/lab.md", "**`bench attach`**"},
	{[]string{"bench", "placement"}, "docs/lab.md", "**`bench placement`**"},
	{[]string{"bench", "faults"}, "docs/lab.md", "**`bench faults`**"},
	{[]string{"bench", "rank"}, "docs/lab.md", "**`bench rank`**"},
	// No flags: the page must still name them.
	{[]string{"guard"}, "docs/cli.md", ""},
	{[]string{"install"}, "docs/cli.md", ""},
	{[]string{"version"}, "docs/cli.md", ""},
}

// TestFlagsDocumented checks the command reference against the binary:
// every command and benchmark is listed in docs/cli.md, every flag that
// `slowpoke CMD -h` prints appears in its page's section, and every flag
// a section's tables name exists.
func TestFlagsDocumented(t *testing.T) {
	cli := readDoc(t, "docs/cli.md")
	covered := map[string]bool{}
	for _, p := range flagPages {
		covered[strings.Join(p.args, " ")] = true
	}
	for _, c := range commands {
		if !strings.Contains(cli, "`slowpoke "+c.name) {
			t.Errorf("docs/cli.md does not list `slowpoke %s`", c.name)
		}
		if !covered[c.name] && c.name != "bench" {
			t.Errorf("command %s has no entry in flagPages: say which page documents its flags", c.name)
		}
	}
	for _, b := range benches {
		if !covered["bench "+b.name] {
			t.Errorf("bench %s has no entry in flagPages", b.name)
		}
	}
	for _, p := range flagPages {
		name := strings.Join(p.args, " ")
		if p.page == "docs/lab.md" && !hasBench("methods") {
			continue // the lab's benchmarks: checked with go test -tags lab
		}
		flags := commandFlags(t, p.args)
		if p.from == "" {
			if len(flags) > 0 {
				t.Errorf("slowpoke %s has flags %v: give flagPages the section that documents them", name, flags)
			}
			continue
		}
		sec := section(readDoc(t, p.page), p.from)
		if sec == "" {
			t.Errorf("%s has no section starting %q (slowpoke %s)", p.page, p.from, name)
			continue
		}
		known := map[string]bool{}
		for _, f := range flags {
			known[f] = true
			if !regexp.MustCompile(`(^|[^\w-])--?` + regexp.QuoteMeta(f) + `([^\w-]|$)`).MatchString(sec) {
				t.Errorf("%s (%s) does not document slowpoke %s's flag --%s", p.page, p.from, name, f)
			}
		}
		for _, f := range tableFlags(sec) {
			if !known[f] {
				t.Errorf("%s (%s) documents --%s, which slowpoke %s does not have", p.page, p.from, f, name)
			}
		}
	}
}

func readDoc(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + page)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commandFlags runs `slowpoke ARGS -h` in this process and returns the
// names of the flags its usage lists.
func commandFlags(t *testing.T, args []string) []string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	var code int
	for _, c := range commands {
		if c.name == args[0] && c.name != "bench" {
			code = c.run(append(args[1:], "-h"))
		}
	}
	for _, b := range benches {
		if args[0] == "bench" && b.name == args[1] {
			code = b.run([]string{"-h"})
		}
	}
	os.Stderr = saved
	w.Close()
	usage := <-got
	if code != 0 {
		t.Errorf("slowpoke %s -h: exit %d\n%s", strings.Join(args, " "), code, usage)
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  -([\w-]+)`).FindAllStringSubmatch(usage, -1) {
		flags = append(flags, m[1])
	}
	return flags
}

// section is doc from the line starting with from up to the next heading
// or bench paragraph.
func section(doc, from string) string {
	i := strings.Index(doc, "\n"+from)
	if strings.HasPrefix(doc, from) {
		i = 0
	} else if i < 0 {
		return ""
	}
	rest := doc[i+1+len(from):]
	end := len(rest)
	for _, next := range []string{"\n#", "\n**`bench "} {
		if j := strings.Index(rest, next); j >= 0 && j < end {
			end = j
		}
	}
	return from + rest[:end]
}

// tableFlags are the flags named in the first cell of a section's table
// rows.
func tableFlags(sec string) []string {
	var out []string
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.SplitN(line[1:], " | ", 2)[0]
		for _, m := range regexp.MustCompile("(?:^|[\\s`,(])--?([a-z][a-z0-9-]*)").FindAllStringSubmatch(cell, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// TestTierCommands: README.md's test command is plain go test ./..., and
// its "Tests" section names each tier's command; .ci/run runs the unit and
// end-to-end tiers' commands as the README gives them, with no GOFLAGS of
// its own, and test/kube/e2e.sh runs the TestKube tests with the build tag
// they are behind. No command there is given with sudo: they are meant
// for root.
func TestTierCommands(t *testing.T) {
	sec := section(readDoc(t, "README.md"), "## Tests")
	if sec == "" {
		t.Fatal(`README.md has no "## Tests" section`)
	}
	if !strings.HasPrefix(strings.TrimPrefix(sec, "## Tests\n\n"), "```sh\ngo test ./...\n```\n") {
		t.Errorf("README.md's test command is not plain `go test ./...`:\n%s", sec)
	}
	tiers := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| ([A-Za-z-]+) \\| `([^`]+)`").FindAllStringSubmatch(sec, -1) {
		tiers[m[1]] = m[2]
	}
	for _, tier := range []string{"unit", "lab", "end-to-end", "Kubernetes", "accuracy"} {
		if tiers[tier] == "" {
			t.Errorf("README.md's tests table has no row for the %s tier with its command", tier)
		}
	}
	if tiers["unit"] != "go test ./..." || !strings.Contains(tiers["end-to-end"], "-tags e2e") {
		t.Errorf("README.md's tiers: unit %q, end-to-end %q", tiers["unit"], tiers["end-to-end"])
	}
	if strings.Contains(sec, "sudo ") {
		t.Error("README.md's tests section gives a command with sudo")
	}
	ci := readDoc(t, ".ci/run")
	lines := map[string]bool{}
	for _, l := range strings.Split(ci, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, cmd := range []string{"go test ./...", tiers["lab"], tiers["end-to-end"], "test/kube/e2e.sh"} {
		if !lines[cmd] {
			t.Errorf(".ci/run has no line %q", cmd)
		}
	}
	if strings.Contains(ci, "export GOFLAGS") {
		t.Error(".ci/run sets GOFLAGS: it must run the README's command as a reader would")
	}
	if e2e := readDoc(t, "test/kube/e2e.sh"); !regexp.MustCompile(`go test -tags e2e .*-run 'TestKube'`).MatchString(e2e) {
		t.Error("test/kube/e2e.sh does not run go test -tags e2e -run 'TestKube'")
	}
}

// hasBench says whether this build has the benchmark name (the lab's are
// in the build tagged lab only).
func hasBench(name string) bool {
	return slices.ContainsFunc(benches, func(b benchmark) bool { return b.name == name })
}
