// Package demo holds the bundled example application that `slowpoke demo`
// runs: four emulated services described by app.yaml (the slowpoke spec) and
// topology.yaml (what each emulated service does).
package demo

import "embed"

// Files are app.yaml and topology.yaml.
//
//go:embed app.yaml topology.yaml
var Files embed.FS
