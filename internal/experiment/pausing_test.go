package experiment

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/backend/backendtest"
	"github.com/slowpoke-dev/slowpoke/internal/pause"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// served is placed with services, each under a controller (never dialled),
// each with a process group and a cgroup.
type served struct {
	placed
	svcs    []*backend.Service
	pids    map[string]int
	cgroups map[string]string
}

func (s served) ProcessIDs(name string) []int {
	if pid := s.pids[name]; pid > 0 {
		return []int{pid}
	}
	return nil
}

func (s served) FreezeRefs(name string) (string, []string) { return s.cgroups[name], nil }

func (s served) Services() []*backend.Service { return s.svcs }

func (s served) Service(name string) *backend.Service {
	for _, svc := range s.svcs {
		if svc.Name == name {
			return svc
		}
	}
	return nil
}

// Every method tells every controller something wire accepts, in that
// method's variant: the target what it pauses the others with, the others
// their part.
func TestPausingsConfigureEveryService(t *testing.T) {
	pl := backend.Placement{Target: "t", TargetCPUs: []int{1}, OtherCPUs: []int{0}}
	d := served{placed: placed{pl: pl}, pids: map[string]int{}, cgroups: map[string]string{}}
	for i, name := range []string{"t", "a", "b"} {
		d.svcs = append(d.svcs, &backend.Service{Name: name, Control: &backendtest.Control{Service: name, Address: fmt.Sprintf("127.0.0.1:%d", 1+i)}})
		d.pids[name], d.cgroups[name] = 1000+i, "/sys/fs/cgroup/slowpoke/"+name
	}
	graph := map[string][]string{"t": {"a"}, "a": {"t", "b"}, "b": {"a"}}
	sd := &slowdown{batch: 10, pause: time.Millisecond}
	tests := []struct {
		method pause.Method
		check  func(t *testing.T, name string, p wire.Pause)
	}{
		{pause.MethodSignal, func(t *testing.T, name string, p wire.Pause) {
			if p.Signal == nil || len(p.Signal.Neighbours) != len(graph[name]) || p.Signal.LeadNS != int64(DefaultPauseLead) {
				t.Errorf("%s: %+v, want signals to its %d neighbours", name, p.Signal, len(graph[name]))
			}
		}},
		{pause.MethodCgroup, func(t *testing.T, name string, p wire.Pause) {
			want := []string(nil)
			if name == "t" {
				want = []string{d.cgroups["a"], d.cgroups["b"]}
			}
			if p.Cgroup == nil || !slices.Equal(p.Cgroup.Freeze, want) {
				t.Errorf("%s: %+v, want cgroups %v to freeze", name, p.Cgroup, want)
			}
			if name == "t" && !slices.Equal(p.Cgroup.Colocated, []int{os.Getpid()}) {
				t.Errorf("the freezes are not extended by the load generator's CPU: %+v", p.Cgroup)
			}
		}},
		{pause.MethodCores, func(t *testing.T, name string, p wire.Pause) {
			want := []int(nil)
			if name == "t" {
				want = []int{0}
			}
			if p.Cores == nil || !slices.Equal(p.Cores.Cores, want) {
				t.Errorf("%s: %+v, want cores %v to hold", name, p.Cores, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.method), func(t *testing.T) {
			r := &Runner{d: d, method: tt.method, opts: Options{Target: "t"}}
			forwards := false
			for _, svc := range d.svcs {
				cf, skip := r.configure(svc.Name, sd, graph)
				if skip {
					t.Errorf("%s takes no part", svc.Name)
				}
				if err := cf.Check(); err != nil {
					t.Errorf("%s: %+v: %v", svc.Name, cf, err)
				}
				if m, _ := cf.Pause.Method(); m.Name() != string(tt.method) {
					t.Errorf("%s: the %s method, want %s", svc.Name, m.Name(), tt.method)
				}
				tt.check(t, svc.Name, cf.Pause)
				forwards = forwards || cf.Pause.Signal != nil && len(cf.Pause.Signal.Neighbours) > 0
			}
			// What New refuses graph rounds and uncoordinated pausing by.
			if got := pausings[tt.method].rounds(); got != forwards {
				t.Errorf("rounds() = %v, but rounds forwarded: %v", got, forwards)
			}
		})
	}
	for m := range pausings {
		if !slices.Contains(pause.Methods, m) || m == pause.MethodAuto {
			t.Errorf("pausing for %q, not a method a run uses", m)
		}
	}
}
