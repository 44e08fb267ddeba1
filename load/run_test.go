package load_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/load"
)

func TestClosedMixProportions(t *testing.T) {
	srv := newTestServer(t, okHandler)
	mix := []load.Request{
		{Name: "a", URL: srv.URL + "/a", Weight: 1},
		{Name: "b", Method: http.MethodPost, URL: srv.URL + "/b", Body: []byte("payload"), Weight: 3},
	}
	res, err := load.RunClosed(context.Background(), mix, short(load.WithDuration(500*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	a, b := res.PerRequest["a"].Completed, res.PerRequest["b"].Completed
	if a+b != res.Completed {
		t.Errorf("per-request completed %d+%d != total %d", a, b, res.Completed)
	}
	if a+b < 200 {
		t.Fatalf("only %d responses completed; too few to check proportions", a+b)
	}
	// Expected share of b: 0.75; the bounds are many standard deviations wide.
	if share := float64(b) / float64(a+b); share < 0.6 || share > 0.9 {
		t.Errorf("share of b = %.3f (a=%d b=%d), want about 0.75", share, a, b)
	}
}

func TestClosedExactConnections(t *testing.T) {
	// 70 exceeds the number of per-worker recorders, so workers share them.
	for _, n := range []int{1, 3, 8, 70} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			srv := newTestServer(t, okHandler)
			res, err := load.RunClosed(context.Background(), one(srv.URL), short(load.WithConnections(n))...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Connections != n || res.Completed == 0 {
				t.Errorf("Connections = %d, Completed = %d; want %d, > 0", res.Connections, res.Completed, n)
			}
			if got := srv.connCount(); got != n {
				t.Errorf("server saw %d connections, want exactly %d", got, n)
			}
		})
	}
}

func TestStatusAndErrorsCountedSeparately(t *testing.T) {
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Microsecond)
		switch r.URL.Path {
		case "/bad":
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
		case "/redirect":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/broken":
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			w.Write([]byte("ok"))
		}
	})
	mix := []load.Request{
		{Name: "ok", URL: srv.URL + "/ok", Weight: 2},
		{Name: "bad", URL: srv.URL + "/bad", Weight: 1},
		{Name: "redirect", URL: srv.URL + "/redirect", Weight: 1},
		{Name: "broken", URL: srv.URL + "/broken", Weight: 1},
	}
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			res, err := r.run(context.Background(), mix, short()...)
			if err != nil {
				t.Fatal(err)
			}
			type counts struct{ completed, non2xx, errors bool }
			want := map[string]counts{
				"ok":       {completed: true},
				"bad":      {non2xx: true},
				"redirect": {non2xx: true},
				"broken":   {errors: true},
			}
			for name, w := range want {
				pr := res.PerRequest[name]
				got := counts{pr.Completed > 0, pr.Non2xx > 0, pr.Errors > 0}
				if got != w {
					t.Errorf("%s: completed/non2xx/errors = %d/%d/%d, want non-zero exactly for %+v",
						name, pr.Completed, pr.Non2xx, pr.Errors, w)
				}
			}
			pr := res.PerRequest
			if res.Completed != pr["ok"].Completed ||
				res.Non2xx != pr["bad"].Non2xx+pr["redirect"].Non2xx ||
				res.Errors != pr["broken"].Errors {
				t.Errorf("totals %d/%d/%d do not match per-request counts %+v", res.Completed, res.Non2xx, res.Errors, pr)
			}
			if got := res.Histogram.TotalCount(); got != int64(res.Completed) {
				t.Errorf("histogram holds %d values, want %d (successes only)", got, res.Completed)
			}
			if pr["bad"].Latency != (load.Latency{}) {
				t.Errorf("non-2xx responses have latency stats: %+v", pr["bad"].Latency)
			}
		})
	}
}

func TestTimeoutsAreErrors(t *testing.T) {
	srv := newTestServer(t, hangHandler)
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			start := time.Now()
			res, err := r.run(context.Background(), one(srv.URL), short(load.WithTimeout(50*time.Millisecond))...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Errors == 0 || res.Completed != 0 || res.Non2xx != 0 {
				t.Errorf("completed/non2xx/errors = %d/%d/%d, want 0/0/>0", res.Completed, res.Non2xx, res.Errors)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("run took %v", d)
			}
		})
	}
}

