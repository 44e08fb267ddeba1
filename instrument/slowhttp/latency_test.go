package slowhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/inservice"
)

// node is a service of a latency test topology: it works for work (a
// sleep, so that timings are exact on a busy machine), then calls its
// children, one after the other or all at once; a child may be called
// several times.
type node struct {
	work       time.Duration
	concurrent bool
	calls      []string
}

// TestLatencyWhatIf checks the virtual speedup of docs/latency.md on real
// HTTP servers, one link each, for the four shapes derived
// there: the latency less the inserted delay must be the latency of the
// same topology with the target's work really reduced, which the test
// computes from the topology.
func TestLatencyWhatIf(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name  string
		nodes map[string]node
		// want: end-to-end latency with the target reduced by d; base:
		// without reduction.
		want, base time.Duration
	}{
		{"sequential", map[string]node{
			"front":  {calls: []string{"target", "b"}},
			"target": {work: 20 * ms},
			"b":      {work: 15 * ms},
		}, 25 * ms, 35 * ms},
		{"fan-out, the other branch becomes critical", map[string]node{
			"front":  {concurrent: true, calls: []string{"target", "b"}},
			"target": {work: 20 * ms},
			"b":      {work: 15 * ms},
		}, 15 * ms, 20 * ms},
		{"fan-out, the other branch off the path", map[string]node{
			"front":  {concurrent: true, calls: []string{"target", "b"}},
			"target": {work: 30 * ms},
			"b":      {work: 8 * ms},
		}, 20 * ms, 30 * ms},
		{"nested fan-out", map[string]node{
			"front":  {concurrent: true, calls: []string{"x", "b"}},
			"x":      {concurrent: true, calls: []string{"target", "c"}},
			"target": {work: 20 * ms},
			"c":      {work: 12 * ms},
			"b":      {work: 16 * ms},
		}, 16 * ms, 20 * ms},
		{"repeated calls beside a branch", map[string]node{
			"front":  {concurrent: true, calls: []string{"x", "b"}},
			"x":      {calls: []string{"target", "target"}},
			"target": {work: 20 * ms},
			"b":      {work: 25 * ms},
		}, 25 * ms, 40 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := inservice.CreateStore(filepath.Join(t.TempDir(), "delays"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			const d = 10 * ms
			links := map[string]*inservice.Link{}
			urls := map[string]string{}
			handlers := map[string]*atomicHandler{}
			for name := range tc.nodes {
				a := newTestLink(t)
				links[name] = a
				h := &atomicHandler{}
				handlers[name] = h
				srv := httptest.NewServer(NewHandler(h, withLink(a)))
				t.Cleanup(srv.Close)
				urls[name] = srv.URL
			}
			for name, n := range tc.nodes {
				client := &http.Client{Transport: NewTransport(nil, withLink(links[name]))}
				handlers[name].set(serveNode(t, n, urls, client))
			}
			measure := func(delay time.Duration) time.Duration {
				for name, a := range links {
					if err := a.SetLatency(store.Path(), name == "target", delay); err != nil {
						t.Fatal(err)
					}
				}
				var got []time.Duration
				for range 5 {
					start := time.Now()
					resp, err := http.Get(urls["front"])
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					took := time.Since(start)
					inserted, ok := inservice.ParseDelay(resp.Header.Get(inservice.HeaderDelay))
					if !ok {
						t.Fatalf("response without a valid %s: %q", inservice.HeaderDelay, resp.Header.Get(inservice.HeaderDelay))
					}
					got = append(got, took-time.Duration(inserted))
				}
				slices.Sort(got)
				return got[len(got)/2]
			}
			// Timers fire late and a busy machine (or the race
			// detector) slows every hop: latencies can come out late,
			// by a few milliseconds, but hardly early. A wrong
			// mechanism predicts at least 5ms early in every case.
			// A starved machine can make one attempt late by more: a
			// wrong mechanism fails every attempt, so up to three are
			// made.
			const early, late = 2 * ms, 8 * ms
			var fails []string
			for attempt := 1; attempt <= 3; attempt++ {
				fails = fails[:0]
				if base := measure(0); base < tc.base-early || base > tc.base+late {
					fails = append(fails, fmt.Sprintf("baseline %v, want %v (-%v, +%v)", base, tc.base, early, late))
				}
				if pred := measure(d); pred < tc.want-early || pred > tc.want+late {
					fails = append(fails, fmt.Sprintf("predicted %v with the target %v faster, want %v (-%v, +%v)", pred, d, tc.want, early, late))
				}
				if len(fails) == 0 {
					break
				}
				t.Logf("attempt %d: %s", attempt, strings.Join(fails, "; "))
			}
			for _, f := range fails {
				t.Error(f)
			}
		})
	}
}

// serveNode serves n: its work, then its calls.
func serveNode(t *testing.T, n node, urls map[string]string, client *http.Client) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(n.work)
		call := func(name string) {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, urls[name], nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if n.concurrent {
			var wg sync.WaitGroup
			for _, c := range n.calls {
				wg.Go(func() { call(c) })
			}
			wg.Wait()
		} else {
			for _, c := range n.calls {
				call(c)
			}
		}
		w.Write([]byte("ok"))
	}
}

// atomicHandler lets a server start before its handler is known.
type atomicHandler struct {
	mu sync.Mutex
	h  http.Handler
}

