package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Client is the orchestrator's end of a guard.
type Client struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	w      io.WriteCloser
	exited chan struct{}
	done   bool
}

// Spawn starts a guard: exe run as "exe guard", in a session of its own (so
// that signals to the orchestrator's process group or terminal do not reach
// it), logging to logPath.
func Spawn(exe, logPath string) (*Client, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "guard")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the guard: %w", err)
	}
	c := &Client{cmd: cmd, w: w, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(c.exited) }()
	return c, nil
}

// PID is the guard's process id.
func (c *Client) PID() int { return c.cmd.Process.Pid }

// Exited is closed when the guard has exited.
func (c *Client) Exited() <-chan struct{} { return c.exited }

// ExitError describes how the guard ended.
func (c *Client) ExitError() string {
	if c.cmd.ProcessState == nil {
		return "still running"
	}
	return c.cmd.ProcessState.String()
}

func (c *Client) send(m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return errors.New("guard: already told the run is done")
	}
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	return nil
}

// Run tells the guard about the run; it watches the orchestrator from then
// on.
func (c *Client) Run(r Run) error { return c.send(message{Op: "run", Run: &r}) }

// Service tells the guard about a service (again, when its process group
// becomes known); it watches the service's controller from then on.
func (c *Client) Service(s Service) error { return c.send(message{Op: "service", Service: &s}) }

// Forget tells the guard that a service's controller is being stopped on
// purpose (a restart): its death ends nothing.
func (c *Client) Forget(name string) error { return c.send(message{Op: "forget", Name: name}) }

// Done tells the guard that the run has ended cleanly, and waits a moment
// for it to exit.
func (c *Client) Done() {
	c.send(message{Op: "done"})
	c.mu.Lock()
	c.done = true
	c.w.Close()
	c.mu.Unlock()
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
}