// TestWindow checks that responses completing during warm-up are excluded,
// that the hooks are called once each, in order, and that the client-side
// count agrees with server-side counters snapshotted by the hooks.
func TestWindow(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			srv := newTestServer(t, okHandler)
			var (
				calls  []string
				s0, s1 int64
			)
			hooks := load.WithWindowHooks(
				func() { calls = append(calls, "start"); s0 = srv.requests.Load() },
				func() { calls = append(calls, "end"); s1 = srv.requests.Load() },
			)
			res, err := r.run(context.Background(), one(srv.URL),
				short(load.WithWarmup(400*time.Millisecond), hooks)...)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 2 || calls[0] != "start" || calls[1] != "end" {
				t.Fatalf("hook calls = %v, want [start end]", calls)
			}
			total := srv.requests.Load()
			if s0 == 0 || res.Completed == 0 {
				t.Fatalf("server count at window start = %d, completed = %d; want both > 0", s0, res.Completed)
			}
			// Warm-up responses are excluded: the server handled clearly
			// more requests than were counted.
			if int64(res.Completed) >= total-s0/2 {
				t.Errorf("completed %d, server total %d, of which %d during warm-up", res.Completed, total, s0)
			}
			inWindow := s1 - s0
			t.Logf("completed %d; server: %d before window, %d between hooks, %d total", res.Completed, s0, inWindow, total)
			diff := int64(res.Completed) - inWindow
			if slack := max(20, inWindow/4); diff > slack || diff < -slack {
				t.Errorf("completed %d, server handled %d between the hooks", res.Completed, inWindow)
			}
			if res.Window < 300*time.Millisecond || res.Window > 2300*time.Millisecond {
				t.Errorf("Window = %v, want 300ms plus a wake-up delay", res.Window)
			}
			if want := float64(res.Completed) / res.Window.Seconds(); res.Throughput != want {
				t.Errorf("Throughput = %v, want %v", res.Throughput, want)
			}
		})
	}
}

func TestNoHooksWhenCancelledDuringWarmup(t *testing.T) {
	srv := newTestServer(t, okHandler)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var calls atomic.Int32
	hook := func() { calls.Add(1) }
	res, err := load.RunClosed(ctx, one(srv.URL), load.WithWarmup(10*time.Second), load.WithWindowHooks(hook, hook))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want DeadlineExceeded", err)
	}
	if calls.Load() != 0 || res == nil || res.Completed != 0 || res.Window != 0 || res.Throughput != 0 {
		t.Errorf("hook calls = %d, result = %+v; want no calls and an empty result", calls.Load(), res)
	}
}

func TestProgress(t *testing.T) {
	srv := newTestServer(t, okHandler)
	var (
		mu       sync.Mutex
		phases   = map[string]int{}
		last     load.Progress
		ordered  = true
		returned atomic.Bool
		late     atomic.Bool
	)
	prog := load.WithProgress(40*time.Millisecond, func(p load.Progress) {
		if returned.Load() {
			late.Store(true)
		}
		mu.Lock()
		defer mu.Unlock()
		phases[p.Phase]++
		if p.Completed < last.Completed || p.Elapsed < last.Elapsed {
			ordered = false
		}
		last = p
	})
	res, err := load.RunClosed(context.Background(), one(srv.URL), short(load.WithWarmup(200*time.Millisecond), prog)...)
	returned.Store(true)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if phases[load.PhaseWarmup] == 0 || phases[load.PhaseMeasure] == 0 || len(phases) != 2 {
		t.Errorf("phases seen = %v, want warmup and measure", phases)
	}
	if !ordered || last.Completed == 0 || last.Completed < res.Completed/2 {
		t.Errorf("progress not monotonic or implausible: last %+v, result completed %d", last, res.Completed)
	}
	if late.Load() {
		t.Error("progress callback called after the run returned")
	}
}

