// Package report defines the results of a slowpoke experiment (the schema
// of results.json) and renders them: as JSON, as a human-readable table and
// as a throughput-versus-reduction plot in PNG and SVG.
//
// The experiment orchestrator fills a Results; this package only stores and
// presents it. The schema and the meaning of each flag are documented in
// docs/results.md.
package report
