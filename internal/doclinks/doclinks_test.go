package doclinks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every relative link and anchor of README.md and docs/ goes somewhere.
func TestRepositoryLinks(t *testing.T) {
	pages := []string{"../../README.md"}
	err := filepath.WalkDir("../../docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	broken, err := Check(pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"Schema (version 2)", "schema-version-2"},
		{"Rankings (`slowpoke rank`)", "rankings-slowpoke-rank"},
		{"What starts a round: calls or CPU time (`--trigger`)", "what-starts-a-round-calls-or-cpu-time---trigger"},
		{"Third run, 2026-11-27, H100 host: the product's validate", "third-run-2026-11-27-h100-host-the-products-validate"},
	}
	for _, tt := range tests {
		if got := Slug(tt.heading); got != tt.want {
			t.Errorf("Slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

// Check finds a missing file, a missing anchor and a repeated heading's
// numbered anchor, and skips links in code.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("b.md", "# Title\n\n## Part\n\n## Part\n\n<a id=\"here\"></a>\n")
	a := write("a.md", strings.Join([]string{
		"[ok](b.md#title) [ok](b.md#part-1) [ok](b.md#here) [ok](#self)",
		"[gone](c.md) [no anchor](b.md#nowhere) [web](https://example.com/x#y)",
		"`[code](none.md)`",
		"```",
		"[fenced](none.md)",
		"```",
		"# Self",
	}, "\n"))
	broken, err := Check([]string{a})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.Link)
	}
	if strings.Join(got, " ") != "c.md b.md#nowhere" {
		t.Fatalf("broken: %v", broken)
	}
}
