package local

import (
	"errors"
	"fmt"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
)

// PauseMethod resolves m for this deployment: MethodAuto becomes cores
// where the deployment allows it, cgroup under keep placement where it
// can freeze, and signal otherwise; a method it does
// not allow is an error that says why. cgroup is never chosen on its own:
// on the boutique app it over-predicted by up to 42% where the other two
// methods did not (docs/method.md, "Pausing methods").
func (d *Deployment) PauseMethod(m pause.Method) (pause.Method, error) {
	if m == "" {
		m = pause.MethodAuto
	}
	check := map[pause.Method]func() error{
		pause.MethodSignal: func() error { return nil },
		pause.MethodCgroup: d.canFreeze,
		pause.MethodCores:  d.canHold,
	}
	if m != pause.MethodAuto {
		c, ok := check[m]
		if !ok {
			return "", fmt.Errorf("unknown pause method %q", m)
		}
		if err := c(); err != nil {
			return "", &backend.SettingError{Setting: backend.SettingPauseMethod, Value: string(m), Err: err}
		}
		return m, nil
	}
	if check[pause.MethodCores]() == nil {
		return pause.MethodCores, nil
	}
	// Under keep placement the target shares every core with the others:
	// freezing them is one write per service, where signals wake every
	// controller at every round on the cores the target needs (and came
	// out further from the truth there: docs/notes/trust.md).
	if d.placement.Keep && check[pause.MethodCgroup]() == nil {
		return pause.MethodCgroup, nil
	}
	return pause.MethodSignal, nil
}

// canHold says whether the cores of the other services can be held: the
// target must have cores of its own, and this process (and so the
// controllers, which run as it does) may use real-time scheduling.
func (d *Deployment) canHold() error {
	p := d.placement
	if d.opts.NoController {
		return errors.New("the services run without controllers")
	}
	hold := p.HoldCores()
	switch {
	case p.Keep:
		return errors.New("placement keep pins nothing: the target shares every core with the other services, and holding them would pause it too")
	case len(p.TargetCPUs) == 0:
		return errors.New("there is no target with cores of its own")
	case len(hold) == 0:
		return errors.New("no other service has cores to hold")
	case len(hold) != len(p.PausedCPUs()):
		return fmt.Errorf("the target %q shares CPUs %v with the other services: holding them would pause it too", p.Target, p.TargetCPUs)
	}
	h, err := pause.NewHolder(hold, time.Millisecond)
	if err != nil {
		return err
	}
	h.Close()
	return nil
}

// canFreeze says whether the other services can be frozen.
func (d *Deployment) canFreeze() error {
	switch {
	case d.opts.NoController:
		return errors.New("the services run without controllers")
	case d.runDir == "":
		return errors.New("the services have no cgroups (slowpoke may not make cgroups here: it needs root or a delegated cgroup v2 subtree)")
	case d.attachedWithoutCgroup() != "":
		return fmt.Errorf("service %q is attached and stays in its own cgroup (slowpoke moves attached services only into v1 freezer cgroups)", d.attachedWithoutCgroup())
	}
	return nil
}
