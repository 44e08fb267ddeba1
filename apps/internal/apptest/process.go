package apptest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
	"github.com/slowpoke-dev/slowpoke/internal/testroot"
)

// EnvRunMain, set to 1, makes a command's test binary run the command's
// main function instead of its tests; see RunMain.
const EnvRunMain = "SLOWPOKE_APPS_RUN_MAIN"

// RunMain is the TestMain of an application command: the test binary runs
// main when re-executed by CheckProcess, its tests otherwise.
func RunMain(m *testing.M, main func()) {
	if os.Getenv(EnvRunMain) == "1" {
		testroot.Follow() // a service: end with the test binary
		main()
		os.Exit(0)
	}
	testroot.Mark()
	os.Exit(m.Run())
}

var listening = regexp.MustCompile(`serving (http|grpc) on (\S+)`)

// CheckProcess starts every service of app as a process (the test binary
// re-executed as the command, see RunMain) on an ephemeral port, checks that
// it serves (GET /healthz for HTTP, a TCP connection for gRPC), stops it
// with SIGTERM and expects a clean exit. It also checks that a malformed
// EXTRA_WORK_US is refused.
func CheckProcess(t *testing.T, app *svc.App) {
	for _, s := range app.Services {
		t.Run(s.Name, func(t *testing.T) {
			cmd, addr, logs := startProcess(t, []string{"-service", s.Name, "-port", "0"}, "EXTRA_WORK_US=5")
			if s.Protocol == svc.HTTP {
				if code, body := Do(t, http.MethodGet, "http://"+addr+"/healthz", nil, ""); code != http.StatusOK {
					t.Fatalf("GET /healthz: %d %s", code, body)
				}
			} else {
				conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				conn.Close()
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := wait(cmd, 15*time.Second); err != nil {
				t.Fatalf("after SIGTERM: %v; log:\n%s", err, logs())
			}
			if !strings.Contains(logs(), s.Name+" stopped") {
				t.Errorf("no clean stop in log:\n%s", logs())
			}
		})
	}
	t.Run("bad extra work", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-service", app.Services[0].Name, "-port", "0")
		cmd.Env = append(os.Environ(), EnvRunMain+"=1", "EXTRA_WORK_US=lots")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "EXTRA_WORK_US") {
			t.Errorf("EXTRA_WORK_US=lots: %v, output %q; want exit status 1 naming the variable", err, out)
		}
	})
}

// startProcess starts the command with args and extra environment, waits
// until it reports its listening address and returns the address and a
// function returning its log so far. The process is killed when the test
// ends if it is still running.
func startProcess(t *testing.T, args []string, env ...string) (*exec.Cmd, string, func() string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	// The race detector otherwise sleeps a second at exit.
	cmd.Env = append(append(os.Environ(), EnvRunMain+"=1", "GORACE=atexit_sleep_ms=0"), env...)
	// An io.Writer rather than StderrPipe: Wait then returns only after
	// everything the process wrote has been copied, so the last lines (the
	// clean-stop message) cannot be lost to a race with Wait.
	w := &logWriter{addrc: make(chan string, 1)}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	logs := w.String
	addrc := w.addrc
	select {
	case addr := <-addrc:
		return cmd, addr, logs
	case <-time.After(30 * time.Second):
		t.Fatalf("%v: no listening address after 30s; log:\n%s", args, logs())
	}
	return nil, "", nil
}

// wait waits for cmd to exit successfully within d, killing it otherwise.
func wait(cmd *exec.Cmd, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		return ctx.Err()
	}
}

// logWriter collects a process's log and reports the first listening
// address it prints.
type logWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	addrc chan string
	found bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if !w.found {
		// Only complete lines: a read may end in the middle of one.
		text := w.b.String()
		text = text[:strings.LastIndexByte(text, '\n')+1]
		if m := listening.FindStringSubmatch(text); m != nil {
			w.found = true
			w.addrc <- m[2]
		}
	}
	return len(p), nil
}

func (w *logWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
