package experiment

import (
	"errors"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// What checkPools refuses of PoolOptions it refuses with a
// backend.SettingError naming the option in words.
func TestPoolOptionErrors(t *testing.T) {
	d := placed{spec: &spec.Spec{}}
	for _, c := range []struct {
		o             PoolOptions
		setting, text string
	}{
		{PoolOptions{SLA: time.Second, Connections: 64, Step: 500 * time.Millisecond}, SettingStep,
			"step 500ms: too short: at least 1s (10 samples)"},
		{PoolOptions{SLA: time.Second, Connections: 64, Levels: []int{4, 8}}, SettingLevels,
			"levels [4 8]: sweep at least 3 pool sizes"},
		{PoolOptions{SLA: time.Second, Connections: 2}, SettingConnections,
			"connections 2: too few pool sizes to sweep ([1 2]): give at least 3 connections (or workload.connections in the spec)"},
	} {
		_, err := checkPools(d, c.o)
		var se *backend.SettingError
		if !errors.As(err, &se) || se.Setting != c.setting {
			t.Errorf("checkPools(%+v) = %v (%T), want a SettingError for %s", c.o, err, err, c.setting)
			continue
		}
		if err.Error() != c.text {
			t.Errorf("checkPools(%+v) = %q, want %q", c.o, err, c.text)
		}
	}
}
