package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/kube"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

// TestSettingErrorText checks that a setting a library refused in words
// (backend.SettingError) reaches the CLI's user named by its flag, however
// it was wrapped on the way.
func TestSettingErrorText(t *testing.T) {
	method := func(m pause.Method) error { _, err := kube.PauseMethod(m); return err }
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"agent, signal", kube.CheckPause(kube.ModeAgent, pause.MethodSignal),
			"--pause signal: the node agent freezes the pods (cgroup); use --kube-mode template"},
		{"any mode, cores", kube.CheckPause(kube.ModeAuto, pause.MethodCores),
			"--pause cores: not available on Kubernetes yet (neither the controllers in the pods nor the node agent hold cores); use --pause cgroup or --pause signal"},
		{"template, cgroup", method(pause.MethodCgroup),
			"--pause cgroup: not available on Kubernetes, where the controllers run inside the services' unprivileged containers; use --pause signal"},
		{"wrapped", fmt.Errorf("start: %w", method(pause.MethodCores)),
			"start: --pause cores: not available on Kubernetes, where the controllers run inside the services' unprivileged containers; use --pause signal"},
		{"no setting at fault", &backend.SettingError{Err: errors.New("the services' pods run on 2 nodes (a, b)"),
			Use: []backend.Setting{{Name: backend.SettingKubeMode, Value: "template"}}},
			"the services' pods run on 2 nodes (a, b); use --kube-mode template"},
		{"nested", &backend.SettingError{Setting: backend.SettingPauseMethod, Value: "cgroup",
			Err: fmt.Errorf("only the node agent makes it: %w", &backend.SettingError{Setting: backend.SettingKubeMode, Value: "agent", Err: errors.New("forbidden")})},
			"--pause cgroup: only the node agent makes it: --kube-mode agent: forbidden"},
		{"over the cap", &backend.SettingError{Setting: experiment.SettingReduction, Value: "50%", Err: errors.New("over the hard cap 1ms"),
			Use: []backend.Setting{{Name: experiment.SettingBatch, Value: "under 100"}, {Name: experiment.SettingMaxPause, Value: "of at least 5ms"}}},
			"--reduce 50%: over the hard cap 1ms; use --batch under 100 or --max-pause of at least 5ms"},
		{"trigger", &backend.SettingError{Setting: experiment.SettingTrigger, Value: "calls", Err: errors.New("not instrumented"),
			Use: []backend.Setting{{Name: experiment.SettingTrigger, Value: "cpu"}, {Name: experiment.SettingTrigger, Value: "auto"}}},
			"--trigger calls: not instrumented; use --trigger cpu or --trigger auto"},
		{"pools", &backend.SettingError{Setting: experiment.SettingLevels, Value: "[4 8]", Err: errors.New("sweep at least 3 pool sizes")},
			"--levels [4 8]: sweep at least 3 pool sizes"},
		{"unmapped setting keeps its words", &backend.SettingError{Setting: "colour", Value: "red", Err: errors.New("no")},
			"colour red: no"},
		{"not a setting", errors.New("--pause: unknown pause method"), "--pause: unknown pause method"},
	} {
		if got := errText(c.err); got != c.want {
			t.Errorf("%s: errText(%q) = %q, want %q", c.name, c.err, got, c.want)
		}
	}
}

// TestSettingFlagsExist checks that every flag a setting maps to is a
// flag of some command.
func TestSettingFlagsExist(t *testing.T) {
	all := map[string]bool{}
	for _, p := range flagPages {
		for _, f := range commandFlags(t, p.args) {
			all["--"+f] = true
		}
	}
	for setting, flag := range settingFlags {
		if !all[flag] || !strings.HasPrefix(flag, "--") {
			t.Errorf("setting %q maps to %s, which no command has", setting, flag)
		}
	}
}
