package local

import (
	"errors"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

func TestPauseMethod(t *testing.T) {
	own := Placement{Target: "cart", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
	shared := Placement{Target: "cart", OtherCPUs: []int{0, 1}}
	keep := Placement{Target: "cart", TargetCPUs: []int{0, 1}, OtherCPUs: []int{0, 1}, Keep: true}
	holdable := (&Deployment{placement: own}).canHold() == nil
	autoOwn := pause.MethodSignal
	if holdable {
		autoOwn = pause.MethodCores
	}
	for _, c := range []struct {
		name    string
		p       Placement
		runDir  string
		m       pause.Method
		want    pause.Method
		wantErr string
	}{
		{"auto, target on a core of its own", own, "", pause.MethodAuto, autoOwn, ""},
		{"empty is auto", own, "", "", autoOwn, ""},
		{"auto picks cgroup only under keep", shared, "/sys/fs/cgroup/freezer/x", pause.MethodAuto, pause.MethodSignal, ""},
		{"keep: auto freezes", keep, "/sys/fs/cgroup/freezer/x", pause.MethodAuto, pause.MethodCgroup, ""},
		{"keep without cgroups: auto signals", keep, "", pause.MethodAuto, pause.MethodSignal, ""},
		{"keep: cores refused", keep, "", pause.MethodCores, "", "placement keep pins nothing"},
		{"cores with a shared target", shared, "", pause.MethodCores, "", "no target with cores of its own"},
		{"cgroup without cgroups", own, "", pause.MethodCgroup, "", "no cgroups"},
		{"cgroup with cgroups", own, "/sys/fs/cgroup/freezer/x", pause.MethodCgroup, pause.MethodCgroup, ""},
		{"signal always", shared, "", pause.MethodSignal, pause.MethodSignal, ""},
		{"unknown", own, "", "stop", "", `unknown pause method "stop"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &Deployment{placement: c.p, runDir: c.runDir}
			got, err := d.PauseMethod(c.m)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("PauseMethod(%q) = %q, %v; want an error saying %q", c.m, got, err, c.wantErr)
				}
				// A method this deployment cannot make is a setting to
				// change (a backend.SettingError); an unknown one is not.
				var se *backend.SettingError
				if known := c.m != "stop"; errors.As(err, &se) != known ||
					known && (se.Setting != backend.SettingPauseMethod || se.Value != string(c.m)) {
					t.Fatalf("PauseMethod(%q) = %v (%#v); want a backend.SettingError for pause method %q: %v", c.m, err, se, c.m, known)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("PauseMethod(%q) = %q, %v; want %q", c.m, got, err, c.want)
			}
		})
	}
}
