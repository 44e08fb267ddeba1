package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// fullYAML sets every field of the format.
const fullYAML = `name: demo
services:
  - name: frontend
    command: ./bin/slowpoke-emu
    args: [-topology, topology.yaml, -service, frontend]
    env: {GOGC: "100"}
    dir: run
    port: 8080
    protocol: http
    cpus: 2
    ready:
      http_path: /healthz
      timeout: 10s
    ground_truth:
      env: EMU_WORK_OFFSET_US
      base_us: 5
  - name: cart
    command: slowpoke-emu
    port: 8081
    protocol: grpc
entry: http://127.0.0.1:8080
workload:
  connections: 32
  warmup: 250ms
  duration: 3
  requests:
    - name: home
      method: post
      path: /home
      headers: {X-User: "1"}
      body: '{"a":1}'
      weight: 10
    - name: cart
      path: /cart
`

func TestParseFull(t *testing.T) {
	s, err := Parse([]byte(fullYAML), "/apps/demo")
	if err != nil {
		t.Fatal(err)
	}
	want := &Spec{
		Name: "demo",
		Dir:  "/apps/demo",
		Services: []Service{{
			Name:        "frontend",
			Command:     "./bin/slowpoke-emu",
			Args:        []string{"-topology", "topology.yaml", "-service", "frontend"},
			Env:         map[string]string{"GOGC": "100"},
			Dir:         "run",
			Port:        8080,
			Protocol:    "http",
			CPUs:        2,
			Ready:       Ready{HTTPPath: "/healthz", Timeout: Duration{10 * time.Second}},
			GroundTruth: &GroundTruth{Env: "EMU_WORK_OFFSET_US", BaseUS: 5},
			specDir:     "/apps/demo",
		}, {
			Name:     "cart",
			Command:  "slowpoke-emu",
			Port:     8081,
			Protocol: "grpc",
			CPUs:     DefaultCPUs,
			Ready:    Ready{Timeout: Duration{DefaultReadyTimeout}},
			specDir:  "/apps/demo",
		}},
		Entry: "http://127.0.0.1:8080",
		Workload: Workload{
			Connections: 32,
			Warmup:      Duration{250 * time.Millisecond},
			Duration:    Duration{3 * time.Second},
			Requests: []Request{
				{Name: "home", Method: "POST", Path: "/home", Headers: map[string]string{"X-User": "1"}, Body: `{"a":1}`, Weight: 10},
				{Name: "cart", Method: "GET", Path: "/cart", Weight: 1},
			},
		},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", s, want)
	}
}

func TestRoundTrip(t *testing.T) {
	s, err := Parse([]byte(fullYAML), "/apps/demo")
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out, "/apps/demo")
	if err != nil {
		t.Fatalf("re-parse of marshalled spec: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(s, again) {
		t.Errorf("round trip changed the spec:\n got %+v\nwant %+v\nyaml:\n%s", again, s, out)
	}
}

