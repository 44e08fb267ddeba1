package svc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/slowpoke-dev/slowpoke/instrument/slowhttp"
)

// maxBody bounds the request bodies the services read.
const maxBody = 4 << 20

// Mux is an http.ServeMux whose handlers burn the service's extra work before
// they run. It serves GET /healthz (without extra work: it is a probe, not a
// call of the application).
type Mux struct {
	mux  *http.ServeMux
	work *PerCall
}

// NewMux returns a Mux doing work per call before each handler.
func NewMux(work *PerCall) *Mux {
	m := &Mux{mux: http.NewServeMux(), work: work}
	m.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	return m
}

// HandleFunc registers h for pattern (http.ServeMux syntax).
func (m *Mux) HandleFunc(pattern string, h http.HandlerFunc) {
	work := m.work
	m.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := work.do(r.Context()); err != nil {
			return // the client is gone
		}
		defer work.done()
		h(w, r)
	})
}

// Handler returns the mux wrapped by the slowpoke instrumentation.
func (m *Mux) Handler() http.Handler { return slowhttp.NewHandler(m.mux) }

// NewHTTPServer returns a Server serving m. closers run at Shutdown, after
// the server has stopped (typically the service's clients).
func NewHTTPServer(m *Mux, closers ...func()) Server {
	return &httpServer{
		srv: &http.Server{
			Handler:           m.Handler(),
			ReadHeaderTimeout: 30 * time.Second,
			IdleTimeout:       5 * time.Minute,
		},
		closers: closers,
	}
}

type httpServer struct {
	srv     *http.Server
	closers []func()
}

func (s *httpServer) Serve(l net.Listener) error {
	if err := s.srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *httpServer) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	for _, c := range s.closers {
		c()
	}
	return err
}

// StatusError is an error with an HTTP status. Handlers return it to choose
// the status of their reply; Client returns it for a non-2xx reply.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, http.StatusText(e.Code), e.Msg)
}

// Errorf returns a *StatusError.
func Errorf(code int, format string, args ...any) error {
	return &StatusError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// StatusOf returns the HTTP status for err: its own for a *StatusError
// (wrapped or not), 499 for a cancelled call and 500 otherwise.
func StatusOf(err error) int {
	var se *StatusError
	switch {
	case errors.As(err, &se):
		return se.Code
	case errors.Is(err, context.Canceled):
		return 499
	default:
		return http.StatusInternalServerError
	}
}

// WriteJSON writes v as a JSON reply with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// WriteError writes err as {"error": "..."} with the status StatusOf gives.
func WriteError(w http.ResponseWriter, err error) {
	msg := err.Error()
	var se *StatusError
	if errors.As(err, &se) {
		msg = se.Msg
	}
	WriteJSON(w, StatusOf(err), map[string]string{"error": msg})
}

// ReadJSON decodes the request body into v. An empty body leaves v as is, so
// that every field of a request is optional.
func ReadJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return Errorf(http.StatusBadRequest, "reading body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return Errorf(http.StatusBadRequest, "bad JSON body: %v", err)
	}
	return nil
}

// JSON adapts an RPC-style function to an HTTP handler: the request body is
// decoded into a new Req, and the result is written as JSON (or the error
// with its status).
func JSON[Req, Resp any](fn func(ctx context.Context, req *Req) (*Resp, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := new(Req)
		if err := ReadJSON(r, req); err != nil {
			WriteError(w, err)
			return
		}
		resp, err := fn(r.Context(), req)
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, resp)
	}
}

// Client calls the HTTP/JSON API of another service. Its transport is wrapped
// by the slowpoke instrumentation and keeps enough idle connections for a
// busy closed-loop workload.
type Client struct {
	base string
	hc   *http.Client
	tr   *http.Transport
}

// NewClient returns a client of the service at addr (host:port).
func NewClient(addr string) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0 // no global limit
	tr.MaxIdleConnsPerHost = 4096
	tr.IdleConnTimeout = 2 * time.Minute
	return &Client{
		base: "http://" + addr,
		hc:   &http.Client{Transport: slowhttp.NewTransport(tr)},
		tr:   tr,
	}
}

// Call POSTs in as JSON to path and decodes the reply into out (unless out
// is nil). A non-2xx reply gives a *StatusError carrying the reply's status
// and error message.
func (c *Client) Call(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = string(bytes.TrimSpace(data))
		}
		return &StatusError{Code: resp.StatusCode, Msg: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s%s: decoding reply: %w", c.base, path, err)
	}
	return nil
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// Parallel runs the calls concurrently and returns the first error (in
// argument order) once all have returned.
func Parallel(calls ...func() error) error {
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = call()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
