package slowhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"

	"github.com/slowpoke-dev/slowpoke/internal/inservice"
)

// latencyWriter holds back a response until its call has caught up with
// its request's global delay counter (see docs/latency.md), and sends the
// call's counter with it. Nothing is held back before the handler first
// writes, flushes or returns.
type latencyWriter struct {
	http.ResponseWriter
	req  *inservice.Request
	sent bool
}

func (w *latencyWriter) catchUp() {
	if w.sent {
		return
	}
	w.sent = true
	w.ResponseWriter.Header().Set(inservice.HeaderDelay, w.req.CatchUp())
}

func (w *latencyWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.catchUp()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *latencyWriter) Write(b []byte) (int, error) {
	w.catchUp()
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher when the wrapped writer does.
func (w *latencyWriter) Flush() { w.FlushError() }

// FlushError is Flush with its error, as http.ResponseController calls it:
// http.ErrNotSupported where the wrapped writer cannot flush.
func (w *latencyWriter) FlushError() error {
	w.catchUp()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack implements http.Hijacker when the wrapped writer does; the
// connection is the handler's from then on.
func (w *latencyWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.sent = true
	}
	return c, rw, err
}

// Push implements http.Pusher when the wrapped writer does.
func (w *latencyWriter) Push(target string, opts *http.PushOptions) error {
	if p, ok := w.ResponseWriter.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}

// ReadFrom keeps the wrapped writer's io.ReaderFrom (sendfile for files,
// as io.Copy and http.ServeContent use it).
func (w *latencyWriter) ReadFrom(r io.Reader) (int64, error) {
	w.catchUp()
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
}

// Unwrap lets http.ResponseController reach the wrapped writer.
func (w *latencyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
