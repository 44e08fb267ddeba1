package threads

import (
	"os/exec"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// A child started with StartOn runs on the CPUs given, and the starting
// thread gets its own affinity back; with none the child inherits.
func TestStartOnPinsTheChild(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	all := CPUs(&mine)
	last := all[len(all)-1]
	for _, tc := range []struct {
		name string
		cpus []int
		want []int
	}{
		{"pinned", []int{last}, []int{last}},
		{"inherits", nil, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "5")
			if err := StartOn(tc.cpus, cmd.Start); err != nil {
				t.Skip("cannot start sleep:", err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			var got unix.CPUSet
			if err := unix.SchedGetaffinity(cmd.Process.Pid, &got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(CPUs(&got), tc.want) {
				t.Errorf("child on CPUs %v, want %v", CPUs(&got), tc.want)
			}
			var after unix.CPUSet
			if unix.SchedGetaffinity(0, &after); after != mine {
				t.Errorf("the starting thread is left on CPUs %v, was on %v", CPUs(&after), all)
			}
		})
	}
}
