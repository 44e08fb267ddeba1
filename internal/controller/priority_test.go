package controller

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// shortSlice leaves the thread with the short slice where the kernel keeps
// one (Linux 6.12 and later, and the privilege to raise the priority).
func TestShortSlice(t *testing.T) {
	type result struct {
		attr *unix.SchedAttr
		err  error
	}
	done := make(chan result)
	go func() {
		// The thread exits with this goroutine, so the test process keeps
		// its own priorities.
		runtime.LockOSThread()
		tid := unix.Gettid()
		shortSlice(tid)
		attr, err := unix.SchedGetAttr(tid, 0)
		done <- result{attr, err}
	}()
	r := <-done
	if r.err != nil {
		t.Skipf("sched_getattr: %v", r.err)
	}
	if r.attr.Runtime == 0 || r.attr.Nice != controllerNice {
		t.Skipf("this kernel or user keeps no short slice (nice %d, slice %d ns)", r.attr.Nice, r.attr.Runtime)
	}
	if got := r.attr.Runtime; got != uint64(controllerSlice.Nanoseconds()) {
		t.Fatalf("slice %d ns, want %d", got, controllerSlice.Nanoseconds())
	}
}