func TestCancelReturnsPromptly(t *testing.T) {
	handlers := map[string]http.HandlerFunc{"hanging server": hangHandler, "healthy server": okHandler}
	for hname, h := range handlers {
		for _, r := range runners {
			t.Run(hname+"/"+r.name, func(t *testing.T) {
				srv := newTestServer(t, h)
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(300*time.Millisecond, cancel)
				start := time.Now()
				res, err := r.run(ctx, one(srv.URL), load.WithConnections(4), load.WithWarmup(100*time.Millisecond),
					load.WithDuration(time.Minute), load.WithTimeout(time.Minute))
				elapsed := time.Since(start)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("error = %v, want context.Canceled", err)
				}
				if elapsed > 3*time.Second {
					t.Errorf("returned %v after start, want promptly after the cancel at 300ms", elapsed)
				}
				if res == nil {
					t.Fatal("no partial result")
				}
				if res.Window <= 0 || res.Window > 2*time.Second {
					t.Errorf("partial Window = %v, want about 200ms", res.Window)
				}
				if res.Errors != 0 {
					t.Errorf("Errors = %d: requests cancelled by the run must not count", res.Errors)
				}
				if hname == "healthy server" && res.Completed == 0 {
					t.Error("no completions in partial result")
				}
			})
		}
	}
}

func TestWindowEndCancelsOutstanding(t *testing.T) {
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			hangHandler(w, r)
			return
		}
		okHandler(w, r)
	})
	mix := []load.Request{
		{Name: "ok", URL: srv.URL + "/ok", Weight: 1},
		{Name: "hang", URL: srv.URL + "/hang", Weight: 1},
	}
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			start := time.Now()
			res, err := r.run(context.Background(), mix, short(load.WithTimeout(time.Minute))...)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("run took %v; outstanding requests were not cancelled", d)
			}
			if h := res.PerRequest["hang"]; h.Completed+h.Errors+h.Non2xx != 0 {
				t.Errorf("hanging requests were counted: %+v", h)
			}
		})
	}
}

func TestOpenRate(t *testing.T) {
	srv := newTestServer(t, okHandler)
	const rate = 200.0
	res, err := load.RunOpen(context.Background(), one(srv.URL), rate,
		load.WithWarmup(100*time.Millisecond), load.WithDuration(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != load.ModeOpen || res.Rate != rate || res.Connections != 0 {
		t.Errorf("mode/rate/connections = %s/%v/%d", res.Mode, res.Rate, res.Connections)
	}
	if res.Completed < 140 || res.Completed > 260 || res.Errors != 0 || res.Dropped != 0 {
		t.Errorf("completed/errors/dropped = %d/%d/%d, want about 200/0/0", res.Completed, res.Errors, res.Dropped)
	}
	if total := srv.requests.Load(); total < 170 || total > 330 {
		t.Errorf("server handled %d requests in 1.1s at %v/s", total, rate)
	}
}

func TestOpenLatencyFromIntendedSendTime(t *testing.T) {
	// When the window opens, the server stalls every request for 400ms.
	// Requests keep being sent on schedule; those due during the stall see
	// latencies up to 400ms.
	var stallUntil atomic.Int64
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if d := time.Until(time.Unix(0, stallUntil.Load())); d > 0 {
			time.Sleep(d)
		}
		w.Write([]byte("ok"))
	})
	hooks := load.WithWindowHooks(func() { stallUntil.Store(time.Now().Add(400 * time.Millisecond).UnixNano()) }, nil)
	res, err := load.RunOpen(context.Background(), one(srv.URL), 100,
		load.WithWarmup(100*time.Millisecond), load.WithDuration(time.Second), hooks)
	if err != nil {
		t.Fatal(err)
	}
	l := res.Latency
	if res.Completed < 60 || l.Max < 300*time.Millisecond || l.P90 < 100*time.Millisecond || l.P50 > l.P90 || l.P90 > l.Max {
		t.Errorf("completed %d, latency %+v; want ~100 completions, max >= 300ms, p90 >= 100ms", res.Completed, l)
	}
}

func TestOpenMaxInFlight(t *testing.T) {
	var cur, peak atomic.Int64
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(100 * time.Millisecond)
	})
	res, err := load.RunOpen(context.Background(), one(srv.URL), 100, load.WithMaxInFlight(2),
		load.WithWarmup(100*time.Millisecond), load.WithDuration(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("server saw %d concurrent requests, cap is 2", p)
	}
	// ~50 due in the window, at most ~2/0.1s*0.5s = 10 can be served.
	if res.Dropped < 20 || res.Completed > 15 || res.Completed == 0 {
		t.Errorf("dropped %d, completed %d; want many drops and few completions", res.Dropped, res.Completed)
	}
}