func (a *atomicHandler) set(h http.Handler) {
	a.mu.Lock()
	a.h = h
	a.mu.Unlock()
}

func (a *atomicHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	h := a.h
	a.mu.Unlock()
	h.ServeHTTP(w, r)
}

// TestLatencyHeadersIgnoredWhenOff: outside a what-if the wrappers pass a
// request through untouched: no header added, the handler's writer as is.
func TestLatencyHeadersIgnoredWhenOff(t *testing.T) {
	a := newTestLink(t)
	var sawWriter http.ResponseWriter
	h := NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawWriter = w
		if inservice.RequestFromContext(r.Context()) != nil {
			t.Error("request joined a what-if that is not under way")
		}
	}), withLink(a))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(inservice.HeaderRequest, "12")
	req.Header.Set(inservice.HeaderDelay, "99999999999999999999999")
	h.ServeHTTP(rec, req)
	if sawWriter != rec {
		t.Errorf("handler got %T, want the server's writer", sawWriter)
	}
	if v := rec.Header().Get(inservice.HeaderDelay); v != "" {
		t.Errorf("response carries %s: %q", inservice.HeaderDelay, v)
	}
}

// FuzzLatencyHeaders sends arbitrary delay and id headers to a service in
// a what-if: it must answer, promptly, with a well-formed counter.
func FuzzLatencyHeaders(f *testing.F) {
	for _, s := range [][2]string{{"1", "0"}, {"", ""}, {"x", "-5"}, {"18446744073709551615", "60000000001"}, {"1", "59999999999"}} {
		f.Add(s[0], s[1])
	}
	store, err := inservice.CreateStore(filepath.Join(f.TempDir(), "delays"))
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	a := newTestLink(f)
	if err := a.SetLatency(store.Path(), true, time.Microsecond); err != nil {
		f.Fatal(err)
	}
	h := NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }), withLink(a))
	f.Fuzz(func(t *testing.T, id, delay string) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header[inservice.HeaderRequest] = []string{id}
		req.Header[inservice.HeaderDelay] = []string{delay}
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		if took := time.Since(start); took > inservice.MaxCatchUp+time.Second {
			t.Fatalf("answered after %v", took)
		}
		if _, ok := inservice.ParseDelay(rec.Header().Get(inservice.HeaderDelay)); !ok {
			t.Fatalf("reply counter %q is not well formed", rec.Header().Get(inservice.HeaderDelay))
		}
	})
}

// newTestLink is a link connected to a stand-in controller socket,
// closed at the end of the test.
func newTestLink(t testing.TB) *inservice.Link {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "link.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
		}
	}()
	a, err := inservice.Dial(ln.Addr().String(), "svc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// BenchmarkLatencyMetadata is one call through an instrumented client and
// server over a real socket, outside a latency what-if and inside one at a
// delay of 0: the difference is what the metadata costs a call.
func BenchmarkLatencyMetadata(b *testing.B) {
	store, err := inservice.CreateStore(filepath.Join(b.TempDir(), "delays"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	a := newTestLink(b)
	srv := httptest.NewServer(NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }), withLink(a)))
	defer srv.Close()
	client := &http.Client{Transport: NewTransport(nil, withLink(a))}
	for _, in := range []bool{false, true} {
		name := "out"
		if in {
			name = "in"
			a.SetLatency(store.Path(), false, 0)
		}
		b.Run(name, func(b *testing.B) {
			// The call is made for a served request, as a service's
			// handler makes it.
			ctx := inservice.ContextWithRequest(context.Background(), a.BeginRequest("", ""))
			for b.Loop() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// The writer that holds a reply back keeps what the wrapped writer can do:
// each way of starting the reply catches up first and sends the call's
// counter, and a hijack that fails leaves the reply to catch up later.
func TestLatencyWriterInterfaces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(t *testing.T, w http.ResponseWriter)
		body  string
	}{
		{"write", func(t *testing.T, w http.ResponseWriter) { io.WriteString(w, "x") }, "x"},
		{"write header", func(t *testing.T, w http.ResponseWriter) { w.WriteHeader(http.StatusTeapot) }, ""},
		{"flush", func(t *testing.T, w http.ResponseWriter) {
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("flush: %v", err)
			}
		}, ""},
		{"read from", func(t *testing.T, w http.ResponseWriter) {
			if n, err := io.Copy(w, strings.NewReader("copied")); n != 6 || err != nil {
				t.Errorf("copy: %d, %v", n, err)
			}
		}, "copied"},
		{"failed hijack", func(t *testing.T, w http.ResponseWriter) {
			if _, _, err := http.NewResponseController(w).Hijack(); err == nil {
				t.Error("a recorder was hijacked")
			}
		}, ""},
		{"push", func(t *testing.T, w http.ResponseWriter) {
			if err := w.(http.Pusher).Push("/x", nil); !errors.Is(err, http.ErrNotSupported) {
				t.Errorf("push: %v, want http.ErrNotSupported", err)
			}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			lw := &latencyWriter{ResponseWriter: rec}
			tc.serve(t, lw)
			lw.catchUp() // as the handler does once the wrapped one returns
			if _, ok := rec.Result().Header[inservice.HeaderDelay]; !ok {
				t.Errorf("no %s in the reply", inservice.HeaderDelay)
			}
			if got := rec.Body.String(); got != tc.body {
				t.Errorf("body %q, want %q", got, tc.body)
			}
		})
	}
}
