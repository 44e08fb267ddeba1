package kube

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// TestSettingErrors checks that what the backend refuses of the run's
// settings it refuses with a backend.SettingError, which names the
// setting and what to use instead, and no command's flags.
func TestSettingErrors(t *testing.T) {
	agent := &Deployment{agent: true, spec: &spec.Spec{Services: []spec.Service{{Name: "cart"}}}}
	agentRestarts := &Deployment{opts: Options{Mode: ModeAgent, Restarts: true}}
	template := backend.Setting{Name: backend.SettingKubeMode, Value: string(ModeTemplate)}
	for _, c := range []struct {
		name     string
		run      func() error
		setting  string
		value    string
		use      []backend.Setting
		wantText string
	}{
		{"CheckPause agent signal", func() error { return CheckPause(ModeAgent, pause.MethodSignal) },
			backend.SettingPauseMethod, "signal", []backend.Setting{template},
			"pause method signal: the node agent freezes the pods (cgroup); use Kubernetes mode template"},
		{"CheckPause auto cores", func() error { return CheckPause(ModeAuto, pause.MethodCores) },
			backend.SettingPauseMethod, "cores", []backend.Setting{{Name: backend.SettingPauseMethod, Value: "cgroup"}, {Name: backend.SettingPauseMethod, Value: "signal"}}, ""},
		{"CheckPause template cgroup", func() error { return CheckPause(ModeTemplate, pause.MethodCgroup) },
			backend.SettingPauseMethod, "cgroup", []backend.Setting{{Name: backend.SettingPauseMethod, Value: "signal"}}, ""},
		{"PauseMethod cores", func() error { _, err := PauseMethod(pause.MethodCores); return err },
			backend.SettingPauseMethod, "cores", []backend.Setting{{Name: backend.SettingPauseMethod, Value: "signal"}}, ""},
		{"agent PauseMethod cores", func() error { _, err := agent.PauseMethod(pause.MethodCores); return err },
			backend.SettingPauseMethod, "cores", []backend.Setting{template}, ""},
		{"agent Restart", func() error { return agent.Restart(context.Background(), "cart", nil) },
			backend.SettingKubeMode, "agent", []backend.Setting{template}, ""},
		{"agent mode restarting", func() error { _, err := agentRestarts.chooseMode(context.Background()); return err },
			backend.SettingKubeMode, "agent", []backend.Setting{template},
			"Kubernetes mode agent: the run restarts the target (its ground truth), which the node agent cannot do yet; use Kubernetes mode template"},
	} {
		err := c.run()
		var se *backend.SettingError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v (%T), want a *backend.SettingError", c.name, err, err)
			continue
		}
		if se.Setting != c.setting || se.Value != c.value || !slices.Equal(se.Use, c.use) {
			t.Errorf("%s: %+v, want setting %q, value %q, use %v", c.name, se, c.setting, c.value, c.use)
		}
		if c.wantText != "" && err.Error() != c.wantText {
			t.Errorf("%s: %q, want %q", c.name, err, c.wantText)
		}
	}
	if err := CheckPause(ModeAgent, pause.MethodCgroup); err != nil {
		t.Errorf("CheckPause(agent, cgroup) = %v", err)
	}
	var se *backend.SettingError
	if _, err := PauseMethod("freeze"); err == nil || errors.As(err, &se) {
		t.Errorf("PauseMethod(freeze) = %v, want an error of its own (an unknown method is no setting to change)", err)
	}
}
