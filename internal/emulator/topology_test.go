package emulator

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const exampleTopology = `
entry: frontend
services:
  frontend:
    port: 8080
    protocol: http
    endpoints:
      /home:
        work_us: 200
        mutex_work_us: 0
        concurrent: false
        calls:
          - service: cart
            endpoint: Get
            repeat: 2
            probability: 0.5
          - service: catalog
            endpoint: /list
  cart:
    port: 8081
    protocol: grpc
    endpoints:
      Get: {work_us: 500}
  catalog:
    host: localhost
    port: 8082
    endpoints:
      /list:
`

func TestParseTopologyDefaults(t *testing.T) {
	topo, err := ParseTopology([]byte(exampleTopology))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Service{
		"frontend": {Host: DefaultHost, Port: 8080, Protocol: ProtocolHTTP, Endpoints: map[string]Endpoint{
			"/home": {WorkUS: 200, Calls: []Call{
				{Service: "cart", Endpoint: "Get", Repeat: 2, Probability: 0.5},
				{Service: "catalog", Endpoint: "/list", Repeat: 1, Probability: 1},
			}},
		}},
		"cart":    {Host: DefaultHost, Port: 8081, Protocol: ProtocolGRPC, Endpoints: map[string]Endpoint{"Get": {WorkUS: 500}}},
		"catalog": {Host: "localhost", Port: 8082, Protocol: ProtocolHTTP, Endpoints: map[string]Endpoint{"/list": {}}},
	}
	if !reflect.DeepEqual(topo.Services, want) {
		t.Errorf("services:\n got %+v\nwant %+v", topo.Services, want)
	}
	if topo.Entry != "frontend" {
		t.Errorf("entry = %q", topo.Entry)
	}
	if got := topo.Services["catalog"].Addr(); got != "localhost:8082" {
		t.Errorf("Addr = %q", got)
	}
}

func TestLoadTopologyPrefixesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topo.yaml")
	if err := os.WriteFile(path, []byte("services:\n  a:\n    port: 0\n    endpoints: {/x: {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadTopology(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": line 3: ") {
		t.Fatalf("err = %v", err)
	}
	if _, err := LoadTopology(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestTopologyErrors(t *testing.T) {
	// Each case is a valid two-service topology with one thing changed.
	const base = `services:
  a:
    port: 9001
    endpoints:
      /x:
        calls:
          - service: b
            endpoint: Get
  b:
    port: 9002
    protocol: grpc
    endpoints:
      Get: {work_us: 1}
`
	cases := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"empty", "", []string{"topology is empty"}},
		{"two documents", base + "---\n" + base, []string{"single YAML document"}},
		{"no services", "services: {}\n", []string{"at least one service"}},
		{"unknown top field", "servics: {}\n", []string{`line 1: unknown field "servics" in the topology; known fields: entry, services`}},
		{"unknown service field", strings.Replace(base, "    port: 9001", "    port: 9001\n    prot: 1", 1),
			[]string{`line 4: unknown field "prot" in a service; known fields: host, port, protocol, endpoints`}},
		{"unknown endpoint field", strings.Replace(base, "Get: {work_us: 1}", "Get: {work: 1}", 1),
			[]string{`line 13: unknown field "work" in an endpoint`}},
		{"unknown call field", strings.Replace(base, "endpoint: Get", "endpoint: Get\n            prob: 1", 1),
			[]string{`line 9: unknown field "prob" in a call`}},
		{"port not a number", strings.Replace(base, "port: 9001", "port: high", 1), []string{`line 3: "high" is not an integer`}},
		{"port not an integer", strings.Replace(base, "port: 9001", "port: 9001.5", 1), []string{`line 3: "9001.5" is not an integer`}},
		{"work not a number", strings.Replace(base, "work_us: 1", "work_us: lots", 1), []string{"line 13: cannot unmarshal !!str `lots` into float64"}},
		{"calls not a list", strings.Replace(base, "      Get: {work_us: 1}", "      Get: {calls: {service: a}}", 1), []string{"line 13: cannot unmarshal !!map into a list of calls"}},
		{"duplicate key", strings.Replace(base, "    port: 9001", "    port: 9001\n    port: 9003", 1), []string{"line 4", `"port" already defined`}},
		{"bad service name", strings.Replace(base, "  a:", "  A_1:", 1), []string{`line 2: service "A_1": name must be lower-case`}},
		{"port range", strings.Replace(base, "port: 9001", "port: 70000", 1), []string{`line 3: service "a": port 70000 out of range`}},
		{"missing port", strings.Replace(base, "    port: 9001\n", "", 1), []string{`service "a": port 0 out of range`}},
		{"duplicate port", strings.Replace(base, "port: 9002", "port: 9001", 1), []string{`line 10: service "b": address 127.0.0.1:9001 already used by service "a"`}},
		{"same port other host", strings.Replace(base, "port: 9002", "port: 9001\n    host: 10.0.0.2", 1), nil},
		{"bad host", strings.Replace(base, "port: 9001", "port: 9001\n    host: a:1", 1), []string{`line 4: service "a": host "a:1"`}},
		{"bad protocol", strings.Replace(base, "protocol: grpc", "protocol: grcp", 1), []string{`line 11: service "b": protocol "grcp" unknown`}},
		{"empty protocol", strings.Replace(base, "protocol: grpc", `protocol: ""`, 1), []string{`protocol "" unknown`}},
		{"no endpoints", strings.Replace(base, "      Get: {work_us: 1}\n", "", 1) + "", []string{`service "b": endpoints: at least one endpoint`}},
		{"http endpoint not a path", strings.Replace(base, "/x:", "x:", 1), []string{`line 5: service "a": endpoint "x": an http endpoint must be a path`}},
		{"http endpoint with query", strings.Replace(base, "/x:", "/x?y:", 1), []string{`endpoint "/x?y": an http endpoint must be a path`}},
		{"healthz reserved", strings.Replace(base, "/x:", "/healthz:", 1), []string{`endpoint "/healthz": /healthz is reserved`}},
		{"grpc endpoint not a method", strings.Replace(base, "Get: {work_us: 1}", "/Get: {work_us: 1}", 1),
			[]string{`endpoint "/Get": a grpc endpoint must be a method name`, `service "b" has no endpoint "Get"`}},
		{"negative work", strings.Replace(base, "work_us: 1", "work_us: -1", 1), []string{`line 13: service "b": endpoint "Get": work_us must be >= 0, got -1`}},
		{"negative mutex work", strings.Replace(base, "work_us: 1", "mutex_work_us: -5", 1), []string{`mutex_work_us must be >= 0, got -5`}},
		{"NaN work", strings.Replace(base, "work_us: 1", "work_us: .nan", 1), []string{`work_us must be a finite number`}},
		{"huge work", strings.Replace(base, "work_us: 1", "work_us: 1e9", 1), []string{`more than a minute`}},
		{"unknown callee", strings.Replace(base, "service: b", "service: c", 1),
			[]string{`line 7: service "a": endpoint "/x": calls[0]: unknown service "c"; services: a, b`}},
		{"missing callee", strings.Replace(base, "          - service: b\n", "          - repeat: 1\n", 1), []string{`calls[0]: service is required`}},
		{"unknown callee endpoint", strings.Replace(base, "endpoint: Get", "endpoint: Put", 1),
			[]string{`line 8: service "a": endpoint "/x": calls[0]: service "b" has no endpoint "Put"; its endpoints: Get`}},
		{"missing callee endpoint", strings.Replace(base, "            endpoint: Get\n", "", 1), []string{`calls[0]: endpoint is required`}},
		{"repeat zero", strings.Replace(base, "endpoint: Get", "endpoint: Get\n            repeat: 0", 1), []string{`line 9: service "a": endpoint "/x": calls[0]: repeat must be in 1..1000, got 0`}},
		{"repeat huge", strings.Replace(base, "endpoint: Get", "endpoint: Get\n            repeat: 5000", 1), []string{`repeat must be in 1..1000, got 5000`}},
		{"repeat float", strings.Replace(base, "endpoint: Get", "endpoint: Get\n            repeat: 1.5", 1), []string{`line 9: "1.5" is not an integer`}},
		{"probability zero", strings.Replace(base, "endpoint: Get", "endpoint: Get\n            probability: 0", 1), []string{`line 9:`, `probability must be in (0, 1], got 0`}},
		{"probability above one", strings.Replace(base, "endpoint: Get", "endpoint: Get\n            probability: 1.5", 1), []string{`probability must be in (0, 1], got 1.5`}},
		{"probability negative", strings.Replace(base, "endpoint: Get", "endpoint: Get\n            probability: -0.1", 1), []string{`got -0.1`}},
		{"entry unknown", "entry: z\n" + base, []string{`line 1: entry: unknown service "z"; services: a, b`}},
		{"entry grpc", "entry: b\n" + base, []string{`entry: service "b" serves grpc; the entry service must serve http`}},
		{"entry http", "entry: a\n" + base, nil},
		{"self cycle", strings.Replace(base, "service: b\n            endpoint: Get", "service: a\n            endpoint: /x", 1),
			[]string{`line 7: service "a": endpoint "/x": calls[0]: call cycle: a /x -> a /x`}},
		{"cycle", strings.Replace(base, "Get: {work_us: 1}", "Get: {calls: [{service: a, endpoint: /x}]}", 1),
			[]string{`line 13: service "b": endpoint "Get": calls[0]: call cycle: a /x -> b Get -> a /x`}},
		{"several problems", strings.Replace(strings.Replace(base, "port: 9001", "port: -1", 1), "work_us: 1", "work_us: -1", 1),
			[]string{"port -1 out of range", "work_us must be >= 0", "\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTopology([]byte(tc.yaml))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidateCodeBuilt(t *testing.T) {
	topo := &Topology{Services: map[string]Service{
		"a": {Port: 1, Protocol: ProtocolHTTP, Endpoints: map[string]Endpoint{
			"/x": {Calls: []Call{{Service: "a", Endpoint: "/y"}}},
			"/y": {},
		}},
	}}
	err := topo.Validate()
	if err == nil || !strings.Contains(err.Error(), `service "a": endpoint "/x": calls[0]: repeat must be in 1..1000, got 0`) ||
		strings.Contains(err.Error(), "line ") {
		t.Fatalf("err = %v", err)
	}
	topo.Services["a"].Endpoints["/x"].Calls[0] = Call{Service: "a", Endpoint: "/y", Repeat: 1, Probability: 1}
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	topo, err := ParseTopology([]byte(exampleTopology))
	if err != nil {
		t.Fatal(err)
	}
	out, err := topo.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"repeat: 1\n", "probability: 1\n", "host: 127.0.0.1", "mutex_work_us", "concurrent"} {
		if strings.Contains(string(out), absent) {
			t.Errorf("output has default %q:\n%s", absent, out)
		}
	}
	back, err := ParseTopology(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(back.Services, topo.Services) || back.Entry != topo.Entry {
		t.Errorf("round trip changed the topology:\n%s", out)
	}
	again, _ := back.Marshal()
	if string(again) != string(out) {
		t.Errorf("Marshal is not deterministic:\n%s\n---\n%s", out, again)
	}

	bad := &Topology{Services: map[string]Service{"a": {Port: 1, Protocol: "tcp", Endpoints: map[string]Endpoint{"/": {}}}}}
	if _, err := bad.Marshal(); err == nil {
		t.Error("Marshal of an invalid topology succeeded")
	}
}
