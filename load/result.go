package load

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Modes reported in [Result.Mode].
const (
	ModeClosed = "closed"
	ModeOpen   = "open"
)

// Result is the outcome of a run. All counts and latencies refer to the
// measurement window only (see the package documentation).
type Result struct {
	Mode        string        `json:"mode"`                  // "closed" or "open"
	Connections int           `json:"connections,omitempty"` // closed loop: number of connections/workers
	Rate        float64       `json:"rate,omitempty"`        // open loop: scheduled requests per second
	Window      time.Duration `json:"window_ns"`             // actual measured window length (>= WithDuration unless cancelled)
	Completed   uint64        `json:"completed"`             // successful (2xx) responses completed inside the window
	Errors      uint64        `json:"errors"`                // transport errors/timeouts inside the window
	Non2xx      uint64        `json:"non_2xx"`               // responses with non-2xx status inside the window
	Dropped     uint64        `json:"dropped,omitempty"`     // open loop: sends skipped because of WithMaxInFlight
	Throughput  float64       `json:"throughput_rps"`        // Completed / Window seconds
	Latency     Latency       `json:"latency"`               // of successful responses
	// SendLag (open loop only) is the distribution of actual send time
	// minus intended send time over all requests completing in the window,
	// whatever their outcome. It is included in Latency; a large SendLag
	// means the load generator itself could not keep to the schedule
	// (CPU starvation, timer granularity). Zero, and
	// omitted from JSON, in closed loop mode.
	SendLag Latency `json:"send_lag,omitzero"`
	// PerRequest has one entry per request type of the mix, keyed by Name.
	PerRequest map[string]*RequestResult `json:"per_request"`
	// Histogram holds successful-response latencies in microseconds
	// (1µs..60s, 3 significant figures; larger values are clamped to 60s).
	// It is never nil.
	Histogram *hdrhistogram.Histogram `json:"-"`
	// Samples, with [WithSamples] only, has every successful response of
	// the window, in no particular order.
	Samples []Sample `json:"-"`
}

// Sample is one successful response kept by [WithSamples].
type Sample struct {
	Request int           // index of its request type in the mix
	Latency time.Duration // as in Latency: from the (intended) send to the end of the body
	Value   int64         // the WithSamples function of its header
}

// RequestResult holds the window statistics of one request type.
type RequestResult struct {
	Completed uint64  `json:"completed"` // 2xx responses
	Errors    uint64  `json:"errors"`    // transport errors/timeouts
	Non2xx    uint64  `json:"non_2xx"`   // non-2xx responses
	Latency   Latency `json:"latency"`   // of 2xx responses
}

// Latency summarises a latency distribution. In JSON every field is an
// integer number of nanoseconds. Mean and Max are exact; percentiles come
// from an HdrHistogram with microsecond resolution and 3 significant figures
// (relative error <= 0.1%), and never exceed Max. All fields are zero when
// there are no samples.
type Latency struct {
	Mean time.Duration `json:"mean_ns"`
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p999_ns"`
	Max  time.Duration `json:"max_ns"`
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }

// buildResult merges recorders into res. finish must have been called on
// every recorder.
func buildResult(res *Result, mix []Request, recs []*recorder, win time.Duration) {
	var all, lag latAcc
	types := make([]typeStats, len(mix))
	for _, r := range recs {
		all.merge(&r.all)
		lag.merge(&r.lag)
		res.Dropped += r.dropped
		res.Samples = append(res.Samples, r.samples...)
		for i := range r.types {
			t, s := &types[i], &r.types[i]
			t.completed += s.completed
			t.errors += s.errors
			t.non2xx += s.non2xx
			t.lat.merge(&s.lat)
		}
	}
	res.Window = win
	res.PerRequest = make(map[string]*RequestResult, len(mix))
	for i, m := range mix {
		t := &types[i]
		res.Completed += t.completed
		res.Errors += t.errors
		res.Non2xx += t.non2xx
		lat := t.lat.latency()
		if len(mix) == 1 {
			lat = all.latency()
		}
		res.PerRequest[m.Name] = &RequestResult{
			Completed: t.completed,
			Errors:    t.errors,
			Non2xx:    t.non2xx,
			Latency:   lat,
		}
	}
	res.Latency = all.latency()
	res.SendLag = lag.latency()
	if all.h == nil {
		all.h = newHistogram()
	}
	res.Histogram = all.h
	if win > 0 {
		res.Throughput = float64(res.Completed) / win.Seconds()
	}
}
