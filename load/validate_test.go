package load_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/load"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := load.Request{Name: "ok", URL: "http://127.0.0.1:8080/x", Weight: 1}
	with := func(f func(*load.Request)) load.Request {
		r := ok
		r.Name = "r"
		f(&r)
		return r
	}
	tests := []struct {
		name  string
		mix   []load.Request
		field string // "" for valid mixes
		index int
		msg   string
	}{
		{name: "valid GET", mix: []load.Request{ok}},
		{name: "valid POST with body and header", mix: []load.Request{ok, with(func(r *load.Request) {
			r.Method, r.Body, r.Header = http.MethodPost, []byte(`{}`), http.Header{"Content-Type": {"application/json"}}
			r.URL = "HTTPS://example.com:8443/a?b=c"
		})}},
		{name: "empty name", mix: []load.Request{ok, with(func(r *load.Request) { r.Name = "" })}, field: "Name", index: 1, msg: "must not be empty"},
		{name: "duplicate name", mix: []load.Request{ok, with(func(r *load.Request) { r.Name = "ok" })}, field: "Name", index: 1, msg: "duplicate name, also used by request 0"},
		{name: "zero weight", mix: []load.Request{ok, with(func(r *load.Request) { r.Weight = 0 })}, field: "Weight", index: 1, msg: "got 0"},
		{name: "negative weight", mix: []load.Request{with(func(r *load.Request) { r.Weight = -2 })}, field: "Weight", msg: "got -2"},
		{name: "NaN weight", mix: []load.Request{with(func(r *load.Request) { r.Weight = math.NaN() })}, field: "Weight", msg: "NaN"},
		{name: "infinite weight", mix: []load.Request{with(func(r *load.Request) { r.Weight = math.Inf(1) })}, field: "Weight", msg: "+Inf"},
		{name: "empty URL", mix: []load.Request{with(func(r *load.Request) { r.URL = "" })}, field: "URL", msg: "must not be empty"},
		{name: "relative URL", mix: []load.Request{with(func(r *load.Request) { r.URL = "/x" })}, field: "URL", msg: "not absolute"},
		{name: "ftp URL", mix: []load.Request{with(func(r *load.Request) { r.URL = "ftp://h/x" })}, field: "URL", msg: `unsupported scheme "ftp"`},
		{name: "no host", mix: []load.Request{with(func(r *load.Request) { r.URL = "http:///x" })}, field: "URL", msg: "no host"},
		{name: "unparsable URL", mix: []load.Request{with(func(r *load.Request) { r.URL = "http://[::1/x" })}, field: "URL", msg: "cannot parse"},
		{name: "bad method", mix: []load.Request{with(func(r *load.Request) { r.Method = "GE T" })}, field: "Method", msg: `invalid method "GE T"`},
		{name: "bad header name", mix: []load.Request{with(func(r *load.Request) { r.Header = http.Header{"X Y": {"1"}} })}, field: "Header", msg: `invalid field name "X Y"`},
		{name: "bad header value", mix: []load.Request{with(func(r *load.Request) { r.Header = http.Header{"X": {"a\r\nb"}} })}, field: "Header", msg: "CR, LF or NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := load.Validate(tt.mix)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: unexpected error %v", err)
				}
				return
			}
			var me *load.MixError
			if !errors.As(err, &me) {
				t.Fatalf("Validate = %v, want a *MixError", err)
			}
			if me.Field != tt.field || me.Index != tt.index {
				t.Errorf("MixError field/index = %s/%d, want %s/%d", me.Field, me.Index, tt.field, tt.index)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}

func TestValidateEmptyAndMultiple(t *testing.T) {
	t.Parallel()
	for _, mix := range [][]load.Request{nil, {}} {
		if err := load.Validate(mix); !errors.Is(err, load.ErrEmptyMix) {
			t.Errorf("Validate(%v) = %v, want ErrEmptyMix", mix, err)
		}
	}
	// Every problem is reported.
	err := load.Validate([]load.Request{{Name: "", URL: "x", Weight: 0}})
	for _, want := range []string{"Name:", "URL:", "Weight:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	mix := one("http://127.0.0.1:1/never-contacted")
	tests := []struct {
		name string
		rate float64 // used with open loop; 0 means "use 10"
		opt  load.Option
		msg  string
	}{
		{"zero connections", 0, load.WithConnections(0), "WithConnections(0): number of connections must be > 0"},
		{"negative connections", 0, load.WithConnections(-3), "WithConnections(-3)"},
		{"zero duration", 0, load.WithDuration(0), "WithDuration(0s): measurement window must be > 0"},
		{"negative duration", 0, load.WithDuration(-time.Second), "WithDuration(-1s)"},
		{"negative warm-up", 0, load.WithWarmup(-time.Millisecond), "WithWarmup(-1ms): warm-up must be >= 0"},
		{"zero timeout", 0, load.WithTimeout(0), "WithTimeout(0s): request timeout must be > 0"},
		{"zero progress interval", 0, load.WithProgress(0, func(load.Progress) {}), "WithProgress(0s): interval must be > 0"},
		{"zero max in flight", 0, load.WithMaxInFlight(0), "WithMaxInFlight(0): cap must be > 0"},
		{"no paused-time clock", 0, load.WithPausedTime(nil), "WithPausedTime: paused must not be nil"},
		{"no window sizer", 0, load.WithWindowFromWarmup(nil), "WithWindowFromWarmup: size must not be nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range runners {
				res, err := r.run(context.Background(), mix, tt.opt)
				if err == nil || !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("%s: error = %v, want it to contain %q", r.name, err, tt.msg)
				}
				if res != nil {
					t.Errorf("%s: result = %+v, want nil", r.name, res)
				}
			}
		})
	}
	for _, rate := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		res, err := load.RunOpen(context.Background(), mix, rate)
		if err == nil || !strings.Contains(err.Error(), "rate must be finite and > 0") || res != nil {
			t.Errorf("RunOpen(rate=%v) = %v, %v; want rate error", rate, res, err)
		}
	}
	if _, err := load.RunClosed(context.Background(), nil); !errors.Is(err, load.ErrEmptyMix) {
		t.Errorf("RunClosed(nil mix) error = %v, want ErrEmptyMix", err)
	}
}
