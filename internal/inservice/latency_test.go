package inservice

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// newStore makes a delay store in a test directory, removed at the end.
func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := CreateStore(filepath.Join(t.TempDir(), "delays"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreCounters(t *testing.T) {
	s := newStore(t)
	if got := s.Get(7); got != 0 {
		t.Fatalf("fresh store: Get = %d, want 0", got)
	}
	if got := s.Add(7, 100); got != 100 {
		t.Fatalf("Add = %d, want 100", got)
	}
	s.Add(7, 50)
	if got := s.Raise(7, 120); got != 150 {
		t.Fatalf("Raise below the counter = %d, want 150", got)
	}
	if got := s.Raise(7, 400); got != 400 {
		t.Fatalf("Raise above = %d, want 400", got)
	}
	// A request StoreSlots later shares the word: it reads 0 until it
	// adds, and then its own counter only.
	later := uint64(7 + StoreSlots)
	if got := s.Get(later); got != 0 {
		t.Fatalf("other request in the same word: Get = %d, want 0", got)
	}
	if got := s.Add(later, 30); got != 30 {
		t.Fatalf("other request's Add = %d, want 30", got)
	}
	if got := s.Get(7); got != 0 {
		t.Fatalf("request taken over: Get = %d, want 0", got)
	}
	if got := s.Add(8, -5); got != 0 {
		t.Fatalf("negative Add = %d, want 0", got)
	}
	if got := s.Raise(9, 1<<62); got != valueMask {
		t.Fatalf("huge Raise = %d, want saturation at %d", got, valueMask)
	}
}

// TestStoreShared checks that two mappings of one file (as two processes
// have) see each other's adds, also when adding concurrently.
func TestStoreShared(t *testing.T) {
	a := newStore(t)
	b, err := OpenStore(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b} {
		wg.Go(func() {
			for range 1000 {
				s.Add(42, 1)
			}
		})
	}
	wg.Wait()
	if got := b.Get(42); got != 2000 {
		t.Fatalf("after 2x1000 concurrent adds through two mappings: %d", got)
	}
}

func TestOpenStoreRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("not a store"), 0o600)
	for name, path := range map[string]string{"missing": filepath.Join(dir, "none"), "wrong size": short, "directory": dir} {
		if s, err := OpenStore(path); err == nil {
			s.Close()
			t.Errorf("%s: OpenStore succeeded", name)
		}
	}
	if _, err := CreateStore(short); err == nil {
		t.Error("CreateStore over an existing file succeeded")
	}
}

func TestParseHeaders(t *testing.T) {
	for _, tc := range []struct {
		in     string
		delay  int64
		okD    bool
		id     uint64
		okID   bool
		reason string
	}{
		{"0", 0, true, 0, true, "zero"},
		{"1500", 1500, true, 1500, true, "plain"},
		{"", 0, false, 0, false, "absent"},
		{"-1", 0, false, 0, false, "negative"},
		{" 5", 0, false, 0, false, "space"},
		{"5ms", 0, false, 0, false, "unit"},
		{"0x10", 0, false, 0, false, "hex"},
		{strconv.FormatInt(int64(MaxDelay), 10), int64(MaxDelay), true, uint64(MaxDelay), true, "largest delay"},
		{strconv.FormatInt(int64(MaxDelay)+1, 10), 0, false, uint64(MaxDelay) + 1, true, "delay too large"},
		{"18446744073709551615", 0, false, 1<<64 - 1, true, "largest id"},
		{"18446744073709551616", 0, false, 0, false, "id overflows"},
		{"000000000000000000001", 0, false, 0, false, "too long"},
	} {
		d, okD := ParseDelay(tc.in)
		id, okID := ParseID(tc.in)
		if d != tc.delay || okD != tc.okD || id != tc.id || okID != tc.okID {
			t.Errorf("%s %q: ParseDelay = %d, %v; ParseID = %d, %v; want %d, %v; %d, %v",
				tc.reason, tc.in, d, okD, id, okID, tc.delay, tc.okD, tc.id, tc.okID)
		}
	}
}

