package main

import (
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

func TestStartingWhat(t *testing.T) {
	started := spec.Service{Name: "a", Command: "a"}
	attached := spec.Service{Name: "b", Attach: &spec.Attach{Port: 8080}}
	tests := []struct {
		services []spec.Service
		want     string
	}{
		{[]spec.Service{started, started}, "starting 2 services"},
		{[]spec.Service{attached, attached, attached}, "attaching to 3 services"},
		{[]spec.Service{attached}, "attaching to 1 service"},
		{[]spec.Service{started, attached, attached}, "starting 1 service and attaching to 2"},
	}
	for _, tt := range tests {
		if got := startingWhat(&spec.Spec{Services: tt.services}); got != tt.want {
			t.Errorf("startingWhat(%d services) = %q, want %q", len(tt.services), got, tt.want)
		}
	}
}
