package svc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestParseExtraWork(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true},
		{"0", 0, true},
		{"1000", time.Millisecond, true},
		{" 2.5 ", 2500 * time.Nanosecond, true},
		{"1e3", time.Millisecond, true},
		{"-1", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1ms", 0, false},
	} {
		got, err := ParseExtraWork(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseExtraWork(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{"cart": "CART_ADDR", "compose-post": "COMPOSE_POST_ADDR", "movie-id": "MOVIE_ID_ADDR"} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

// The test application: "front" (HTTP) calls "echo" (gRPC).

type echoRequest struct {
	Text string `json:"text"`
}

type echoReply struct {
	Text string `json:"text"`
	From string `json:"from"`
}

type echoServer interface {
	Echo(context.Context, *echoRequest) (*echoReply, error)
}

var echoDesc = grpc.ServiceDesc{
	ServiceName: "test.Echo",
	HandlerType: (*echoServer)(nil),
	Methods:     []grpc.MethodDesc{UnaryMethod("test.Echo", "Echo", echoServer.Echo)},
}

type echo struct{ name string }

func (e echo) Echo(_ context.Context, req *echoRequest) (*echoReply, error) {
	if req.Text == "" {
		return nil, status.Error(codes.InvalidArgument, "empty text")
	}
	return &echoReply{Text: req.Text, From: e.name}, nil
}

var testApp = &App{
	Name: "test",
	Services: []ServiceInfo{
		{Name: "front", Port: 7990, Protocol: HTTP},
		{Name: "echo", Port: 7991, Protocol: GRPC},
	},
	New: func(name string, cfg Config) (Server, error) {
		switch name {
		case "echo":
			s := NewGRPCServer(cfg.PerCall())
			s.RegisterService(&echoDesc, echo{name})
			return GRPCService(s), nil
		case "front":
			cc, err := DialGRPC(cfg.Addr("echo"))
			if err != nil {
				return nil, err
			}
			m := NewMux(cfg.PerCall())
			m.HandleFunc("POST /echo", JSON(func(ctx context.Context, req *echoRequest) (*echoReply, error) {
				out := new(echoReply)
				if err := cc.Invoke(ctx, "/test.Echo/Echo", req, out); err != nil {
					return nil, HTTPStatusFromGRPC(err)
				}
				return out, nil
			}))
			return NewHTTPServer(m, func() { cc.Close() }), nil
		}
		return nil, fmt.Errorf("unknown service %q", name)
	},
}

func TestClusterCalls(t *testing.T) {
	const work = 30 * time.Millisecond
	c, err := StartCluster(testApp, ClusterConfig{Seed: 1, ExtraWork: func(s string) time.Duration {
		if s == "echo" {
			return work
		}
		return 0
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	cl := NewClient(c.Addrs["front"])
	defer cl.Close()
	start := time.Now()
	var out echoReply
	if err := cl.Call(context.Background(), "/echo", echoRequest{Text: "hi"}, &out); err != nil {
		t.Fatal(err)
	}
	if out != (echoReply{Text: "hi", From: "echo"}) {
		t.Errorf("reply %+v", out)
	}
	if d := time.Since(start); d < work {
		t.Errorf("call took %v, less than the extra work %v of echo", d, work)
	}
	err = cl.Call(context.Background(), "/echo", echoRequest{}, &out)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || se.Msg != "empty text" {
		t.Errorf("empty text: %v, want 400 empty text", err)
	}
	if code := StatusOf(Errorf(http.StatusConflict, "x")); code != http.StatusConflict {
		t.Errorf("StatusOf = %d", code)
	}
}

func TestHTTPExtraWork(t *testing.T) {
	const work = 40 * time.Millisecond
	c, err := StartCluster(testApp, ClusterConfig{ExtraWork: func(string) time.Duration { return work }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	resp, err := http.Post(c.URL("front")+"/echo", "application/json", strings.NewReader(`{"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := time.Since(start); resp.StatusCode != 200 || d < 2*work {
		t.Errorf("status %d after %v; want 200 after at least %v (work at front and echo)", resp.StatusCode, d, 2*work)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRun(t *testing.T) {
	// Start echo on an ephemeral port, then front pointed at it with a flag.
	env := map[string]string{"EXTRA_WORK_US": "10", "SEED": "7"}
	getenv := func(k string) string { return env[k] }
	addrRE := regexp.MustCompile(`serving \w+ on (\S+)`)
	start := func(args ...string) (string, context.CancelFunc, chan error, *syncBuffer) {
		t.Helper()
		var log syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, testApp, args, getenv, &log) }()
		t.Cleanup(func() {
			cancel()
			<-done
		})
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if m := addrRE.FindStringSubmatch(log.String()); m != nil {
				return m[1], cancel, done, &log
			}
			select {
			case err := <-done:
				t.Fatalf("Run(%q) returned early: %v", args, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
		t.Fatalf("Run(%q) did not start; log: %s", args, log.String())
		return "", nil, nil, nil
	}
	echoAddr, stopEcho, echoDone, echoLog := start("-service", "echo", "-port", "0")
	frontAddr, stopFront, frontDone, _ := start("-service", "front", "-port", "0", "-echo-addr", echoAddr)
	if !strings.Contains(echoLog.String(), "extra work 10µs") {
		t.Errorf("log does not show EXTRA_WORK_US: %s", echoLog.String())
	}
	cl := NewClient(frontAddr)
	defer cl.Close()
	var out echoReply
	if err := cl.Call(context.Background(), "/echo", echoRequest{Text: "via flags"}, &out); err != nil || out.Text != "via flags" {
		t.Fatalf("call: %+v, %v", out, err)
	}
	stopFront()
	stopEcho()
	for name, done := range map[string]chan error{"front": frontDone, "echo": echoDone} {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			done <- nil // for the cleanup
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not stop", name)
		}
	}
}

func TestRunErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "no -service"},
		{[]string{"-service", "nope"}, nil, `unknown service "nope"`},
		{[]string{"-service", "echo", "extra"}, nil, "unexpected arguments"},
		{[]string{"-service", "echo"}, map[string]string{"EXTRA_WORK_US": "-3"}, "EXTRA_WORK_US"},
		{[]string{"-service", "echo"}, map[string]string{"PORT": "http"}, "PORT"},
		{[]string{"-service", "echo", "-port", "70000"}, nil, "out of range"},
	} {
		err := Run(context.Background(), testApp, c.args, func(k string) string { return c.env[k] }, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%q, %v) = %v; want an error containing %q", c.args, c.env, err, c.want)
		}
	}
}

func TestPerCallWaitAndContention(t *testing.T) {
	p := (Config{StoreWait: 20 * time.Millisecond, Contention: 30 * time.Millisecond}).PerCall()
	start := time.Now()
	if err := p.do(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.done()
	if took := time.Since(start); took < 19*time.Millisecond || took > 25*time.Millisecond+time.Second {
		t.Errorf("a lone call took %v, want the 20ms wait and no contention", took)
	}
	// A second call in flight makes the next one pay contention once.
	if err := p.do(context.Background()); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := p.do(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.done()
	p.done()
	if took := time.Since(start); took < 49*time.Millisecond {
		t.Errorf("a call beside another took %v, want 20ms waited and 30ms of contention", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.do(ctx); err == nil {
		t.Error("a call whose context ended during the wait went on")
	}
	if n := p.calls.InFlight(); n != 0 {
		t.Errorf("%d calls still counted in flight", n)
	}
	if _, err := parseMicros(EnvStoreWait, "-3"); err == nil || !strings.Contains(err.Error(), EnvStoreWait) {
		t.Errorf("negative %s: %v", EnvStoreWait, err)
	}
}
