package emulator

// Tests of the slowpoke-emu binary as a real process: signals, environment
// variables and the instrumentation socket.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/inservice"
	"github.com/slowpoke-dev/slowpoke/internal/spans"
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// emuBinary builds cmd/slowpoke-emu once per test run.
func emuBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found; cannot build slowpoke-emu")
	}
	buildOnce.Do(func() {
		root, err := repoRoot()
		if err != nil {
			buildErr = err
			return
		}
		if binDir, err = os.MkdirTemp("", "slowpoke-emu-test"); err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(binDir, "slowpoke-emu")
		cmd := exec.Command(goTool, "build", "-o", binPath, "./cmd/slowpoke-emu")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New("go build ./cmd/slowpoke-emu: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// repoRoot walks up from the working directory to the directory of go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// freePort returns a port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeTopology(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// proc is a running slowpoke-emu.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{} // closed when Wait has returned
	err    error         // Wait's result, valid once exited is closed
	addr   string        // from the ready line
}

// syncBuffer collects a process's stderr and signals its ready line.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	ready chan string
	sent  bool
}

var readyRE = regexp.MustCompile(`(?m)^slowpoke-emu: \S+ listening on (\S+) \((http|grpc)\)$`)

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	if !s.sent {
		if m := readyRE.FindSubmatch(s.b.Bytes()); m != nil {
			s.sent = true
			s.ready <- string(m[1])
		}
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the binary with args and extra environment, without waiting
// for it to be ready. The process is killed when the test ends.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(emuBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{cmd: cmd, stderr: &syncBuffer{ready: make(chan string, 1)}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		cmd.Process.Kill()
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("pid %d did not exit after SIGKILL", cmd.Process.Pid)
		}
	})
	return p
}