func TestResultJSON(t *testing.T) {
	srv := newTestServer(t, okHandler)
	res, err := load.RunClosed(context.Background(), one(srv.URL), short()...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mode", "connections", "window_ns", "completed", "errors", "non_2xx", "throughput_rps", "latency", "per_request"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	for _, k := range []string{"rate", "dropped", "Histogram"} {
		if _, ok := m[k]; ok {
			t.Errorf("JSON has %q: %s", k, b)
		}
	}
	lat := m["latency"].(map[string]any)
	for _, k := range []string{"mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"} {
		if v, ok := lat[k].(float64); !ok || v <= 0 {
			t.Errorf("latency.%s = %v", k, lat[k])
		}
	}
	if m["window_ns"].(float64) != float64(res.Window) {
		t.Errorf("window_ns = %v", m["window_ns"])
	}
	var back load.Result
	if err := json.Unmarshal(b, &back); err != nil || back.Completed != res.Completed || back.Latency != res.Latency {
		t.Errorf("round trip: %v, %+v", err, back)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	srv := newTestServer(t, okHandler)
	before := runtime.NumGoroutine()
	for _, r := range runners {
		if _, err := r.run(context.Background(), one(srv.URL), short()...); err != nil {
			t.Fatal(err)
		}
	}
	// Connection goroutines of the server and client wind down
	// asynchronously once the client has closed its connections.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after the runs:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// With WithPausedTime, time the load generator is said to have been kept
// from running is not on the run's clock: a server that takes 30 ms, of
// which it reports 25 ms as paused, answers in about 5 ms on that clock,
// the window lasts a second of it, and the schedule sends at the rate on
// it.
func TestOpenPausedTime(t *testing.T) {
	var paused atomic.Int64
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
		paused.Add(int64(25 * time.Millisecond))
		w.Write([]byte("ok"))
	})
	start := time.Now()
	res, err := load.RunOpen(context.Background(), one(srv.URL), 20,
		load.WithWarmup(100*time.Millisecond), load.WithDuration(time.Second),
		load.WithPausedTime(func() time.Duration { return time.Duration(paused.Load()) }))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	l := res.Latency
	t.Logf("completed %d in %v (paused %v), latency %+v", res.Completed, took, time.Duration(paused.Load()), l)
	if l.P50 < time.Millisecond || l.P50 > 20*time.Millisecond {
		t.Errorf("p50 %v on the run's clock, want about 5 ms (30 ms real, 25 ms paused)", l.P50)
	}
	// 20 requests/s for a second of the run's clock, each pausing 25 ms:
	// about half a second more of real time.
	if res.Completed < 12 || res.Completed > 30 || took < 1300*time.Millisecond {
		t.Errorf("completed %d in %v; want about 20 in about 1.6 s", res.Completed, took)
	}
}

// WithWindowFromWarmup sizes the window from the warm-up's second half:
// the rate it is given is the server's (a closed loop of 4 connections
// on a handler of 500 µs or more: at most 8000/s), and the window is
// what it returns; a size of zero keeps WithDuration's.
func TestWindowFromWarmup(t *testing.T) {
	for _, r := range runners {
		for _, tt := range []struct {
			name string
			size time.Duration
			want time.Duration
		}{{"sized", 150 * time.Millisecond, 150 * time.Millisecond}, {"zero keeps the duration", 0, 300 * time.Millisecond}} {
			t.Run(r.name+"/"+tt.name, func(t *testing.T) {
				srv := newTestServer(t, okHandler)
				var got []float64
				res, err := r.run(context.Background(), one(srv.URL), short(load.WithWindowFromWarmup(func(rate float64) time.Duration {
					got = append(got, rate)
					return tt.size
				}))...)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || !(got[0] > 0 && got[0] <= 8000) {
					t.Fatalf("size called with %v: want once, with a rate in (0, 8000]", got)
				}
				if res.Window < tt.want || res.Window > tt.want+100*time.Millisecond {
					t.Errorf("window %v, want %v (a little more allowed)", res.Window, tt.want)
				}
			})
		}
	}
}
