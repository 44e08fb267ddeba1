package backend

import (
	"context"
	"sync"
	"time"
)

// Failure records the first unexpected failure of a running application (a
// service or its controller died, or what watches them did), for a
// backend's Watch and Explain. The zero Failure is ready to use.
type Failure struct {
	once sync.Once
	mu   sync.Mutex
	ch   chan struct{}
	err  error
}

func (f *Failure) done() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan struct{})
	}
	return f.ch
}

// Fail records err unless a failure was recorded already.
func (f *Failure) Fail(err error) {
	f.once.Do(func() {
		f.err = err
		close(f.done())
	})
}

// Done is closed once a failure is recorded.
func (f *Failure) Done() <-chan struct{} { return f.done() }

// Err is the failure, or nil.
func (f *Failure) Err() error {
	select {
	case <-f.done():
		return f.err
	default:
		return nil
	}
}

// Watch returns a context that is cancelled when parent is, or, with the
// failure as its cause (context.Cause), when one is recorded.
func (f *Failure) Watch(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-f.done():
			cancel(f.err)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Explain returns the failure behind err: an error of a run (a control
// connection refused, a load generator cancelled) is usually a failure's
// symptom, and the failure says what to look at. It waits up to wait for
// a failure to be recorded; without one, it returns err.
func (f *Failure) Explain(err error, wait time.Duration) error {
	if err == nil {
		return nil
	}
	select {
	case <-f.done():
		return f.err
	case <-time.After(wait):
		return err
	}
}
