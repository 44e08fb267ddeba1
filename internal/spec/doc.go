// Package spec loads and validates the application spec: the YAML file in
// which a user describes the services of their application, how to start
// them, where the entry point is and what workload to drive through it.
//
// Load is the usual entry point. It decodes strictly (unknown fields are
// errors), fills in defaults for absent fields and validates the result,
// reporting every problem at once with a precise location such as
//
//	services[2] "cart": port 8081 already used by services[0] "frontend"
//
// The file format is documented in docs/spec.md.
package spec