// startReady starts the binary and waits for its ready line.
func startReady(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := start(t, env, args...)
	select {
	case p.addr = <-p.stderr.ready:
	case <-p.exited:
		t.Fatalf("slowpoke-emu %s exited before ready (%v):\n%s", strings.Join(args, " "), p.err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("slowpoke-emu %s not ready after 30s:\n%s", strings.Join(args, " "), p.stderr)
	}
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("slowpoke-emu did not exit:\n%s", p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

func httpGet(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func TestBinarySIGTERM(t *testing.T) {
	topo := writeTopology(t, `
services:
  web:
    port: 1
    endpoints: {/hello: {work_us: 100}}
`)
	// EMU_PORT=0 overrides the topology's port with any free one.
	p := startReady(t, []string{"EMU_PORT=0"}, "-topology", topo, "-service", "web")
	if strings.HasSuffix(p.addr, ":1") {
		t.Errorf("EMU_PORT ignored: listening on %s", p.addr)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	if code, body := httpGet(t, client, "http://"+p.addr+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	if code, _ := httpGet(t, client, "http://"+p.addr+"/hello"); code != 200 {
		t.Errorf("/hello: %d", code)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0; stderr:\n%s", code, p.stderr)
	}
}

// TestBinaryListenHost: EMU_LISTEN_HOST listens on another address than
// the topology's host, which callers dial (here one this machine does not
// have, as a Service's ClusterIP is not a pod's).
func TestBinaryListenHost(t *testing.T) {
	port := freePort(t)
	topo := writeTopology(t, `
services:
  web:
    host: 192.0.2.1
    port: `+strconv.Itoa(port)+`
    endpoints: {/hello: {work_us: 100}}
`)
	p := startReady(t, []string{"EMU_LISTEN_HOST=127.0.0.1"}, "-topology", topo, "-service", "web", "-plain")
	if want := net.JoinHostPort("127.0.0.1", strconv.Itoa(port)); p.addr != want {
		t.Errorf("listening on %s, want %s", p.addr, want)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	if code, _ := httpGet(t, client, "http://"+p.addr+"/hello"); code != 200 {
		t.Errorf("/hello: %d", code)
	}
}

func TestBinaryGRPCServiceSIGINT(t *testing.T) {
	topo := writeTopology(t, `
services:
  cart:
    port: `+strconv.Itoa(freePort(t))+`
    protocol: grpc
    endpoints: {Get: {}}
`)
	p := startReady(t, nil, "-topology", topo, "-service", "cart", "-plain")
	if !strings.Contains(p.stderr.String(), "(grpc)") {
		t.Errorf("ready line: %s", p.stderr)
	}
	// Readiness of a gRPC service is a TCP connect.
	conn, err := net.DialTimeout("tcp", p.addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code after SIGINT = %d, want 0; stderr:\n%s", code, p.stderr)
	}
}

func TestBinaryUsageErrors(t *testing.T) {
	good := writeTopology(t, "services:\n  a:\n    port: 1\n    endpoints: {/a: {}}\n")
	bad := writeTopology(t, "services:\n  a:\n    port: 1\n    endpoints: {/a: {work_us: -1}}\n")
	cases := []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"-service", "a"}, "-topology is required"},
		{nil, []string{"-topology", good}, "-service is required"},
		{nil, []string{"-topology", good, "-service", "b"}, `service "b" is not in`},
		{nil, []string{"-topology", bad, "-service", "a"}, "line 4: service \"a\": endpoint \"/a\": work_us must be >= 0"},
		{nil, []string{"-topology", good, "-service", "a", "extra"}, "unexpected arguments: extra"},
		{nil, []string{"-bogus"}, "flag provided but not defined"},
		{[]string{"EMU_WORK_OFFSET_US=fast"}, []string{"-topology", good, "-service", "a"}, "EMU_WORK_OFFSET_US"},
		{[]string{"EMU_PORT=-3"}, []string{"-topology", good, "-service", "a"}, "EMU_PORT"},
		{[]string{"EMU_LISTEN_HOST=pod"}, []string{"-topology", good, "-service", "a"}, "EMU_LISTEN_HOST"},
		{[]string{"EMU_GRPC_CONNS=0"}, []string{"-topology", good, "-service", "a"}, "EMU_GRPC_CONNS"},
	}
	for _, tc := range cases {
		p := start(t, tc.env, tc.args...)
		if code := p.wait(t); code != 2 || !strings.Contains(p.stderr.String(), tc.want) {
			t.Errorf("%v %v: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.env, tc.args, code, p.stderr, tc.want)
		}
	}
}

// processCPUOf returns the CPU time (user + system, all threads) used so far
// by process pid, from /proc at USER_HZ (100 Hz) resolution.
func processCPUOf(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the line, 12 and 13 after ") ".
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("cannot parse /proc/%d/stat: %q", pid, s)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func TestBinaryWorkOffsetEnv(t *testing.T) {
	topo := writeTopology(t, `
services:
  w:
    port: 1
    endpoints: {/w: {work_us: 20000}}
`)
	p := startReady(t, []string{"EMU_PORT=0", "EMU_WORK_OFFSET_US=-15000"}, "-topology", topo, "-service", "w", "-plain")
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	httpGet(t, client, "http://"+p.addr+"/w")
	const n = 20
	before := processCPUOf(t, p.cmd.Process.Pid)
	for range n {
		if code, body := httpGet(t, client, "http://"+p.addr+"/w"); code != 200 {
			t.Fatalf("/w: %d %s", code, body)
		}
	}
	used := processCPUOf(t, p.cmd.Process.Pid) - before
	// 5ms of work per request; without the offset it would be 20ms.
	t.Logf("%d requests used %v of CPU, work alone is %v", n, used, n*5*time.Millisecond)
	if used < n*5*time.Millisecond/2 || used > n*12*time.Millisecond {
		t.Errorf("CPU used = %v, want about %v", used, n*5*time.Millisecond)
	}
}

// linkSocket listens on a Unix socket like a controller and delivers every
// message received, tagged with the service from its connection's hello.
type linkSocket struct {
	path string
	msgs chan taggedMessage
}

type taggedMessage struct {
	service string
	inservice.Message
}

func listenLink(t *testing.T) *linkSocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "emu-link") // short: Unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	a := &linkSocket{path: filepath.Join(dir, "a.sock"), msgs: make(chan taggedMessage, 1024)}
	l, err := net.Listen("unix", a.path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				sc := bufio.NewScanner(c)
				sc.Buffer(make([]byte, 0, 4096), inservice.MaxLine)
				service := ""
				for sc.Scan() {
					var m inservice.Message
					if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
						continue
					}
					if m.Type == "hello" {
						service = m.Service
					}
					select {
					case a.msgs <- taggedMessage{service, m}:
					default: // the test stopped reading
					}
				}
			}()
		}
	}()
	return a
}

func TestBinaryInstrumentedReportsToController(t *testing.T) {
	cartPort := freePort(t)
	topo := writeTopology(t, `
services:
  front:
    port: 1
    endpoints:
      /home: {work_us: 100, calls: [{service: cart, endpoint: Get}]}
      /other: {}
  cart:
    port: `+strconv.Itoa(cartPort)+`
    protocol: grpc
    endpoints: {Get: {work_us: 100}}
`)
	sock := listenLink(t)
	linkEnv := func(service string) []string {
		return []string{inservice.EnvSocket + "=" + sock.path, inservice.EnvService + "=" + service}
	}
	cart := startReady(t, linkEnv("cart"), "-topology", topo, "-service", "cart")
	front := startReady(t, append(linkEnv("front"), "EMU_PORT=0"), "-topology", topo, "-service", "front")

	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	for range 3 {
		httpGet(t, client, "http://"+front.addr+"/healthz") // not counted
	}
	const n = 7
	for range n {
		if code, body := httpGet(t, client, "http://"+front.addr+"/home"); code != 200 {
			t.Fatalf("/home: %d %s", code, body)
		}
	}
	httpGet(t, client, "http://"+front.addr+"/other")

	cartAddr := "127.0.0.1:" + strconv.Itoa(cartPort)
	hellos := map[string]int{}
	var frontOK, cartOK bool
	var last map[string]inservice.Message
	last = map[string]inservice.Message{}
	deadline := time.After(20 * time.Second)
	for !(frontOK && cartOK) {
		select {
		case m := <-sock.msgs:
			switch m.Type {
			case "hello":
				hellos[m.service] = m.PID
			case "report":
				last[m.service] = m.Message
				switch m.service {
				case "front":
					frontOK = m.Total == n+1 && m.Endpoints["/home"] == n && m.Endpoints["/other"] == 1 &&
						len(m.Endpoints) == 2 && m.Downstream[cartAddr] == n
				case "cart":
					cartOK = m.Total == n && m.Endpoints["/"+GRPCService+"/Get"] == n
				}
			}
		case <-deadline:
			t.Fatalf("no complete reports after 20s; last reports: %+v\nhellos: %v\nfront stderr:\n%s\ncart stderr:\n%s",
				last, hellos, front.stderr, cart.stderr)
		}
	}
	if hellos["front"] != front.cmd.Process.Pid || hellos["cart"] != cart.cmd.Process.Pid {
		t.Errorf("hello PIDs %v, want front %d cart %d", hellos, front.cmd.Process.Pid, cart.cmd.Process.Pid)
	}
}

func TestBinaryPlainDoesNotReport(t *testing.T) {
	topo := writeTopology(t, `
services:
  front:
    port: 1
    endpoints: {/home: {}}
`)
	sock := listenLink(t)
	env := []string{inservice.EnvSocket + "=" + sock.path, inservice.EnvService + "=front", "EMU_PORT=0"}
	p := startReady(t, env, "-topology", topo, "-service", "front", "-plain")
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	if code, _ := httpGet(t, client, "http://"+p.addr+"/home"); code != 200 {
		t.Fatalf("/home: %d", code)
	}
	// An instrumented emulator says hello before its ready line and reports
	// every 200ms; give it a little longer than that.
	select {
	case m := <-sock.msgs:
		t.Errorf("plain emulator sent %+v to the instrumentation socket", m)
	case <-time.After(3 * inservice.ReportEvery):
	}
}

// slowpoke-emu -otel exports a SERVER span per call to the OTLP endpoint
// of the environment, the last ones flushed at SIGTERM; without -otel, or
// without an endpoint, it exports nothing.
func TestBinaryOTel(t *testing.T) {
	topo := writeTopology(t, `
services:
  front:
    port: 1
    endpoints: {/home: {}}
`)
	rcv, err := spans.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	env := []string{"EMU_PORT=0", "OTEL_BSP_SCHEDULE_DELAY=60000"} // nothing exported before the exit
	for k, v := range rcv.Env("front") {
		if k != "OTEL_BSP_SCHEDULE_DELAY" {
			env = append(env, k+"="+v)
		}
	}
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		spans int64
		log   string
	}{
		{"without -otel", env, nil, 0, ""},
		{"without an endpoint", []string{"EMU_PORT=0", "OTEL_EXPORTER_OTLP_ENDPOINT="}, []string{"-otel"}, 0, "OTEL_EXPORTER_OTLP_ENDPOINT is not set"},
		{"with -otel", env, []string{"-otel"}, 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := rcv.Stats().Server["front"]
			p := startReady(t, tc.env, append([]string{"-topology", topo, "-service", "front"}, tc.args...)...)
			for range 5 {
				if code, _ := httpGet(t, client, "http://"+p.addr+"/home"); code != 200 {
					t.Fatalf("/home: %d", code)
				}
			}
			client.CloseIdleConnections()
			p.cmd.Process.Signal(syscall.SIGTERM)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.stderr)
			}
			if n := rcv.Stats().Server["front"] - before; n != tc.spans {
				t.Errorf("%d SERVER spans received, want %d:\n%s", n, tc.spans, p.stderr)
			}
			if !strings.Contains(p.stderr.String(), tc.log) {
				t.Errorf("stderr does not say %q:\n%s", tc.log, p.stderr)
			}
		})
	}
}
