//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// emuSpansTopology is the application of TestEmulatorSpansMatchWrappers:
// calls per request 1 (frontend), 3 (cart: twice from the frontend, once
// from the catalog), 1 (catalog) and 3 (currency), over HTTP and gRPC.
const emuSpansTopology = `entry: frontend
services:
  frontend:
    port: 18190
    endpoints:
      /home:
        work_us: 60
        calls:
          - {service: cart, endpoint: Get, repeat: 2}
          - {service: catalog, endpoint: /list}
  cart:
    port: 18191
    protocol: grpc
    endpoints:
      Get: {work_us: 150}
  catalog:
    port: 18192
    endpoints:
      /list:
        work_us: 40
        calls:
          - {service: currency, endpoint: /convert, repeat: 3}
          - {service: cart, endpoint: Get}
  currency:
    port: 18193
    endpoints:
      /convert: {work_us: 20}
`

// emuSpansSpec is the app spec of that topology, each service run by emu
// with extra arguments.
func emuSpansSpec(emu string, extra ...string) string {
	var b strings.Builder
	b.WriteString("name: emuspans\nservices:\n")
	for i, name := range []string{"frontend", "cart", "catalog", "currency"} {
		args := append([]string{"-topology", "topology.yaml", "-service", name}, extra...)
		fmt.Fprintf(&b, "  - name: %s\n    command: %s\n    args: [%s]\n    port: %d\n", name, emu, strings.Join(args, ", "), 18190+i)
		if name == "cart" {
			b.WriteString("    protocol: grpc\n")
		} else {
			b.WriteString("    ready: {http_path: /healthz}\n")
		}
	}
	b.WriteString("entry: http://127.0.0.1:18190\nworkload:\n  connections: 16\n  warmup: 1s\n  duration: 2s\n  requests:\n    - {name: home, path: /home}\n")
	return b.String()
}

// rankCounts is what one rank run counted for every service as the target.
type rankCounts struct {
	c1         map[string]float64
	from       map[string]string
	neighbours map[string]map[string][]string // by target
}

// rankEmulated runs rank on the spec in dir and returns its counts.
func rankEmulated(t *testing.T, bin, dir, spec string) rankCounts {
	t.Helper()
	specPath := filepath.Join(dir, spec)
	out := filepath.Join(dir, "out-"+strings.TrimSuffix(spec, ".yaml"))
	cmd := exec.Command(bin, "rank", "-f", specPath, "--reduce", "50%", "--reps", "1", "--max-reps", "1", "--out", out)
	marker := filepath.Join(dir, "marker-"+spec)
	cmd.Env = append(os.Environ(), "SLOWPOKE_TEST_MARKER="+marker)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := runWithTimeout(cmd, 5*time.Minute); err != nil {
		t.Fatalf("rank -f %s: %v\nstdout:\n%s\nstderr:\n%s", spec, err, so.String(), se.String())
	}
	checkNoLeftovers(t, marker)
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Entries []struct {
			Service string `json:"service"`
			Reason  string `json:"reason"`
			Results *struct {
				C1         float64             `json:"c1"`
				CallsFrom  string              `json:"calls_from"`
				Neighbours map[string][]string `json:"neighbours"`
			} `json:"results"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	rc := rankCounts{c1: map[string]float64{}, from: map[string]string{}, neighbours: map[string]map[string][]string{}}
	for _, e := range res.Entries {
		if e.Results == nil {
			t.Fatalf("rank -f %s: no results for %s: %s\nstderr:\n%s", spec, e.Service, e.Reason, se.String())
		}
		rc.c1[e.Service], rc.from[e.Service], rc.neighbours[e.Service] = e.Results.C1, e.Results.CallsFrom, e.Results.Neighbours
	}
	return rc
}

// The emulated services count their calls twice over: with slowpoke's Go
// wrappers (the default) and, run with -plain -otel, through
// OpenTelemetry spans sent to slowpoke's receiver (issue 34, item 2).
// rank makes every service the target in turn, so results.json holds
// every service's calls per request (c1) and the call graph, once from
// each. They must agree: c1 within 5% for every service, and the same
// edges.
func TestEmulatorSpansMatchWrappers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an emulated application twice")
	}
	bin := buildSlowpoke(t)
	emu := buildEmu(t)
	dir := t.TempDir()
	for name, text := range map[string]string{
		"topology.yaml": emuSpansTopology,
		"wrappers.yaml": emuSpansSpec(emu),
		"spans.yaml":    emuSpansSpec(emu, "-plain", "-otel"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wrapped := rankEmulated(t, bin, dir, "wrappers.yaml")
	spanned := rankEmulated(t, bin, dir, "spans.yaml")

	want := map[string]float64{"frontend": 1, "cart": 3, "catalog": 1, "currency": 3}
	for svc, c1 := range want {
		w, s := wrapped.c1[svc], spanned.c1[svc]
		t.Logf("%-8s c1 from the Go wrappers %.4f, from SERVER spans %.4f (%+.2f%%)", svc, w, s, 100*(s/w-1))
		if wrapped.from[svc] != "instrumentation" || spanned.from[svc] != "spans" {
			t.Errorf("%s: calls counted from %q and %q, want instrumentation and spans", svc, wrapped.from[svc], spanned.from[svc])
		}
		if math.Abs(w/c1-1) > 0.05 {
			t.Errorf("%s: c1 %.4f from the wrappers, want %g", svc, w, c1)
		}
		if !(math.Abs(s/w-1) <= 0.05) {
			t.Errorf("%s: c1 %.4f from the spans against %.4f from the wrappers: over 5%% apart", svc, s, w)
		}
	}
	graph := map[string][]string{
		"frontend": {"cart", "catalog"},
		"cart":     {"catalog", "frontend"},
		"catalog":  {"cart", "currency", "frontend"},
		"currency": {"catalog"},
	}
	for svc := range want {
		if !reflect.DeepEqual(wrapped.neighbours[svc], spanned.neighbours[svc]) {
			t.Errorf("target %s: call graph %v from the wrappers, %v from the spans", svc, wrapped.neighbours[svc], spanned.neighbours[svc])
		}
		if !reflect.DeepEqual(spanned.neighbours[svc], graph) {
			t.Errorf("target %s: call graph from the spans %v, want %v", svc, spanned.neighbours[svc], graph)
		}
	}
}
