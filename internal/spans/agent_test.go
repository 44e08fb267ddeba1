package spans

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The Node.js zero-code agent of examples/polyglot, installed there by
// `npm ci`, exports one SERVER span per call of catalog.js, all counted in
// the window in which the calls were made.
func TestNodeAgentSpansCounted(t *testing.T) {
	dir, err := filepath.Abs("../../examples/polyglot")
	if err != nil {
		t.Fatal(err)
	}
	_, nodeErr := exec.LookPath("node")
	_, agentErr := os.Stat(filepath.Join(dir, "node_modules/@opentelemetry/auto-instrumentations-node"))
	if nodeErr != nil || agentErr != nil {
		if os.Getenv("SLOWPOKE_REQUIRE_POLYGLOT") != "" {
			t.Fatalf("node or examples/polyglot's OpenTelemetry agent is missing (npm ci in examples/polyglot): %v %v", nodeErr, agentErr)
		}
		t.Skip("needs node and `npm ci` in examples/polyglot")
	}
	r := listen(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", "--require", "@opentelemetry/auto-instrumentations-node/register", "catalog.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port), "WORK_US=50")
	for k, v := range r.Env("catalog") {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path string) error {
		resp, err := http.Get(base + path)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for get("/healthz") != nil {
		if time.Now().After(deadline) {
			t.Fatal("catalog.js with the agent did not come up in 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	from := time.Now()
	const calls = 300
	for range calls {
		if err := get("/items"); err != nil {
			t.Fatal(err)
		}
	}
	to := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Settle(ctx, to); err != nil {
		t.Fatal(err)
	}
	// The agent's clock may run a little apart from ours: allow the
	// window some slack at each end (no other call was made near it).
	slack := 200 * time.Millisecond
	if got := r.Count("catalog", from.Add(-slack), to.Add(slack)); got != calls {
		t.Errorf("%d SERVER spans of catalog counted for %d calls (stats %+v)", got, calls, r.Stats())
	}
	// Node's SDK stamps spans with performance.timeOrigin+performance.now(),
	// which drifts from the wall clock by tens of milliseconds on a busy
	// host: the window's own edges may lose some calls (35 of 300 in one
	// CI run), but most must fall inside it.
	t.Logf("in the window itself: %d", r.Count("catalog", from, to))
	if got := r.Count("catalog", from, to); got < calls/2 {
		t.Errorf("%d SERVER spans of catalog counted in the calls' own window, for %d calls", got, calls)
	}
}
