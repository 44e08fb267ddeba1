package backend_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/backendtest"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// services is a Backend of which only Spec and Service are used.
type services struct {
	backend.Backend
	spec *spec.Spec
	svcs map[string]*backend.Service
}

func (s services) Spec() *spec.Spec                     { return s.spec }
func (s services) Service(name string) *backend.Service { return s.svcs[name] }

// A target must be in the spec and run under a controller that answers;
// each refusal names the service and the cause.
func TestCanTarget(t *testing.T) {
	down := &backendtest.Control{Service: "down", Fail: func(wire.Type) error { return syscall.ECONNREFUSED }}
	up := &backendtest.Control{Service: "up"}
	b := services{
		spec: &spec.Spec{Services: []spec.Service{{Name: "up"}, {Name: "down"}, {Name: "bare"}}},
		svcs: map[string]*backend.Service{
			"up":   {Name: "up", Control: up},
			"down": {Name: "down", Control: down},
			"bare": {Name: "bare"},
		},
	}
	tests := []struct {
		name string
		want string // "" for no error
	}{
		{"up", ""},
		{"nope", `unknown service "nope"`},
		{"bare", `service "bare" does not run under a controller`},
		{"down", `service "down": controller: connection refused`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := backend.CanTarget(b, tt.name)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CanTarget: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CanTarget: %v, want %q", err, tt.want)
			}
		})
	}
	if !errors.Is(backend.CanTarget(b, "down"), syscall.ECONNREFUSED) {
		t.Error("the controller's error is not wrapped")
	}
	if got := up.Calls(); len(got) != 1 || got[0] != wire.TStats {
		t.Errorf("the answering controller was asked %v, want one stats call", got)
	}
}
