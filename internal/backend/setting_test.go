package backend

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestSettingError(t *testing.T) {
	flags := map[string]string{SettingPauseMethod: "--pause", SettingKubeMode: "--kube-mode"}
	flag := func(s string) string { return flags[s] }
	why := errors.New("the node agent freezes the pods (cgroup)")
	for _, c := range []struct {
		err         error
		words, flag string
	}{
		{&SettingError{Setting: SettingPauseMethod, Value: "signal", Err: why, Use: []Setting{{SettingKubeMode, "template"}}},
			"pause method signal: the node agent freezes the pods (cgroup); use Kubernetes mode template",
			"--pause signal: the node agent freezes the pods (cgroup); use --kube-mode template"},
		{&SettingError{Setting: SettingPauseMethod, Value: "cores", Err: why, Use: []Setting{{SettingPauseMethod, "cgroup"}, {SettingPauseMethod, "signal"}}},
			"pause method cores: the node agent freezes the pods (cgroup); use pause method cgroup or pause method signal",
			"--pause cores: the node agent freezes the pods (cgroup); use --pause cgroup or --pause signal"},
		{&SettingError{Err: why, Use: []Setting{{SettingKubeMode, "template"}}},
			"the node agent freezes the pods (cgroup); use Kubernetes mode template",
			"the node agent freezes the pods (cgroup); use --kube-mode template"},
		{&SettingError{Setting: SettingKubeMode, Err: why},
			"Kubernetes mode: the node agent freezes the pods (cgroup)",
			"--kube-mode: the node agent freezes the pods (cgroup)"},
		// Wrapped, and wrapping another.
		{fmt.Errorf("start: %w", &SettingError{Setting: SettingPauseMethod, Value: "cgroup",
			Err: &SettingError{Setting: SettingKubeMode, Value: "agent", Err: fs.ErrPermission}}),
			"start: pause method cgroup: Kubernetes mode agent: permission denied",
			"start: --pause cgroup: --kube-mode agent: permission denied"},
		{why, why.Error(), why.Error()},
	} {
		if got := c.err.Error(); got != c.words {
			t.Errorf("Error() = %q, want %q", got, c.words)
		}
		if got := Describe(c.err, flag); got != c.flag {
			t.Errorf("Describe = %q, want %q", got, c.flag)
		}
	}
	err := fmt.Errorf("start: %w", &SettingError{Setting: SettingPauseMethod, Err: fs.ErrPermission})
	var se *SettingError
	if !errors.As(err, &se) || se.Setting != SettingPauseMethod || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("errors.As/Is on %v: %+v", err, se)
	}
	if Describe(nil, flag) != "" {
		t.Error("Describe(nil) is not empty")
	}
}