func TestDefaults(t *testing.T) {
	s, err := Parse([]byte(`name: min
services: [{name: a, command: a, port: 9000}]
entry: https://example.com
workload:
  requests: [{name: r, path: /}]
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if s.Dir != wd {
		t.Errorf("Dir = %q, want %q", s.Dir, wd)
	}
	sv := s.Services[0]
	w := s.Workload
	r := w.Requests[0]
	for _, c := range []struct {
		field    string
		got, def any
	}{
		{"protocol", sv.Protocol, DefaultProtocol},
		{"cpus", sv.CPUs, DefaultCPUs},
		{"ready.timeout", sv.Ready.Timeout.Duration, DefaultReadyTimeout},
		{"ready.http_path", sv.Ready.HTTPPath, ""},
		{"ground_truth", sv.GroundTruth, (*GroundTruth)(nil)},
		{"connections", w.Connections, DefaultConnections},
		{"warmup", w.Warmup.Duration, DefaultWarmup},
		{"duration", w.Duration.Duration, DefaultDuration},
		{"method", r.Method, DefaultMethod},
		{"weight", r.Weight, DefaultWeight},
	} {
		if c.got != c.def {
			t.Errorf("%s = %v, want default %v", c.field, c.got, c.def)
		}
	}
}

// validSpec is a minimal valid spec for the rule tests to break.
func validSpec() *Spec {
	return &Spec{
		Name: "demo",
		Services: []Service{
			{Name: "frontend", Command: "emu", Port: 8080, Protocol: "http", CPUs: 1, Ready: Ready{Timeout: Duration{time.Second}}},
			{Name: "cart", Command: "emu", Port: 8081, Protocol: "grpc", CPUs: 1, Ready: Ready{Timeout: Duration{time.Second}}},
		},
		Entry: "http://127.0.0.1:8080",
		Workload: Workload{
			Connections: 1,
			Warmup:      Duration{time.Second},
			Duration:    Duration{time.Second},
			Requests: []Request{
				{Name: "home", Method: "GET", Path: "/home", Weight: 1},
				{Name: "cart", Method: "GET", Path: "/cart", Weight: 1},
			},
		},
	}
}

func TestValidate(t *testing.T) {
	if err := validSpec().Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	tests := []struct {
		name   string
		modify func(*Spec)
		want   string
	}{
		{"name required", func(s *Spec) { s.Name = " " }, "name is required"},
		{"no services", func(s *Spec) { s.Services = nil }, "services: at least one service is required"},
		{"service name required", func(s *Spec) { s.Services[1].Name = "" }, "services[1]: name is required"},
		{"service name invalid", func(s *Spec) { s.Services[1].Name = "Cart_1" }, `services[1] "Cart_1": name must be lower-case`},
		{"service name leading dash", func(s *Spec) { s.Services[1].Name = "-cart" }, `services[1] "-cart": name must be lower-case`},
		{"service name too long", func(s *Spec) { s.Services[1].Name = strings.Repeat("a", 64) }, "name is 64 characters long, at most 63 allowed"},
		{"duplicate service", func(s *Spec) { s.Services[1].Name = "frontend" }, `services[1] "frontend": name already used by services[0] "frontend"`},
		{"command required", func(s *Spec) { s.Services[1].Command = "" }, `services[1] "cart": command is required`},
		{"env name", func(s *Spec) { s.Services[0].Env = map[string]string{"A=B": "1"} }, `services[0] "frontend": env: "A=B" is not a valid environment variable name`},
		{"port zero", func(s *Spec) { s.Services[1].Port = 0 }, `services[1] "cart": port 0 out of range 1..65535`},
		{"port too big", func(s *Spec) { s.Services[1].Port = 65536 }, "port 65536 out of range"},
		{"duplicate port", func(s *Spec) { s.Services[1].Port = 8080 }, `services[1] "cart": port 8080 already used by services[0] "frontend"`},
		{"protocol", func(s *Spec) { s.Services[0].Protocol = "udp" }, `services[0] "frontend": protocol "udp" unknown; want "http" or "grpc"`},
		{"cpus zero", func(s *Spec) { s.Services[0].CPUs = 0 }, `services[0] "frontend": cpus must be > 0, got 0`},
		{"cpus negative", func(s *Spec) { s.Services[0].CPUs = -2 }, "cpus must be > 0, got -2"},
		{"pool too large", func(s *Spec) { n := MaxPool + 1; s.Services[1].Pool = &n }, `services[1] "cart": pool must be in 1..1048576, got 1048577`},
		{"ready path", func(s *Spec) { s.Services[0].Ready.HTTPPath = "healthz" }, `ready.http_path "healthz" must start with "/"`},
		{"ready timeout", func(s *Spec) { s.Services[0].Ready.Timeout = Duration{} }, "ready.timeout must be > 0, got 0s"},
		{"ground truth env empty", func(s *Spec) { s.Services[1].GroundTruth = &GroundTruth{BaseUS: 3} }, `services[1] "cart": ground_truth.env is required`},
		{"ground truth env invalid", func(s *Spec) { s.Services[1].GroundTruth = &GroundTruth{Env: "1X"} }, `ground_truth.env: "1X" is not a valid`},
		{"entry required", func(s *Spec) { s.Entry = "" }, "entry is required"},
		{"entry relative", func(s *Spec) { s.Entry = "/home" }, `entry "/home" must be an absolute http:// or https:// URL`},
		{"entry scheme", func(s *Spec) { s.Entry = "ftp://x" }, "must be an absolute http:// or https:// URL"},
		{"entry query", func(s *Spec) { s.Entry = "http://x/?a=1" }, "must not have a query or fragment"},
		{"connections", func(s *Spec) { s.Workload.Connections = 0 }, "workload.connections must be > 0, got 0"},
		{"warmup negative", func(s *Spec) { s.Workload.Warmup = Duration{-time.Second} }, "workload.warmup must be >= 0, got -1s"},
		{"duration zero", func(s *Spec) { s.Workload.Duration = Duration{} }, "workload.duration must be > 0, got 0s"},
		{"no requests", func(s *Spec) { s.Workload.Requests = nil }, "workload.requests: at least one request is required"},
		{"request name", func(s *Spec) { s.Workload.Requests[1].Name = "" }, "workload.requests[1]: name is required"},
		{"duplicate request", func(s *Spec) { s.Workload.Requests[1].Name = "home" }, `workload.requests[1] "home": name already used by workload.requests[0] "home"`},
		{"method", func(s *Spec) { s.Workload.Requests[0].Method = "GE T" }, `method "GE T" is not a valid HTTP method`},
		{"path required", func(s *Spec) { s.Workload.Requests[0].Path = "" }, `workload.requests[0] "home": path is required`},
		{"path slash", func(s *Spec) { s.Workload.Requests[1].Path = "home" }, `workload.requests[1] "cart": path "home" must start with "/"`},
		{"header name", func(s *Spec) { s.Workload.Requests[0].Headers = map[string]string{"X User": "1"} }, `headers: "X User" is not a valid header name`},
		{"header value", func(s *Spec) { s.Workload.Requests[0].Headers = map[string]string{"X": "a\nb"} }, `headers: value of "X" contains a line break`},
		{"weight zero", func(s *Spec) { s.Workload.Requests[0].Weight = 0 }, `workload.requests[0] "home": weight must be > 0, got 0`},
		{"weight negative", func(s *Spec) { s.Workload.Requests[0].Weight = -1 }, "weight must be > 0, got -1"},
		{"attach empty", func(s *Spec) { s.Services[1].Attach = &Attach{} }, `services[1] "cart": attach needs exactly one of port, pid_file, cgroup and container, got 0`},
		{"attach two", func(s *Spec) { s.Services[1].Attach = &Attach{Port: 8081, PIDFile: "/run/x.pid"} }, "attach needs exactly one of port, pid_file, cgroup and container, got 2"},
		{"attach container and cgroup", func(s *Spec) { s.Services[1].Attach = &Attach{Container: "cart", Cgroup: "/x"} }, "attach needs exactly one of port, pid_file, cgroup and container, got 2"},
		{"attach container flag", func(s *Spec) { s.Services[1].Attach = &Attach{Container: "--help"} }, `attach.container "--help" is not a container name or ID`},
		{"attach container space", func(s *Spec) { s.Services[1].Attach = &Attach{Container: "my cart"} }, `attach.container "my cart" is not a container name or ID`},
		{"attach container slash", func(s *Spec) { s.Services[1].Attach = &Attach{Container: "shop/cart"} }, `attach.container "shop/cart" is not a container name or ID`},
		{"attach port range", func(s *Spec) { s.Services[1].Attach = &Attach{Port: 70000} }, "attach.port 70000 out of range"},
		{"attach port differs", func(s *Spec) { s.Services[1].Attach = &Attach{Port: 9000} }, "attach.port 9000 and port 8081 differ"},
		{"attach cgroup relative", func(s *Spec) { s.Services[1].Attach = &Attach{Cgroup: "shop.service"} }, `attach.cgroup "shop.service" must be absolute`},
		{"attach under kubernetes", func(s *Spec) {
			s.Kubernetes = &Kubernetes{Namespace: "default", Image: "x", ControlPort: 7070}
			s.Services[1].Attach = &Attach{Port: 8081}
		}, "attach is for a service that runs on this machine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.modify(s)
			err := s.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestValidateReportsAllProblems(t *testing.T) {
	s := validSpec()
	s.Services[1].Command = ""
	s.Services[1].Port = 8080
	s.Workload.Requests[0].Path = "home"
	err := s.Validate()
	var list interface{ Unwrap() []error }
	if !errors.As(err, &list) || len(list.Unwrap()) != 3 {
		t.Fatalf("want 3 joined errors, got %v", err)
	}
}

// A service that already runs is named by attach instead of a command; its
// port defaults to the one it is attached by, and a relative pid_file is
// the spec's directory's. Without a command it cannot be restarted.
func TestAttach(t *testing.T) {
	const y = `name: a
services:
  - {name: web, attach: {port: 8080}}
  - {name: db, attach: {pid_file: run/db.pid}, port: 5432, command: ./db, ground_truth: {env: W, base_us: 1}}
  - {name: q, attach: {cgroup: /system.slice/q.service}, port: 9000}
  - {name: c, attach: {container: shop_cart.1}, port: 9001}
entry: http://127.0.0.1:8080
workload: {requests: [{name: home, path: /}]}
`
	s, err := Parse([]byte(y), "/apps/a")
	if err != nil {
		t.Fatal(err)
	}
	web, db, q, c := s.Services[0], s.Services[1], s.Services[2], s.Services[3]
	if web.Port != 8080 || *web.Attach != (Attach{Port: 8080}) || !web.Attached() {
		t.Errorf("web: port %d, attach %+v", web.Port, web.Attach)
	}
	if db.Attach.PIDFile != "/apps/a/run/db.pid" {
		t.Errorf("db: pid_file %q, want it under the spec's directory", db.Attach.PIDFile)
	}
	if q.Attach.Cgroup != "/system.slice/q.service" {
		t.Errorf("q: cgroup %q", q.Attach.Cgroup)
	}
	if *c.Attach != (Attach{Container: "shop_cart.1"}) || c.Attach.String() != "{container: shop_cart.1}" {
		t.Errorf("c: attach %+v, written %s", c.Attach, c.Attach)
	}
	if err := web.CanRestart(); err == nil || !strings.Contains(err.Error(), `service "web" is attached to (attach: {port: 8080}) and has no command`) {
		t.Errorf("web.CanRestart() = %v", err)
	}
	if err := c.CanRestart(); err == nil || !strings.Contains(err.Error(), `service "c" is attached to (attach: {container: shop_cart.1}) and has no command`) || !strings.Contains(err.Error(), "as a process of this machine") {
		t.Errorf("c.CanRestart() = %v", err)
	}
	if err := db.CanRestart(); err != nil {
		t.Errorf("db, attached with a command: CanRestart() = %v", err)
	}
	// validate needs a restart first, then the ground_truth knob.
	if err := web.CanValidate(); err == nil || errors.Is(err, ErrNoGroundTruth) || !strings.Contains(err.Error(), "has no command") {
		t.Errorf("web.CanValidate() = %v, want CanRestart's error", err)
	}
	if err := q.CanValidate(); err == nil || errors.Is(err, ErrNoGroundTruth) {
		t.Errorf("q, attached without a command or ground_truth: CanValidate() = %v, want CanRestart's error", err)
	}
	if err := db.CanValidate(); err != nil {
		t.Errorf("db: CanValidate() = %v", err)
	}
	started := validSpec().Services[0]
	started.GroundTruth = nil
	if err := started.CanValidate(); !errors.Is(err, ErrNoGroundTruth) || !strings.Contains(err.Error(), fmt.Sprintf("service %q has no ground_truth", started.Name)) {
		t.Errorf("a started service without ground_truth: CanValidate() = %v", err)
	}
	if s.Services[0].Attached() == validSpec().Services[0].Attached() {
		t.Error("a started service says it is attached")
	}
	if _, err := Parse([]byte(strings.Replace(y, "attach: {port: 8080}", "attach: {port: 8080, pidfile: x}", 1)), "/"); err == nil || !strings.Contains(err.Error(), "pidfile") {
		t.Errorf("an unknown attach field: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	const base = `name: demo
services:
  - name: a
    command: a
    port: 9000
entry: http://127.0.0.1:9000
workload:
  requests: [{name: r, path: /}]
`
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"empty", "", []string{"spec is empty"}},
		{"syntax", "name: [", []string{"line "}},
		{"unknown top-level field", base + "extra: 1\n", []string{`line 9: unknown field "extra" in the spec`, "known fields: name, services, entry, workload"}},
		{"unknown service field", strings.Replace(base, "    port: 9000", "    port: 9000\n    cpu: 2", 1),
			[]string{`line 6: unknown field "cpu" in a service`, "cpus"}},
		{"unknown ground_truth field", strings.Replace(base, "    port: 9000", "    port: 9000\n    ground_truth: {env: X, base: 1}", 1),
			[]string{`line 6: unknown field "base" in ground_truth`, "base_us"}},
		{"unknown kubernetes field", base + "kubernetes: {image: x, namespce: y}\n", []string{`line 9: unknown field "namespce" in kubernetes`, "namespace"}},
		{"explicit zero cpus", strings.Replace(base, "    port: 9000", "    port: 9000\n    cpus: 0", 1), []string{`services[0] "a": cpus must be > 0, got 0`}},
		{"explicit zero pool", strings.Replace(base, "    port: 9000", "    port: 9000\n    pool: 0", 1), []string{`services[0] "a": pool must be in 1..1048576, got 0 (leave it out for no limit)`}},
		{"explicit zero weight", strings.Replace(base, "path: /}", "path: /, weight: 0}", 1), []string{"weight must be > 0, got 0"}},
		{"explicit zero connections", base + "  connections: 0\n", []string{"workload.connections must be > 0"}},
		{"bad duration", base + "  duration: 5x\n", []string{`line 9: invalid duration "5x"`}},
		{"duration mapping", base + "  warmup: {s: 1}\n", []string{"line 9: invalid duration"}},
		{"wrong type", strings.Replace(base, "port: 9000", "port: http", 1), []string{"line 5: cannot unmarshal !!str `http` into int"}},
		{"several yaml errors", base + "  duration: 5x\n  warmup: nope\n", []string{"line 9:", "line 10:"}},
		{"not a list", strings.Replace(base, "  requests: [{name: r, path: /}]", "  requests: 3", 1), []string{"line 8: cannot unmarshal !!int `3` into a list of requests"}},
		{"two documents", base + "---\nname: b\n", []string{"single YAML document"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "/x")
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"1s", time.Second, false},
		{"250ms", 250 * time.Millisecond, false},
		{"1m30s", 90 * time.Second, false},
		{"5", 5 * time.Second, false},
		{"0.5", 500 * time.Millisecond, false},
		{`"2"`, 2 * time.Second, false},
		{"-1", -time.Second, false}, // Validate rejects it, with the field name.
		{"5x", 0, true},
		{"abc", 0, true},
		{".inf", 0, true},
		{"1e30", 0, true},
		{"[1]", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var d Duration
			err := yaml.Unmarshal([]byte(tt.in), &d)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && d.Duration != tt.want {
				t.Errorf("got %v, want %v", d.Duration, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(path, []byte(fullYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir != dir {
		t.Errorf("Dir = %q, want %q", s.Dir, dir)
	}

	bad := filepath.Join(dir, "bad.yaml")
	broken := strings.Replace(fullYAML, "port: 8081", "port: 8080", 1)
	broken = strings.Replace(broken, "command: slowpoke-emu", "command: ''", 1)
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if err == nil {
		t.Fatal("Load of invalid spec succeeded")
	}
	want := bad + ": 2 problems:\n" +
		`  services[1] "cart": command is required (or attach, for a service that already runs)` + "\n" +
		`  services[1] "cart": port 8080 already used by services[0] "frontend"`
	if err.Error() != want {
		t.Errorf("Load error:\n%s\nwant:\n%s", err, want)
	}

	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of missing file: %v, want ErrNotExist", err)
	}
}

func TestPaths(t *testing.T) {
	s, err := Parse([]byte(fullYAML), "/apps/demo")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		command, dir      string
		wantCmd, wantWork string
	}{
		{"./bin/emu", "", "/apps/demo/bin/emu", "/apps/demo"},
		{"bin/emu", "run", "/apps/demo/bin/emu", "/apps/demo/run"},
		{"../tools/emu", "../x", "/apps/tools/emu", "/apps/x"},
		{"emu", "", "emu", "/apps/demo"},
		{"/usr/bin/emu", "/srv/app", "/usr/bin/emu", "/srv/app"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			sv := s.Services[0]
			sv.Command, sv.Dir = tt.command, tt.dir
			if got := sv.CommandPath(); got != tt.wantCmd {
				t.Errorf("CommandPath() = %q, want %q", got, tt.wantCmd)
			}
			if got := sv.WorkDir(s.Dir); got != tt.wantWork {
				t.Errorf("WorkDir() = %q, want %q", got, tt.wantWork)
			}
		})
	}
}

func TestServiceLookup(t *testing.T) {
	s := validSpec()
	if sv, ok := s.Service("cart"); !ok || sv != &s.Services[1] {
		t.Errorf("Service(cart) = %v, %v", sv, ok)
	}
	if _, ok := s.Service("nope"); ok {
		t.Error("Service(nope) found")
	}
	tests := []struct {
		target string
		want   string // "" means no error
	}{
		{"frontend", ""},
		{"cart", ""},
		{"carts", `unknown target service "carts"; services of "demo": frontend, cart`},
		{"", `no target service given; services of "demo": frontend, cart`},
	}
	for _, tt := range tests {
		err := s.CheckTarget(tt.target)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckTarget(%q) = %v", tt.target, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("CheckTarget(%q) = %v, want %q", tt.target, err, tt.want)
		}
	}
}

func TestHelpers(t *testing.T) {
	s := validSpec()
	s.Entry = "http://127.0.0.1:8080/"
	if got := s.URL(s.Workload.Requests[0]); got != "http://127.0.0.1:8080/home" {
		t.Errorf("URL = %q", got)
	}
	g := GroundTruth{Env: "X", BaseUS: 0}
	if got := g.Value(12.5); got != "-12.5" {
		t.Errorf("GroundTruth.Value = %q", got)
	}

	var empty Spec
	empty.Services = []Service{{Name: "a"}}
	empty.Workload.Requests = []Request{{Name: "r"}}
	empty.SetDefaults()
	if sv := empty.Services[0]; sv.Protocol != "http" || sv.CPUs != 1 || sv.Ready.Timeout.Duration != DefaultReadyTimeout {
		t.Errorf("SetDefaults service = %+v", sv)
	}
	if w := empty.Workload; w.Connections != DefaultConnections || w.Requests[0].Method != "GET" || w.Requests[0].Weight != 1 {
		t.Errorf("SetDefaults workload = %+v", w)
	}
}

func TestPoolParsed(t *testing.T) {
	s, err := Parse([]byte(`name: x
services:
  - name: a
    command: /bin/true
    port: 9000
    pool: 12
  - name: b
    command: /bin/true
    port: 9001
entry: http://127.0.0.1:9000
workload:
  requests: [{name: r, path: /}]
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Services[0].Pool; p == nil || *p != 12 {
		t.Errorf("a: pool %v, want 12", p)
	}
	if p := s.Services[1].Pool; p != nil {
		t.Errorf("b: pool %d, want none", *p)
	}
}

// TestKubernetes: a kubernetes section gets its defaults, makes commands
// optional and ports free to repeat, and is validated.
func TestKubernetes(t *testing.T) {
	const kubeYAML = `name: shop
kubernetes: {image: "slowpoke:dev", kubeconfig: kc.yaml}
services:
  - {name: frontend, port: 8080}
  - {name: cart, port: 8080, deployment: cart-v2, container: app}
entry: http://127.0.0.1:8080
workload:
  requests: [{name: home, path: /}]
`
	s, err := Parse([]byte(kubeYAML), "/specs")
	if err != nil {
		t.Fatal(err)
	}
	k := s.Kubernetes
	if k == nil || k.Namespace != "default" || k.ControlPort != DefaultControlPort || k.Kubeconfig != "/specs/kc.yaml" || k.Image != "slowpoke:dev" {
		t.Fatalf("kubernetes %+v: want the defaults and the kubeconfig beside the spec", k)
	}
	if sv := s.Services[1]; sv.Deployment != "cart-v2" || sv.Container != "app" {
		t.Errorf("service %+v: deployment and container lost", sv)
	}
	tests := []struct {
		name   string
		modify func(*Spec)
		want   string
	}{
		{"image required", func(s *Spec) { s.Kubernetes.Image = " " }, "kubernetes.image is required"},
		{"namespace", func(s *Spec) { s.Kubernetes.Namespace = "Shop_1" }, `kubernetes.namespace "Shop_1" is not a valid namespace name`},
		{"control ports", func(s *Spec) { s.Kubernetes.ControlPort = 65535 }, "kubernetes.control_port 65535: ports 65535..65536"},
		{"deployment name", func(s *Spec) { s.Services[0].Deployment = "-x" }, `deployment "-x" is not a valid Deployment name`},
		{"deployment without kubernetes", func(s *Spec) {
			s.Kubernetes = nil
			s.Services[1].Command = "x"
			s.Services[0].Command = "y"
			s.Services[1].Port = 9
		},
			"deployment and container are for an application on Kubernetes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(kubeYAML), "/specs")
			if err != nil {
				t.Fatal(err)
			}
			tt.modify(s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
