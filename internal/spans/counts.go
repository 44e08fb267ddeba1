package spans

import (
	"maps"
	"math"
	"sort"
	"sync"
	"time"
)

// Limits on what a Receiver keeps.
const (
	// MaxServices is how many distinct service names are counted; spans
	// of further names are counted as Unnamed.
	MaxServices = 128
	// maxNameLen is the longest service name kept; longer ones are cut.
	maxNameLen = 200
	// bucket is the resolution of the span counts in time, and buckets
	// how many of them a service's ring keeps: about 11 minutes back from
	// the newest span (256 KiB per service).
	bucket  = 20 * time.Millisecond
	buckets = 1 << 15
	// linkGeneration is how many span identities each of the two
	// generations that link callers to callees holds.
	linkGeneration = 1 << 16
)

// Unnamed stands for the spans of services without a service.name or
// beyond MaxServices.
const Unnamed = "(unnamed)"

// Edge is one caller-callee pair seen in the spans: a SERVER span of
// Callee whose parent span belongs to Caller.
type Edge struct{ Caller, Callee string }

// Stats is what a Receiver has received so far.
type Stats struct {
	// Server is the number of SERVER spans per service.
	Server map[string]int64
	// Edges counts the calls between services.
	Edges map[Edge]int64
	// Spans is every span received, of any kind.
	Spans int64
	// Rejected counts the exports refused: oversized, malformed or of
	// an unknown content type.
	Rejected int64
}

// Services lists the services that sent SERVER spans, sorted.
func (s Stats) Services() []string {
	out := make([]string, 0, len(s.Server))
	for k := range s.Server {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// spanID is a span's identity within its trace.
type spanID struct {
	trace [16]byte
	span  [8]byte
}

// counter holds the counts; all of its methods take mu.
type counter struct {
	mu       sync.Mutex
	epoch    int64            // Unix nanoseconds at bucket 0
	server   map[string]*ring // service -> SERVER spans by when they started
	total    map[string]int64
	edges    map[Edge]int64
	spans    int64
	rejected int64
	// arrivals are the latest exports' arrival times and the earliest
	// start among their SERVER spans (Unix ns), newest at arrivals[next-1]:
	// Settle waits while spans of a closed window still arrive.
	arrivals [arrivalsKept]arrival
	next     int
	// owner maps recent spans to their service; waiting maps a parent
	// span not seen yet to the services whose SERVER spans it parents.
	// Each is two generations: the older one is dropped when the newer
	// fills.
	owner   [2]map[spanID]string
	waiting [2]map[spanID][]string
}

// arrivalsKept is how many exports' arrivals the counter remembers.
const arrivalsKept = 256

// arrival is one export: when it came, and the earliest start of a SERVER
// span in it.
type arrival struct{ at, oldest int64 }

// arrived records an export that came at now, whose SERVER spans' earliest
// start was oldest (math.MaxInt64: it held none).
func (c *counter) arrived(now, oldest int64) {
	if oldest == math.MaxInt64 {
		return
	}
	c.arrivals[c.next%arrivalsKept] = arrival{now, oldest}
	c.next++
}

// arrivingFor says whether an export that came at since or later held a
// SERVER span that started before t: spans of a window ending at t were
// still arriving then.
func (c *counter) arrivingFor(since, t int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 1; i <= min(c.next, arrivalsKept); i++ {
		a := c.arrivals[(c.next-i)%arrivalsKept]
		if a.at < since {
			return false
		}
		if a.oldest < t {
			return true
		}
	}
	return false
}

// ring counts a service's SERVER spans per bucket of time; slot b%buckets
// holds bucket b's count while at[b%buckets] is b.
type ring struct {
	at [buckets]int32
	n  [buckets]int32
}

func (r *ring) add(b int32) {
	i := b % buckets
	if r.at[i] != b {
		r.at[i], r.n[i] = b, 0
	}
	r.n[i]++
}

func (r *ring) sum(lo, hi int32) int64 {
	var n int64
	for b := max(lo, hi-buckets+1, 0); b < hi; b++ {
		if i := b % buckets; r.at[i] == b {
			n += int64(r.n[i])
		}
	}
	return n
}

func newCounter(epoch time.Time) *counter {
	c := &counter{epoch: epoch.UnixNano(), server: map[string]*ring{}, total: map[string]int64{}, edges: map[Edge]int64{}}
	for i := range 2 {
		c.owner[i] = map[spanID]string{}
		c.waiting[i] = map[spanID][]string{}
	}
	return c
}

// name is the service name a span is counted under.
func (c *counter) name(n string) string {
	if n == "" {
		return Unnamed
	}
	if len(n) > maxNameLen {
		n = n[:maxNameLen]
	}
	if _, ok := c.total[n]; !ok && len(c.total) >= MaxServices {
		return Unnamed
	}
	return n
}

// span records one span of service svc (already named) that started at
// start (Unix nanoseconds), with parent its parent span (zero: none).
func (c *counter) span(svc string, id, parent spanID, server bool, start int64) {
	c.spans++
	c.remember(id, svc)
	if !server {
		return
	}
	c.total[svc]++
	if c.server[svc] == nil {
		c.server[svc] = new(ring)
	}
	// Spans from before the receiver started, or from a clock far
	// ahead, are counted in total only.
	if b := (start - c.epoch) / int64(bucket); b >= 0 && b < math.MaxInt32 {
		c.server[svc].add(int32(b))
	}
	if parent.span == ([8]byte{}) {
		return
	}
	if caller, ok := c.lookup(parent); ok {
		if caller != svc {
			c.edges[Edge{caller, svc}]++
		}
		return
	}
	w := c.waiting[0]
	if len(w) >= linkGeneration {
		c.waiting[1], c.waiting[0] = w, map[spanID][]string{}
		w = c.waiting[0]
	}
	if len(w[parent]) < 64 {
		w[parent] = append(w[parent], svc)
	}
}

// remember records that span id belongs to svc, and counts the calls
// that waited for it.
func (c *counter) remember(id spanID, svc string) {
	o := c.owner[0]
	if len(o) >= linkGeneration {
		c.owner[1], c.owner[0] = o, map[spanID]string{}
		o = c.owner[0]
	}
	o[id] = svc
	for i := range 2 {
		if callees, ok := c.waiting[i][id]; ok {
			delete(c.waiting[i], id)
			for _, callee := range callees {
				if callee != svc {
					c.edges[Edge{svc, callee}]++
				}
			}
		}
	}
}

func (c *counter) lookup(id spanID) (string, bool) {
	for i := range 2 {
		if s, ok := c.owner[i][id]; ok {
			return s, true
		}
	}
	return "", false
}

func (c *counter) reject() {
	c.mu.Lock()
	c.rejected++
	c.mu.Unlock()
}

func (c *counter) count(svc string, from, to time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.server[svc]
	if r == nil {
		return 0
	}
	at := func(t time.Time) int32 {
		return int32(min(max((t.UnixNano()-c.epoch)/int64(bucket), 0), math.MaxInt32))
	}
	return r.sum(at(from), at(to))
}

func (c *counter) stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Server: maps.Clone(c.total), Edges: maps.Clone(c.edges), Spans: c.spans, Rejected: c.rejected}
}
