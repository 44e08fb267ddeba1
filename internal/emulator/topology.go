package emulator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/slowpoke-dev/slowpoke/internal/yamlerr"
)

// Protocols a service may serve.
const (
	ProtocolHTTP = "http"
	ProtocolGRPC = "grpc"
)

// Defaults applied by ParseTopology to absent fields.
const (
	DefaultHost        = "127.0.0.1"
	DefaultProtocol    = ProtocolHTTP
	DefaultRepeat      = 1
	DefaultProbability = 1.0
)

// GRPCService is the full gRPC service name every gRPC emulator serves; an
// endpoint "Get" is the method "/slowpoke.emu.Emulator/Get".
const GRPCService = "slowpoke.emu.Emulator"

// HealthPath is served by every HTTP service with 200 and no work. It is not
// counted by the instrumentation and cannot be used as an endpoint.
const HealthPath = "/healthz"

// Topology describes every service of a synthetic application.
//
// A Topology built in code must spell out what ParseTopology would default:
// Protocol, and Repeat and Probability of every call (an empty Host means
// DefaultHost).
type Topology struct {
	// Entry optionally names the service the load generator calls; it must
	// serve HTTP.
	Entry    string             `yaml:"entry,omitempty"`
	Services map[string]Service `yaml:"services"`

	// lines maps a location (see key) to its line in the parsed file.
	lines map[string]int
}

// Service is one process of the application.
type Service struct {
	// Host is where the other services reach this one, and the address it
	// listens on; empty means DefaultHost.
	Host      string              `yaml:"host,omitempty"`
	Port      int                 `yaml:"port"`
	Protocol  string              `yaml:"protocol"`
	Endpoints map[string]Endpoint `yaml:"endpoints"`
}

// Endpoint is one HTTP path (starting with '/') or gRPC method name of a
// service.
type Endpoint struct {
	// WorkUS is the CPU work per call in microseconds.
	WorkUS float64 `yaml:"work_us,omitempty"`
	// MutexWorkUS is CPU work per call done while holding the service-wide
	// mutex, after WorkUS.
	MutexWorkUS float64 `yaml:"mutex_work_us,omitempty"`
	// ContentionUS is extra CPU work per call for every other call in
	// flight in the service when this one's work starts: contention on a
	// lock or a cache, which makes each call dearer the more the service
	// runs at once. Done with WorkUS.
	ContentionUS float64 `yaml:"contention_us,omitempty"`
	// WaitUS is time waited per call without using CPU (a disk, an API
	// outside the application), first, before the CPU work.
	WaitUS float64 `yaml:"wait_us,omitempty"`
	// Concurrent makes all downstream calls at once instead of one after
	// the other.
	Concurrent bool   `yaml:"concurrent,omitempty"`
	Calls      []Call `yaml:"calls,omitempty"`
}

// Call is a downstream call made by an endpoint.
type Call struct {
	Service  string `yaml:"service"`
	Endpoint string `yaml:"endpoint"`
	// Repeat is how many times the call is made, at least 1.
	Repeat int `yaml:"repeat"`
	// Probability is the chance that each repetition happens, in (0, 1].
	Probability float64 `yaml:"probability"`
}

// Addr returns the host:port at which the service is reached.
func (s Service) Addr() string {
	h := s.Host
	if h == "" {
		h = DefaultHost
	}
	return net.JoinHostPort(h, strconv.Itoa(s.Port))
}

// The raw* types mirror the file format with pointers where a default
// applies, so that an explicit zero ("repeat: 0") is an error rather than
// the default. Marshal writes them too, leaving defaults out.
type rawTopology struct {
	Entry    string                `yaml:"entry,omitempty"`
	Services map[string]rawService `yaml:"services"`
}

type rawService struct {
	Host      *string                `yaml:"host,omitempty"`
	Port      yamlInt                `yaml:"port"`
	Protocol  *string                `yaml:"protocol,omitempty"`
	Endpoints map[string]rawEndpoint `yaml:"endpoints"`
}

type rawEndpoint struct {
	WorkUS       float64   `yaml:"work_us,omitempty"`
	MutexWorkUS  float64   `yaml:"mutex_work_us,omitempty"`
	ContentionUS float64   `yaml:"contention_us,omitempty"`
	WaitUS       float64   `yaml:"wait_us,omitempty"`
	Concurrent   bool      `yaml:"concurrent,omitempty"`
	Calls        []rawCall `yaml:"calls,omitempty"`
}

type rawCall struct {
	Service     string   `yaml:"service"`
	Endpoint    string   `yaml:"endpoint"`
	Repeat      *yamlInt `yaml:"repeat,omitempty"`
	Probability *float64 `yaml:"probability,omitempty"`
}

// LoadTopology reads, parses and validates the topology file at path.
// Errors are prefixed with path.
func LoadTopology(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTopology(data)
	if err != nil {
		return nil, &fileError{path: path, err: err}
	}
	return t, nil
}

// fileError prefixes a topology error with the file name and, when there
// are several problems, puts each on its own line.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string {
	var list interface{ Unwrap() []error }
	if errors.As(e.err, &list) && len(list.Unwrap()) > 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d problems:", e.path, len(list.Unwrap()))
		for _, err := range list.Unwrap() {
			b.WriteString("\n  ")
			b.WriteString(err.Error())
		}
		return b.String()
	}
	return e.path + ": " + e.err.Error()
}

