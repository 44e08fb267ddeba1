package slowgrpc

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/slowpoke-dev/slowpoke/internal/inservice"
)

// sleeper is a health service whose Check works (sleeps) for work.
type sleeper struct {
	healthpb.UnimplementedHealthServer
	work time.Duration
}

func (s *sleeper) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	time.Sleep(s.work)
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// serveSleeper starts an instrumented gRPC server and returns a client
// connection to it, instrumented by caller.
func serveSleeper(t *testing.T, a, caller *inservice.Link, work time.Duration) healthpb.HealthClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.StatsHandler(NewServerHandler(withLink(a))))
	healthpb.RegisterHealthServer(srv, &sleeper{work: work})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(NewClientHandler(withLink(caller))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// TestLatencyWhatIfGRPC: a caller fans out to a gRPC target and a gRPC
// branch that becomes critical once the target is faster. The branch
// waits for the target's delay before its trailer, and the caller adopts
// the global counter at the end of each call.
func TestLatencyWhatIfGRPC(t *testing.T) {
	const ms = time.Millisecond
	store, err := inservice.CreateStore(filepath.Join(t.TempDir(), "delays"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dial := func() *inservice.Link {
		path, _ := collect(t)
		a, err := inservice.Dial(path, "svc")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	front, target, branch := dial(), dial(), dial()
	tc := serveSleeper(t, target, front, 20*ms)
	bc := serveSleeper(t, branch, front, 15*ms)
	measure := func(d time.Duration) time.Duration {
		for _, a := range []*inservice.Link{front, target, branch} {
			if err := a.SetLatency(store.Path(), a == target, d); err != nil {
				t.Fatal(err)
			}
		}
		var got []time.Duration
		for range 5 {
			start := time.Now()
			req := front.BeginRequest("", "")
			ctx := inservice.ContextWithRequest(context.Background(), req)
			var wg sync.WaitGroup
			for _, c := range []healthpb.HealthClient{tc, bc} {
				wg.Go(func() {
					if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			inserted, _ := inservice.ParseDelay(req.CatchUp())
			got = append(got, time.Since(start)-time.Duration(inserted))
		}
		slices.Sort(got)
		return got[len(got)/2]
	}
	// Really 10ms faster, the target takes 10ms and the branch's 15ms
	// decide; without the branch's wait the prediction would be 10ms.
	// Late by a few milliseconds on a busy machine, hardly early; a
	// starved machine can make one attempt late by more, while a wrong
	// mechanism fails every attempt, so up to three are made.
	const early, late = 2 * ms, 8 * ms
	var fails []string
	for attempt := 1; attempt <= 3; attempt++ {
		fails = fails[:0]
		if base := measure(0); base < 20*ms-early || base > 20*ms+late {
			fails = append(fails, fmt.Sprintf("baseline %v, want 20ms", base))
		}
		if pred := measure(10 * ms); pred < 15*ms-early || pred > 15*ms+late {
			fails = append(fails, fmt.Sprintf("predicted %v, want 15ms (-%v, +%v)", pred, early, late))
		}
		if len(fails) == 0 {
			break
		}
		t.Logf("attempt %d: %s", attempt, strings.Join(fails, "; "))
	}
	for _, f := range fails {
		t.Error(f)
	}
}
