//go:build linux && (amd64 || arm64)

package controller

import (
	"os"
	"os/exec"
	"os/signal"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// After quietChildStops, stopping and continuing a child no longer signals
// this process; the child's exit still does. Before it, a stop does.
func TestQuietChildStops(t *testing.T) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD)
	defer signal.Stop(sigs)
	got := func(within time.Duration) bool {
		select {
		case <-sigs:
			return true
		case <-time.After(within):
			return false
		}
	}
	drain := func() {
		for got(50 * time.Millisecond) {
		}
	}
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := child.Process.Pid
	// Other tests' controllers may have set the flag already: clear it
	// for the control, and leave it set.
	if err := childStopSignals(true); err != nil {
		t.Fatal(err)
	}
	defer quietChildStops()
	defer func() {
		unix.Kill(pid, unix.SIGCONT)
		child.Process.Kill()
		child.Wait()
	}()

	if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if !got(5 * time.Second) {
		t.Fatal("no SIGCHLD for a stop even before quietChildStops: the test cannot tell anything")
	}
	unix.Kill(pid, unix.SIGCONT)
	drain()

	if err := quietChildStops(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		unix.Kill(pid, unix.SIGSTOP)
		unix.Kill(pid, unix.SIGCONT)
	}
	if got(300 * time.Millisecond) {
		t.Fatal("SIGCHLD for a stop or continue after quietChildStops")
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !got(5 * time.Second) {
		t.Fatal("no SIGCHLD for the child's exit after quietChildStops")
	}
}
