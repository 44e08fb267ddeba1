package load_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slowpoke-dev/slowpoke/load"
)

// A weighted mix of two request types against a local server, run as a
// closed loop with four connections.
func ExampleRunClosed() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))
	defer srv.Close()

	mix := []load.Request{
		{Name: "home", URL: srv.URL + "/", Weight: 3},
		{Name: "login", Method: http.MethodPost, URL: srv.URL + "/login",
			Header: http.Header{"Content-Type": {"application/json"}},
			Body:   []byte(`{"user":"alice"}`), Weight: 1},
	}
	res, err := load.RunClosed(context.Background(), mix,
		load.WithConnections(4),
		load.WithWarmup(100*time.Millisecond),
		load.WithDuration(300*time.Millisecond),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Mode, res.Connections, res.Window >= 300*time.Millisecond)
	fmt.Println("completed:", res.Completed > 0, "errors:", res.Errors, "non-2xx:", res.Non2xx)
	fmt.Println("both types sent:", res.PerRequest["home"].Completed > 0 && res.PerRequest["login"].Completed > 0)
	// Output:
	// closed 4 true
	// completed: true errors: 0 non-2xx: 0
	// both types sent: true
}

// An open-loop run at 200 requests/s. Latency is measured from the intended
// send time of each request.
func ExampleRunOpen() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()

	mix := []load.Request{{Name: "ping", URL: srv.URL, Weight: 1}}
	res, err := load.RunOpen(context.Background(), mix, 200,
		load.WithWarmup(100*time.Millisecond),
		load.WithDuration(500*time.Millisecond),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s at %.0f/s: about 200 completed per second: %v\n", res.Mode, res.Rate, res.Throughput > 100 && res.Throughput < 300)
	// Output:
	// open at 200/s: about 200 completed per second: true
}

// The window hooks let a caller snapshot server-side counters exactly when
// the measurement window opens and closes.
func ExampleWithWindowHooks() {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
	}))
	defer srv.Close()

	var atStart, atEnd int64
	res, err := load.RunClosed(context.Background(), []load.Request{{Name: "r", URL: srv.URL, Weight: 1}},
		load.WithConnections(2),
		load.WithWarmup(100*time.Millisecond),
		load.WithDuration(200*time.Millisecond),
		load.WithWindowHooks(
			func() { atStart = served.Load(); fmt.Println("window opens") },
			func() { atEnd = served.Load(); fmt.Println("window closed") },
		),
	)
	if err != nil {
		log.Fatal(err)
	}
	// Server and client agree up to the few requests in flight at each
	// edge of the window.
	diff := int64(res.Completed) - (atEnd - atStart)
	fmt.Println("server and client agree:", diff > -50 && diff < 50)
	// Output:
	// window opens
	// window closed
	// server and client agree: true
}

// A window sized to hold ten request cycles (connections / throughput)
// at the throughput the warm-up reached, and never shorter than a second.
func ExampleWithWindowFromWarmup() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
	}))
	defer srv.Close()

	const conns = 4
	res, err := load.RunClosed(context.Background(), []load.Request{{Name: "r", URL: srv.URL, Weight: 1}},
		load.WithConnections(conns),
		load.WithWarmup(200*time.Millisecond),
		load.WithDuration(time.Second),
		load.WithWindowFromWarmup(func(rate float64) time.Duration {
			if rate <= 0 {
				return 0 // keep WithDuration's
			}
			cycle := time.Duration(conns / rate * float64(time.Second))
			return max(time.Second, 10*cycle)
		}),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("window at least a second:", res.Window >= time.Second)
	// Output:
	// window at least a second: true
}

// Validate reports every problem of a mix precisely.
func ExampleValidate() {
	err := load.Validate([]load.Request{
		{Name: "a", URL: "http://127.0.0.1:8080/a", Weight: 1},
		{Name: "a", URL: "localhost:8080/b", Weight: 0},
	})
	fmt.Println(err)
	// Output:
	// load: request 1 ("a"): Name: duplicate name, also used by request 0
	// load: request 1 ("a"): URL: unsupported scheme "localhost" in "localhost:8080/b" (want http or https)
	// load: request 1 ("a"): Weight: must be finite and > 0, got 0
}

// Progress reports arrive periodically during the run, on their own
// goroutine, and never after the run function has returned.
func ExampleWithProgress() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()

	var mu sync.Mutex
	phases := map[string]bool{}
	_, err := load.RunClosed(context.Background(), []load.Request{{Name: "r", URL: srv.URL, Weight: 1}},
		load.WithConnections(2),
		load.WithWarmup(500*time.Millisecond),
		load.WithDuration(500*time.Millisecond),
		load.WithProgress(20*time.Millisecond, func(p load.Progress) {
			// e.g. log.Printf("%v %s completed=%d errors=%d", p.Elapsed, p.Phase, p.Completed, p.Errors)
			mu.Lock()
			phases[p.Phase] = true
			mu.Unlock()
		}),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(phases)
	// Output:
	// map[measure:true warmup:true]
}

// A Result marshals to JSON with stable field names; latencies are in
// nanoseconds.
func ExampleResult() {
	res := &load.Result{
		Mode: load.ModeClosed, Connections: 8, Window: 5 * time.Second,
		Completed: 1000, Throughput: 200,
		Latency:    load.Latency{Mean: 1500 * time.Microsecond, P50: time.Millisecond, Max: 9 * time.Millisecond},
		PerRequest: map[string]*load.RequestResult{"home": {Completed: 1000}},
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	// Output:
	// {"mode":"closed","connections":8,"window_ns":5000000000,"completed":1000,"errors":0,"non_2xx":0,"throughput_rps":200,"latency":{"mean_ns":1500000,"p50_ns":1000000,"p90_ns":0,"p99_ns":0,"p999_ns":0,"max_ns":9000000},"per_request":{"home":{"completed":1000,"errors":0,"non_2xx":0,"latency":{"mean_ns":0,"p50_ns":0,"p90_ns":0,"p99_ns":0,"p999_ns":0,"max_ns":0}}}}
}
