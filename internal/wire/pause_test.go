package wire

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func signal(s SignalPause) Pause { return Pause{Signal: &s} }
func cgroup(g CgroupPause) Pause { return Pause{Cgroup: &g} }

// uid is a pod's UID, as the API server writes it.
const uid = "0c2e8a7d-5b1f-4c3e-9a2b-7d6e5f4a3b21"

func cores(h CoresPause) Pause { return Pause{Cores: &h} }

// Every bound and combination of a configure message is checked by
// Configure.Check, and what a controller would run passes.
func TestConfigureCheck(t *testing.T) {
	const cg = "/sys/fs/cgroup/slowpoke/x"
	tests := []struct {
		name string
		cf   Configure
		want string // "" for valid
	}{
		{"signal by default", Configure{Epoch: 1, PausePerRoundNS: 1}, ""},
		{"a signal target", Configure{Target: true, Batch: 1, Pause: signal(SignalPause{Neighbours: []Neighbour{{"b", "127.0.0.1:1"}}, Colocated: []int{1}, CorePeers: []int{2}, LeadNS: int64(MaxLead)})}, ""},
		{"a local non-target", Configure{Batch: MaxBatch, Pause: signal(SignalPause{Local: true})}, ""},
		{"a freezing target", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Freeze: []string{cg}, Colocated: []int{1}})}, ""},
		{"a holding target", Configure{Target: true, Batch: 1, Pause: cores(CoresPause{Cores: []int{1, MaxCPU - 1}, HeldFile: "/dev/shm/slowpoke-held-1"})}, ""},
		{"a non-target under another's freezes or holds", Configure{Pause: cores(CoresPause{})}, ""},
		{"a target's rounds by CPU", Configure{Target: true, Batch: 1, CPUPerCallNS: int64(MaxCPUPerCall)}, ""},

		{"two methods", Configure{Pause: Pause{Signal: &SignalPause{}, Cores: &CoresPause{}}}, "signal and cores at once"},
		{"a target without batch", Configure{Target: true}, "batch"},
		{"a batch too large", Configure{Target: true, Batch: MaxBatch + 1}, "batch"},
		{"local without batch", Configure{Pause: signal(SignalPause{Local: true})}, "batch"},
		{"negative CPU per call", Configure{Target: true, Batch: 1, CPUPerCallNS: -1}, "CPU per call"},
		{"CPU per call too large", Configure{Target: true, Batch: 1, CPUPerCallNS: int64(MaxCPUPerCall) + 1}, "CPU per call"},
		{"CPU per call on a non-target", Configure{CPUPerCallNS: 1}, "only the target's rounds"},
		{"a negative pause", Configure{PausePerRoundNS: -1}, "pause per round"},

		{"local on the target", Configure{Target: true, Batch: 1, Pause: signal(SignalPause{Local: true})}, "local mode"},
		{"too many neighbours", Configure{Pause: signal(SignalPause{Neighbours: slices.Repeat([]Neighbour{{"b", "127.0.0.1:1"}}, MaxNeighbours+1)})}, "neighbours"},
		{"a neighbour without a port", Configure{Pause: signal(SignalPause{Neighbours: []Neighbour{{"b", "127.0.0.1"}}})}, "bad neighbour"},
		{"a neighbour without a name", Configure{Pause: signal(SignalPause{Neighbours: []Neighbour{{"", "127.0.0.1:1"}}})}, "bad neighbour"},
		{"a negative lead", Configure{Pause: signal(SignalPause{LeadNS: -1})}, "lead"},
		{"a lead too long", Configure{Pause: signal(SignalPause{LeadNS: int64(MaxLead + time.Nanosecond)})}, "lead"},
		{"a co-located pid 0", Configure{Pause: signal(SignalPause{Colocated: []int{0}})}, "bad pid 0"},
		{"a negative core peer", Configure{Pause: signal(SignalPause{CorePeers: []int{-1}})}, "bad pid -1"},
		{"too many core peers", Configure{Pause: signal(SignalPause{CorePeers: slices.Repeat([]int{1}, MaxColocated+1)})}, "core peers"},

		{"cgroups on a non-target", Configure{Pause: cgroup(CgroupPause{Freeze: []string{cg}})}, "only the target"},
		{"co-located on a freezing non-target", Configure{Pause: cgroup(CgroupPause{Colocated: []int{1}})}, "only the target"},
		{"cgroup without cgroups", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{})}, "cgroups or the pods to freeze"},
		{"a target freezing pods", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Pods: []string{uid}})}, ""},
		{"pods on a non-target", Configure{Pause: cgroup(CgroupPause{Pods: []string{uid}})}, "only the target"},
		{"a pod UID in upper case", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Pods: []string{strings.ToUpper(uid)}})}, "not a pod's UID"},
		{"a pod UID that is a path", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Pods: []string{"../../" + uid[6:]}})}, "not a pod's UID"},
		{"too many pods", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Pods: slices.Repeat([]string{uid}, MaxPods+1)})}, "pods to freeze"},
		{"too many cgroups", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Freeze: slices.Repeat([]string{cg}, MaxNeighbours+1)})}, "cgroups to freeze"},
		{"a path outside slowpoke's", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Freeze: []string{"/sys/fs/cgroup/freezer"}})}, "not a cgroup of slowpoke's"},
		{"a relative path", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Freeze: []string{"slowpoke/x"}})}, "not a cgroup of slowpoke's"},
		{"an unclean path", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Freeze: []string{"/sys/fs/cgroup/slowpoke/../../etc"}})}, "not a cgroup of slowpoke's"},
		{"a path too long", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Freeze: []string{"/slowpoke/" + strings.Repeat("x", MaxPath)}})}, "not a cgroup of slowpoke's"},
		{"a bad co-located pid", Configure{Target: true, Batch: 1, Pause: cgroup(CgroupPause{Freeze: []string{cg}, Colocated: []int{-1}})}, "bad pid"},

		{"cores on a non-target", Configure{Pause: cores(CoresPause{Cores: []int{1}})}, "only the target"},
		{"a held-time file on a non-target", Configure{Pause: cores(CoresPause{HeldFile: "/dev/shm/slowpoke-held-1"})}, "only the target"},
		{"cores without cores", Configure{Target: true, Batch: 1, Pause: cores(CoresPause{HeldFile: "/dev/shm/slowpoke-held-1"})}, "cores to hold"},
		{"too many cores", Configure{Target: true, Batch: 1, Pause: cores(CoresPause{Cores: make([]int, MaxHoldCores+1)})}, "cores to hold"},
		{"a negative core", Configure{Target: true, Batch: 1, Pause: cores(CoresPause{Cores: []int{-1}})}, "bad core -1"},
		{"a core beyond the last", Configure{Target: true, Batch: 1, Pause: cores(CoresPause{Cores: []int{MaxCPU}})}, "bad core"},
		{"a held-time file elsewhere", Configure{Target: true, Batch: 1, Pause: cores(CoresPause{Cores: []int{1}, HeldFile: "/etc/passwd"})}, "held-time file"},
		{"a relative held-time file", Configure{Target: true, Batch: 1, Pause: cores(CoresPause{Cores: []int{1}, HeldFile: "slowpoke-held-1-ab"})}, "held-time file"},
		{"an unclean held-time file", Configure{Target: true, Batch: 1, Pause: cores(CoresPause{Cores: []int{1}, HeldFile: "/dev/shm/../slowpoke-held-1"})}, "held-time file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cf.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check = %v, want it valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check = %v, want an error about %q", err, tt.want)
			}
		})
	}
}

// On the wire a method is one key under "pause", holding only its own
// fields, and it decodes as the method it was.
func TestPauseOnTheWire(t *testing.T) {
	tests := []struct {
		p    Pause
		json string
		name string
	}{
		{Pause{}, `{}`, "signal"},
		{signal(SignalPause{LeadNS: 5}), `{"signal":{"lead_ns":5}}`, "signal"},
		{cgroup(CgroupPause{Freeze: []string{"/a/slowpoke/b"}}), `{"cgroup":{"freeze":["/a/slowpoke/b"]}}`, "cgroup"},
		{cores(CoresPause{Cores: []int{3}}), `{"cores":{"cores":[3]}}`, "cores"},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.p)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.p, b, err, tt.json)
		}
		var back Pause
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		m, err := back.Method()
		if err != nil || m.Name() != tt.name {
			t.Errorf("%s decodes as %v, %v; want the %s method", b, m, err, tt.name)
		}
	}
}
