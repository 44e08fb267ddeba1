package inservice

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newLocal is a link with no controller, for driving its methods directly.
func newLocal() *Link {
	return &Link{endpoints: newCounterSet(), downstream: newCounterSet(), tick: make(chan struct{}, 1), counters: poolCounters{base: time.Now()}}
}

// TestLimitNeverExceeded runs many callers through limits changed while they
// run, and checks that no more calls than the limit in force run at once
// (beyond those admitted before it was set), and that every caller is served.
func TestLimitNeverExceeded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits []int64
	}{
		{"fixed 1", []int64{1}},
		{"fixed 4", []int64{4}},
		{"lowered", []int64{16, 3, 1}},
		{"raised", []int64{1, 5, 20}},
		{"removed and set", []int64{2, 0, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newLocal()
			a.SetPool(tc.limits[0], 0)
			var (
				running atomic.Int64
				served  atomic.Int64
				mu      sync.Mutex
				limit   = tc.limits[0]
				excess  int64
			)
			const callers, calls = 32, 60
			var wg sync.WaitGroup
			for i := 0; i < callers; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; j < calls; j++ {
						c, err := a.ServerStart(context.Background(), "x")
						if err != nil {
							t.Error(err)
							return
						}
						n := running.Add(1)
						mu.Lock()
						// Only a limit that has been in force since the
						// calls now running were admitted binds them.
						if limit > 0 && n > limit && a.pool.limit.Load() == limit {
							excess = max(excess, n)
						}
						mu.Unlock()
						time.Sleep(50 * time.Microsecond)
						running.Add(-1)
						a.ServerEnd(c)
						served.Add(1)
					}
				}()
			}
			for _, l := range tc.limits[1:] {
				time.Sleep(20 * time.Millisecond)
				// Wait for the calls above the new limit to drain before
				// checking it: set it, then hold the check off until the
				// admitted count has come down once. (Not the running
				// count: a call admitted under the old limit may not
				// have counted itself as running yet.)
				a.SetPool(l, 0)
				for l > 0 && a.pool.admitted.Load() > l {
					time.Sleep(100 * time.Microsecond)
				}
				mu.Lock()
				limit = l
				mu.Unlock()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("callers starved: %d of %d calls served, %d queued", served.Load(), callers*calls, a.pool.queued.Load())
			}
			if excess > 0 {
				t.Errorf("%d calls ran at once under a limit of %d", excess, limit)
			}
			if got := served.Load(); got != callers*calls {
				t.Errorf("served %d calls, want %d", got, callers*calls)
			}
			if a.pool.admitted.Load() != 0 || a.pool.queued.Load() != 0 {
				t.Errorf("after all calls: admitted %d queued %d, want 0 0", a.pool.admitted.Load(), a.pool.queued.Load())
			}
		})
	}
}

// TestQueueIsFIFO checks that callers queued under a limit of 1 are admitted
// in the order they arrived.
func TestQueueIsFIFO(t *testing.T) {
	a := newLocal()
	a.SetPool(1, 0)
	first, _ := a.ServerStart(context.Background(), "x")
	const n = 20
	order := make(chan int, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			c, _ := a.ServerStart(context.Background(), "x")
			order <- i
			a.ServerEnd(c)
		}(i)
		// Each caller is in line before the next one arrives.
		for a.pool.queued.Load() != int64(i+1) {
			time.Sleep(50 * time.Microsecond)
		}
	}
	a.ServerEnd(first)
	for want := 0; want < n; want++ {
		if got := <-order; got != want {
			t.Fatalf("admitted caller %d, want %d (first in, first out)", got, want)
		}
	}
}

// TestCancelledWhileQueued checks that a caller whose context ends in the
// queue leaves it without taking a slot, and that the callers behind it are
// still admitted.
func TestCancelledWhileQueued(t *testing.T) {
	a := newLocal()
	a.SetPool(1, 0)
	first, _ := a.ServerStart(context.Background(), "x")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := a.ServerStart(ctx, "x")
		errc <- err
	}()
	for a.pool.queued.Load() != 1 {
		time.Sleep(50 * time.Microsecond)
	}
	admitted := make(chan struct{})
	go func() {
		c, _ := a.ServerStart(context.Background(), "x")
		close(admitted)
		a.ServerEnd(c)
	}()
	for a.pool.queued.Load() != 2 {
		time.Sleep(50 * time.Microsecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: got %v, want context.Canceled", err)
	}
	a.ServerEnd(first)
	select {
	case <-admitted:
	case <-time.After(10 * time.Second):
		t.Fatal("the caller behind a cancelled one was never admitted")
	}
	if got := a.Snapshot().Total; got != 2 {
		t.Errorf("counted %d calls, want 2 (the cancelled one was not admitted)", got)
	}
}

// TestPoolCounters checks the figures a pool-size advisor samples.
func TestPoolCounters(t *testing.T) {
	a := newLocal()
	// A threshold far from the good calls' sleeps: a busy machine can
	// wake this goroutine tens of milliseconds late.
	a.SetPool(0, 300*time.Millisecond)
	for _, d := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 400 * time.Millisecond} {
		c, _ := a.ServerStart(context.Background(), "x")
		time.Sleep(d)
		a.ServerEnd(c)
	}
	m := a.Snapshot()
	if m.Done != 3 || m.Good != 2 {
		t.Errorf("done %d good %d, want 3 2", m.Done, m.Good)
	}
	if b := time.Duration(m.BusyNS); b < 403*time.Millisecond || b > 3*time.Second {
		t.Errorf("busy %v, want at least the 403ms slept", b)
	}
	// A call in flight counts for the time it has been in flight so far.
	c, _ := a.ServerStart(context.Background(), "x")
	b0 := a.Snapshot().BusyNS
	time.Sleep(20 * time.Millisecond)
	if d := time.Duration(a.Snapshot().BusyNS - b0); d < 19*time.Millisecond || d > time.Second {
		t.Errorf("one call in flight for 20ms added %v of busy time", d)
	}
	a.ServerEnd(c)
	if m.ThresholdNS != int64(300*time.Millisecond) || m.Limit != 0 {
		t.Errorf("threshold %d limit %d", m.ThresholdNS, m.Limit)
	}
	var nilLink *Link
	c, err := nilLink.ServerStart(context.Background(), "x")
	nilLink.ServerEnd(c)
	nilLink.SetPool(3, time.Second)
	if err != nil {
		t.Errorf("nil link: %v", err)
	}
}

// TestBusyNeverGoesBack reads the in-flight integral while calls start and
// end on many goroutines: an integral of a count can only grow, so any
// reading below the one before is a torn read of its terms.
func TestBusyNeverGoesBack(t *testing.T) {
	a := newLocal()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, _ := a.ServerStart(context.Background(), "x")
				a.ServerEnd(c)
			}
		})
	}
	prev := a.Snapshot().BusyNS
	for range 2000 {
		b := a.Snapshot().BusyNS
		if b < prev {
			close(stop)
			wg.Wait()
			t.Fatalf("in-flight integral went back from %d to %d", prev, b)
		}
		prev = b
	}
	close(stop)
	wg.Wait()
}
