package experiment

import (
	"reflect"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

func TestStarSendsFromTheTargetToEveryOtherService(t *testing.T) {
	tests := []struct {
		name     string
		services []string
		target   string
		want     map[string][]string
	}{
		{"target first", []string{"a", "b", "c"}, "a", map[string][]string{"a": {"b", "c"}}},
		{"target in the middle", []string{"a", "b", "c"}, "b", map[string][]string{"b": {"a", "c"}}},
		{"alone", []string{"a"}, "a", map[string][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &spec.Spec{}
			for _, n := range tt.services {
				s.Services = append(s.Services, spec.Service{Name: n})
			}
			r := &Runner{spec: s, opts: Options{Target: tt.target}}
			if got := r.star(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("star() = %v, want %v", got, tt.want)
			}
		})
	}
}
