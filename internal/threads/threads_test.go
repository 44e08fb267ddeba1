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

// SetAffinity reaches every thread, the ones the runtime made before it
// included.
func TestSetAffinityReachesEveryThread(t *testing.T) {
	var was, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := 0; i < 1024 && cpu < 0; i++ {
		if was.IsSet(i) {
			cpu = i
		}
	}
	one.Set(cpu)
	defer func() {
		if err := SetAffinity(&was); err != nil {
			t.Errorf("restore: %v", err)
		}
	}()
	if err := SetAffinity(&one); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := Each(func(tid int) error {
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &got); err != nil {
			return err
		}
		if got != one {
			t.Errorf("thread %d has CPUs %v, want only %d", tid, got, cpu)
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no thread visited")
	}
}
