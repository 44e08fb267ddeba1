package load

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"time"
)

// newTransport returns an HTTP/1.1-only transport without proxy and without
// transparent compression. maxConns limits connections per host (0: no limit);
// maxIdle is the idle pool size per host.
func newTransport(maxConns, maxIdle int, timeout time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	var protos http.Protocols
	protos.SetHTTP1(true)
	return &http.Transport{
		Proxy:               nil,
		DialContext:         d.DialContext,
		TLSHandshakeTimeout: timeout,
		DisableKeepAlives:   false,
		DisableCompression:  true,
		MaxConnsPerHost:     maxConns,
		MaxIdleConnsPerHost: maxIdle,
		IdleConnTimeout:     90 * time.Second,
		Protocols:           &protos,
	}
}

// sender sends requests of a mix one at a time (it is owned by a single
// goroutine). It reuses request objects between sends and enforces the
// per-request timeout with a single reusable timer that cancels a per-sender
// context; after a timeout or an error the context and requests are renewed.
type sender struct {
	tr      http.RoundTripper
	mix     []Request
	runCtx  context.Context
	timeout time.Duration
	value   func(http.Header) int64 // nil: no sample values

	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
	reqs   []*http.Request // lazily built, bound to ctx
}

func newSender(runCtx context.Context, tr http.RoundTripper, mix []Request, timeout time.Duration, value func(http.Header) int64) *sender {
	s := &sender{tr: tr, mix: mix, runCtx: runCtx, timeout: timeout, value: value}
	s.renew()
	return s
}

func (s *sender) renew() {
	if s.cancel != nil {
		s.cancel()
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.ctx, s.cancel = context.WithCancel(s.runCtx)
	if s.reqs == nil {
		s.reqs = make([]*http.Request, len(s.mix))
	} else {
		clear(s.reqs)
	}
}

func (s *sender) close() {
	s.cancel()
	if s.timer != nil {
		s.timer.Stop()
	}
}

func (s *sender) request(i int) (*http.Request, error) {
	if req := s.reqs[i]; req != nil {
		return req, nil
	}
	m := &s.mix[i]
	req, err := http.NewRequestWithContext(s.ctx, m.Method, m.URL, nil)
	if err != nil {
		return nil, err
	}
	if m.Header != nil {
		req.Header = m.Header.Clone()
		if h := m.Header.Get("Host"); h != "" {
			req.Host = h
		}
	}
	if body := m.Body; len(body) > 0 {
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(body)), nil
		}
	}
	s.reqs[i] = req
	return req, nil
}

// do sends request type i, reads the whole response body and returns the
// status code and the sender's value of the response header (0 without
// one), or an error for transport failures and timeouts.
func (s *sender) do(i int) (int, int64, error) {
	req, err := s.request(i)
	if err != nil {
		return 0, 0, err
	}
	if req.GetBody != nil {
		req.Body, _ = req.GetBody()
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(s.timeout, s.cancel)
	} else {
		s.timer.Reset(s.timeout)
	}
	resp, err := s.tr.RoundTrip(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	fired := !s.timer.Stop()
	if err != nil || fired || s.ctx.Err() != nil {
		// The request objects may still be referenced by the transport
		// after an error, and the context may be cancelled: start afresh.
		s.renew()
	}
	if err != nil {
		return 0, 0, err
	}
	var v int64
	if s.value != nil {
		v = s.value(resp.Header)
	}
	return resp.StatusCode, v, nil
}

// picker chooses request types by weight.
type picker struct {
	cum []float64 // cumulative weights
}

func newPicker(mix []Request) picker {
	cum := make([]float64, len(mix))
	var sum float64
	for i, m := range mix {
		sum += m.Weight
		cum[i] = sum
	}
	return picker{cum: cum}
}

func (p picker) pick(rng *rand.Rand) int {
	if len(p.cum) == 1 {
		return 0
	}
	u := rng.Float64() * p.cum[len(p.cum)-1]
	i := sort.SearchFloat64s(p.cum, u)
	// SearchFloat64s returns the first i with cum[i] >= u; u == cum[i]
	// belongs to the next type, and i may reach len for rounding reasons.
	for i < len(p.cum)-1 && p.cum[i] <= u {
		i++
	}
	return min(i, len(p.cum)-1)
}

// newRNG returns the deterministic generator of stream id for seed.
func newRNG(seed int64, id uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), id))
}

// normalize returns a deep copy of mix with defaults applied, so that the
// caller may reuse its slices while a run is in progress.
func normalize(mix []Request) []Request {
	out := make([]Request, len(mix))
	copy(out, mix)
	for i := range out {
		if out[i].Method == "" {
			out[i].Method = http.MethodGet
		}
		out[i].Header = out[i].Header.Clone()
		out[i].Body = bytes.Clone(out[i].Body)
	}
	return out
}