// FuzzParseHeaders: whatever a peer sends, parsing never panics and
// accepts only bounded values.
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"", "0", "123", "-1", "99999999999999999999999", "1e9", "\x00", "١٢٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, ok := ParseDelay(s); ok && (d < 0 || d > int64(MaxDelay)) {
			t.Fatalf("ParseDelay(%q) = %d accepted", s, d)
		}
		if d, ok := ParseDelay(s); !ok && d != 0 {
			t.Fatalf("ParseDelay(%q) rejected but returned %d", s, d)
		}
		if _, ok := ParseID(s); ok && len(s) > maxNumber {
			t.Fatalf("ParseID accepted %d bytes", len(s))
		}
	})
}

// TestRequestOffCostsNothing: without a what-if, a served call gets no
// request and the context helpers find none.
func TestRequestOffCostsNothing(t *testing.T) {
	a := newLocal()
	if r := a.BeginRequest("1", "2"); r != nil {
		t.Fatal("BeginRequest returned a request outside a what-if")
	}
	var nilLink *Link
	if nilLink.BeginRequest("1", "2") != nil || nilLink.LatencyActive() {
		t.Fatal("nil link joined a what-if")
	}
	var r *Request
	r.Start()
	r.Adopt("5")
	r.AdoptGlobal()
	if r.CatchUp() != "" || r.ID() != "" || r.Local() != "" {
		t.Fatal("nil request produced values")
	}
	if RequestFromContext(context.Background()) != nil {
		t.Fatal("request found in an empty context")
	}
	if n := testing.AllocsPerRun(100, func() { a.BeginRequest("1", "2") }); n != 0 {
		t.Fatalf("BeginRequest outside a what-if allocates %v times", n)
	}
}

// TestCatchUp follows one request through a target and a concurrent
// branch: the target's call adds its delay to its own and the global
// counter; the branch waits it out before replying; a call caught up does
// not wait.
func TestCatchUp(t *testing.T) {
	s := newStore(t)
	target, other := newLocal(), newLocal()
	const d = 20 * time.Millisecond
	if err := target.SetLatency(s.Path(), true, d); err != nil {
		t.Fatal(err)
	}
	if err := other.SetLatency(s.Path(), false, d); err != nil {
		t.Fatal(err)
	}
	tr := target.BeginRequest("77", "")
	if got, _ := ParseDelay(tr.Local()); got != int64(d) {
		t.Fatalf("target's counter after start = %v, want %v", got, d)
	}
	br := other.BeginRequest("77", "")
	br.Start() // not the target: adds nothing
	start := time.Now()
	got := br.CatchUp()
	took := time.Since(start)
	v, _ := ParseDelay(got)
	// 15ms of slack (less than d): this goroutine can be held up
	// between the counter's last publication and the clock read.
	if took < d || v < int64(d) || v < int64(took)-int64(15*time.Millisecond) {
		t.Fatalf("branch caught up in %v with counter %v; want at least %v, and the time slept published", took, time.Duration(v), d)
	}
	if g := s.Get(77); g != v {
		t.Fatalf("global counter %v after the branch's catch-up, want its counter %v", time.Duration(g), time.Duration(v))
	}
	// The target now lags the branch's oversleep; a caller adopting the
	// branch's counter is caught up and does not wait.
	caller := other.BeginRequest("77", "0")
	caller.Adopt(got)
	start = time.Now()
	caller.CatchUp()
	if took := time.Since(start); took > 15*time.Millisecond { // a wait would be d
		t.Fatalf("caught-up caller waited %v", took)
	}
	// A request without an id gets a fresh one, distinct each time.
	if x, y := other.BeginRequest("", ""), other.BeginRequest("bad", ""); x.ID() == y.ID() {
		t.Fatalf("two requests without ids share id %s", x.ID())
	}
	// Leaving the what-if: new calls are not part of it.
	other.SetLatency("", false, 0)
	if other.BeginRequest("77", "") != nil {
		t.Fatal("request joined after the what-if ended")
	}
}

// TestCatchUpBounded: a global counter far ahead (a peer's bogus value)
// costs one reply at most MaxCatchUp.
func TestCatchUpBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("waits MaxCatchUp")
	}
	s := newStore(t)
	a := newLocal()
	a.SetLatency(s.Path(), false, 0)
	s.Add(5, int64(MaxDelay))
	r := a.BeginRequest("5", "")
	start := time.Now()
	r.CatchUp()
	if took := time.Since(start); took > MaxCatchUp+500*time.Millisecond {
		t.Fatalf("catch-up took %v, bound %v", took, MaxCatchUp)
	}
}
