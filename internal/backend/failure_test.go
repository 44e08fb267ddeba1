package backend

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFailure(t *testing.T) {
	var f Failure
	symptom := errors.New("connection refused")
	if f.Err() != nil || f.Explain(nil, time.Second) != nil {
		t.Fatal("a fresh Failure reports a failure")
	}
	if got := f.Explain(symptom, 10*time.Millisecond); got != symptom {
		t.Fatalf("Explain without a failure = %v, want the symptom", got)
	}
	ctx, cancel := f.Watch(context.Background())
	defer cancel()
	first, second := errors.New("cart died"), errors.New("frontend died")
	f.Fail(first)
	f.Fail(second)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Watch's context outlived the failure")
	}
	if context.Cause(ctx) != first || f.Err() != first || f.Explain(symptom, time.Hour) != first {
		t.Errorf("cause %v, Err %v: want the first failure", context.Cause(ctx), f.Err())
	}
	// A context watched after the failure ends at once; one cancelled by
	// its caller ends with context.Canceled.
	late, cancelLate := f.Watch(context.Background())
	defer cancelLate()
	<-late.Done()
	var g Failure
	own, cancelOwn := g.Watch(context.Background())
	cancelOwn()
	if context.Cause(own) != context.Canceled {
		t.Errorf("cause %v, want context.Canceled", context.Cause(own))
	}
}
