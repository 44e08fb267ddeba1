package inservice

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// fakeController is the controller's end of a link's socket.
type fakeController struct {
	t     *testing.T
	conn  net.Conn
	lines chan Message
}

func newFakeController(t *testing.T) (*fakeController, *Link) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "link.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	a, err := Dial(sock, "svc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fc := &fakeController{t: t, conn: conn, lines: make(chan Message, 1024)}
	go func() {
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			var m Message
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				fc.lines <- m
			}
		}
	}()
	return fc, a
}

func (fc *fakeController) send(m Message) {
	b, _ := json.Marshal(m)
	if _, err := fc.conn.Write(append(b, '\n')); err != nil {
		fc.t.Fatal(err)
	}
}

// ticks counts the tick messages received within wait.
func (fc *fakeController) ticks(wait time.Duration) int {
	n := 0
	deadline := time.After(wait)
	for {
		select {
		case m := <-fc.lines:
			if m.Type == "tick" {
				n++
			}
		case <-deadline:
			return n
		}
	}
}

// calls makes n calls of the link's service.
func calls(t *testing.T, a *Link, n int) {
	for range n {
		c, err := a.ServerStart(context.Background(), "/x")
		if err != nil {
			t.Fatal(err)
		}
		a.ServerEnd(c)
	}
}

// configured waits until the link counts rounds every batch calls (0:
// none) with a bell or without.
func configured(t *testing.T, a *Link, batch uint64, rings bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); a.batch.Load() != batch || (a.bell.Load() != nil) != rings; {
		if time.Now().After(deadline) {
			t.Fatalf("the link did not take batch %d (bell %v)", batch, rings)
		}
		time.Sleep(time.Millisecond)
	}
}

// readFIFO returns how many bytes the non-blocking fd holds.
func readFIFO(t *testing.T, fd int) int {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := syscall.Read(fd, buf)
	if err == syscall.EAGAIN {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A target's instrumentation rings the controller's bell once every batch
// of calls instead of sending ticks, stops when the run ends, and falls
// back to ticks where the bell cannot be opened.
func TestBell(t *testing.T) {
	fc, a := newFakeController(t)
	path, fd := newBell(t)

	fc.send(Message{Type: "config", Batch: 3, Bell: path})
	configured(t, a, 3, true)
	calls(t, a, 30)
	if got := readFIFO(t, fd); got != 10 {
		t.Errorf("30 calls at batch 3 rang %d rounds, want 10", got)
	}
	if n := fc.ticks(100 * time.Millisecond); n != 0 {
		t.Errorf("%d ticks sent beside the bell", n)
	}

	fc.send(Message{Type: "config", Batch: 0})
	configured(t, a, 0, false)
	calls(t, a, 30)
	if got := readFIFO(t, fd); got != 0 {
		t.Errorf("%d rounds rung after the run ended", got)
	}

	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(t.TempDir(), "missing"), "relative/bell", t.TempDir(), plain} {
		fc.send(Message{Type: "config", Batch: 3, Bell: bad})
		configured(t, a, 3, false)
		calls(t, a, 3)
		if n := fc.ticks(2 * time.Second); n == 0 {
			t.Errorf("bell %q cannot be rung, and no tick came", bad)
		}
		if b, _ := os.ReadFile(plain); len(b) != 0 {
			t.Errorf("a plain file named as the bell was written to: %q", b)
		}
		fc.send(Message{Type: "config", Batch: 0})
		configured(t, a, 0, false)
	}
}

// A bell whose reader stopped reading drops rounds: the calls never block.
func TestBellFullNeverBlocks(t *testing.T) {
	fc, a := newFakeController(t)
	path, _ := newBell(t) // open, and never read
	fc.send(Message{Type: "config", Batch: 1, Bell: path})
	configured(t, a, 1, true)
	done := make(chan struct{})
	go func() {
		calls(t, a, 1<<18) // four times a FIFO's default capacity
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("calls blocked on a full bell")
	}
}

// newBell makes a FIFO as a controller's bell and opens it for reading
// without blocking (read-write, so that it never reads end of file).
func newBell(t *testing.T) (path string, fd int) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "bell")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return path, fd
}
