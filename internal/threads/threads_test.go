package threads

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestEachVisitsThisProcessThreads(t *testing.T) {
	seen := map[int]bool{}
	if err := Each(func(tid int) error { seen[tid] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	// The main thread's id is the process id.
	if !seen[os.Getpid()] {
		t.Fatalf("threads %v do not include the main thread %d", seen, os.Getpid())
	}
}

func TestEachSkipsExitedThreadsAndStopsOnErrors(t *testing.T) {
	if err := Each(func(int) error { return unix.ESRCH }); err != nil {
		t.Fatalf("ESRCH not skipped: %v", err)
	}
	boom := errors.New("boom")
	calls := 0
	if err := Each(func(int) error { calls++; return boom }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("got %v after %d calls, want boom after 1", err, calls)
	}
}