func (e *fileError) Unwrap() error { return e.err }

// ParseTopology decodes a topology strictly (unknown fields are errors),
// applies defaults to absent fields and validates the result. Every problem
// found is reported, each with its line.
func ParseTopology(data []byte) (*Topology, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var raw rawTopology
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("topology is empty")
		}
		return nil, vocabulary.Error(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("topology must be a single YAML document")
	}
	t := raw.topology()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err == nil {
		t.lines = map[string]int{}
		recordLines(&doc, "", t.lines)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

func (r *rawTopology) topology() *Topology {
	t := &Topology{Entry: r.Entry, Services: make(map[string]Service, len(r.Services))}
	for name, rs := range r.Services {
		s := Service{
			Host:      deref(rs.Host, DefaultHost),
			Port:      int(rs.Port),
			Protocol:  deref(rs.Protocol, DefaultProtocol),
			Endpoints: make(map[string]Endpoint, len(rs.Endpoints)),
		}
		for epName, re := range rs.Endpoints {
			e := Endpoint{WorkUS: re.WorkUS, MutexWorkUS: re.MutexWorkUS, ContentionUS: re.ContentionUS, WaitUS: re.WaitUS, Concurrent: re.Concurrent}
			for _, rc := range re.Calls {
				e.Calls = append(e.Calls, Call{
					Service:     rc.Service,
					Endpoint:    rc.Endpoint,
					Repeat:      int(deref(rc.Repeat, DefaultRepeat)),
					Probability: deref(rc.Probability, DefaultProbability),
				})
			}
			s.Endpoints[epName] = e
		}
		t.Services[name] = s
	}
	return t
}

// yamlInt is an int that, unlike yaml.v3's, does not accept (and truncate)
// a non-integral number.
type yamlInt int

func (v *yamlInt) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		var i int
		if err := n.Decode(&i); err == nil {
			*v = yamlInt(i)
			return nil
		}
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not an integer", n.Line, n.Value)}}
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Marshal validates the topology and encodes it in the file format, leaving
// out fields that have their default value. Services and endpoints are
// written in name order, so the output is deterministic.
func (t *Topology) Marshal() ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	raw := rawTopology{Entry: t.Entry, Services: make(map[string]rawService, len(t.Services))}
	for name, s := range t.Services {
		rs := rawService{Port: yamlInt(s.Port), Protocol: ptr(s.Protocol), Endpoints: make(map[string]rawEndpoint, len(s.Endpoints))}
		if s.Host != "" && s.Host != DefaultHost {
			rs.Host = ptr(s.Host)
		}
		for epName, e := range s.Endpoints {
			re := rawEndpoint{WorkUS: e.WorkUS, MutexWorkUS: e.MutexWorkUS, ContentionUS: e.ContentionUS, WaitUS: e.WaitUS, Concurrent: e.Concurrent}
			for _, c := range e.Calls {
				rc := rawCall{Service: c.Service, Endpoint: c.Endpoint}
				if c.Repeat != DefaultRepeat {
					rc.Repeat = ptr(yamlInt(c.Repeat))
				}
				if c.Probability != DefaultProbability {
					rc.Probability = ptr(c.Probability)
				}
				re.Calls = append(re.Calls, rc)
			}
			rs.Endpoints[epName] = re
		}
		raw.Services[name] = rs
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&raw); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func ptr[T any](v T) *T { return &v }

// keySep joins the parts of a location key; it cannot appear in YAML keys
// that pass validation.
const keySep = "\x1f"

func key(parts ...string) string { return strings.Join(parts, keySep) }

// recordLines stores the line of every mapping key and sequence item under
// its path.
func recordLines(n *yaml.Node, path string, lines map[string]int) {
	join := func(p string) string {
		if path == "" {
			return p
		}
		return path + keySep + p
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			recordLines(c, path, lines)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := join(n.Content[i].Value)
			if _, seen := lines[k]; !seen {
				lines[k] = n.Content[i].Line
			}
			recordLines(n.Content[i+1], k, lines)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			k := join(strconv.Itoa(i))
			lines[k] = c.Line
			recordLines(c, k, lines)
		}
	}
}

// line returns the line of the deepest known prefix of the location parts,
// or 0 when the topology was not parsed from a file.
func (t *Topology) line(parts ...string) int {
	for n := len(parts); n > 0; n-- {
		if l, ok := t.lines[key(parts[:n]...)]; ok {
			return l
		}
	}
	return 0
}

// vocabulary words YAML errors in the terms of the topology format.
var vocabulary = &yamlerr.Vocabulary{
	Package: "emulator",
	Types: map[string]yamlerr.Type{
		"rawTopology": {Where: "the topology", Go: reflect.TypeFor[rawTopology]()},
		"rawService":  {Where: "a service", Go: reflect.TypeFor[rawService]()},
		"rawEndpoint": {Where: "an endpoint", Go: reflect.TypeFor[rawEndpoint]()},
		"rawCall":     {Where: "a call", Go: reflect.TypeFor[rawCall]()},
	},
	// "cannot unmarshal !!seq into map[string]emulator.rawService" and the like.
	Replace: []string{
		"map[string]emulator.rawService", "a mapping of service names to services",
		"map[string]emulator.rawEndpoint", "a mapping of endpoint names to endpoints",
		"[]emulator.rawCall", "a list of calls",
	},
}
