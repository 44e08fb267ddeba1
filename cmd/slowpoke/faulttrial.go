//go:build lab || e2e

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// faultTrial is one fault trial on the demo started by a script: predict
// attached to it, one of slowpoke's processes SIGKILLed in the middle of
// a slowdown run, and how the attached processes were given back.
type faultTrial struct {
	Victim string `json:"victim"` // orchestrator, controller (catalog's: a paused service) or guard
	Method string `json:"pause"`  // --pause of the run
	Trial  int    `json:"trial"`  // 1, 2, ... per victim

	// KilledAfterS is the time from the end of the baseline (the
	// slowdown runs begin) to the kill.
	KilledAfterS float64 `json:"killed_after_s"`
	// Paused says what showed, right before the kill, that a service was
	// being paused: "stopped" (a service process in state T), "frozen"
	// (a cgroup of the run frozen), "cores held" (a controller's
	// real-time thread spinning); empty when none was seen within 30 s
	// (the victim is killed then all the same).
	Paused string `json:"paused_at_kill"`
	// Seen are the kinds of change from how the services ran before
	// (changeKind: stopped, frozen, moved, pinned, reniced, gone) seen at
	// some point after the kill.
	Seen []string `json:"seen_after_kill"`
	// RecoveryMS is the time from the kill until the services ran as
	// before, for good (-1: not within the trial's minute).
	RecoveryMS float64 `json:"recovery_ms"`
	// Left is what still differed at the end (must be empty).
	Left []string `json:"left"`
	// RunEnd is how the orchestrator ended; RunSucceeded whether with
	// status 0 (a run whose controller or guard was killed must fail).
	RunEnd       string `json:"run_end"`
	RunSucceeded bool   `json:"run_succeeded"`
	// Leftovers are slowpoke's processes of the run still there 15 s
	// after it ended; FrozenCgroups its cgroups left frozen.
	Leftovers     []string `json:"leftovers"`
	FrozenCgroups []string `json:"frozen_cgroups"`
	// AnswerErr is set when the demo did not answer at the end.
	AnswerErr string `json:"answer_error,omitempty"`
	// Err is set when the trial could not be run as planned (nothing to
	// kill, the run ended before its slowdown runs).
	Err string `json:"error,omitempty"`

	Output string `json:"-"` // the orchestrator's standard error
}

// clean says whether the trial left everything as it was.
func (r *faultTrial) clean() bool {
	return r.Err == "" && len(r.Left) == 0 && len(r.Leftovers) == 0 && len(r.FrozenCgroups) == 0 && r.AnswerErr == "" && r.RecoveryMS >= 0
}

// runFaultTrial runs `bin predict` attached to a at 80% with --pause
// method, kills victim with SIGKILL in the middle of a pause of the
// slowdown runs (the first pause seen from 0.3 s after the baseline, 0.5
// s in the next trial, up to 1.1 s, then 0.3 s again), and watches the
// services until they run as before and the run is over.
// out is the run's output directory; the run's processes carry it in
// their environment, so that what is left of them is found.
func runFaultTrial(bin string, a *attachedDemo, victim, method string, i int, out string) (r faultTrial) {
	r = faultTrial{Victim: victim, Method: method, Trial: i + 1, RecoveryMS: -1}
	cmd := exec.Command(bin, "predict", "-f", a.spec, "--target", "cart", "--reduce", "80%", "--reps", "3", "--duration", "3s", "--pause", method, "--out", out)
	// A mark that slowpoke's own processes inherit, and the script's
	// services do not.
	marker := "SLOWPOKE_ATTACH_TRIAL=" + out
	cmd.Env = append(os.Environ(), marker)
	// The slowdown runs begin once the baseline is measured; between
	// them (between "[ 2/" and the next run's pauses), seconds go by
	// without pauses: the kill waits for one.
	stderr, err := startWatching(cmd, "] baseline ", 2*time.Minute)
	exited := make(chan error, 1)
	if cmd.Process != nil {
		go func() { exited <- cmd.Wait() }()
	}
	defer func() {
		r.Output = stderr.String()
		if cmd.Process != nil && r.RunEnd == "" {
			cmd.Process.Kill()
			r.RunEnd = fmt.Sprint(<-exited)
		}
	}()
	if err != nil {
		r.Err = err.Error()
		return r
	}
	orch := cmd.Process.Pid
	began := time.Now()
	time.Sleep(time.Duration(300+200*(i%5)) * time.Millisecond)
	var pid int
	switch victim {
	case "orchestrator":
		pid = orch
	case "controller":
		for _, c := range childrenOf(orch, "--name catalog") {
			pid = c
		}
	case "guard":
		for _, c := range childrenOf(orch, "slowpoke guard") {
			pid = c
		}
	default:
		r.Err = fmt.Sprintf("unknown victim %q", victim)
		return r
	}
	if pid == 0 {
		r.Err = "no " + victim + " to kill"
		return r
	}
	// Found first: the pause may last a few milliseconds.
	r.Paused = waitPaused(a, orch, 30*time.Second)
	syscall.Kill(pid, syscall.SIGKILL)
	killed := time.Now()
	r.KilledAfterS = killed.Sub(began).Seconds()

	// Watch until the run is over and the services have run as before
	// for a second, or a minute.
	seen := map[string]bool{}
	var recovered time.Time
	runOver := false
	for deadline := killed.Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		now := time.Now()
		diff := a.changes()
		for _, d := range diff {
			seen[changeKind(d)] = true
		}
		if len(diff) > 0 {
			recovered = time.Time{}
		} else if recovered.IsZero() {
			recovered = now
		}
		if !runOver {
			select {
			case err := <-exited:
				runOver = true
				r.RunSucceeded = err == nil
				r.RunEnd = "exit status 0"
				if err != nil {
					r.RunEnd = err.Error()
				}
			default:
			}
		}
		if runOver && !recovered.IsZero() && time.Since(recovered) >= time.Second {
			break
		}
	}
	if !recovered.IsZero() {
		r.RecoveryMS = float64(recovered.Sub(killed).Microseconds()) / 1000
	}
	for k := range seen {
		r.Seen = append(r.Seen, k)
	}
	slices.Sort(r.Seen)
	if !runOver {
		cmd.Process.Kill()
		r.RunEnd = fmt.Sprintf("still running a minute after the kill (killed): %v", <-exited)
	}
	r.Left = a.changes()
	// What is left of the run: after a kill the guard drains its
	// messages (up to 1 s) and gives services 3 s after SIGTERM.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r.Leftovers = leftovers(marker)
		if len(r.Leftovers) == 0 || time.Now().After(deadline) {
			break
		}
	}
	r.FrozenCgroups = frozenCgroups(orch)
	if err := a.answers(); err != nil {
		r.AnswerErr = err.Error()
	}
	return r
}

// waitPaused waits up to d for a sign that one of the services other than
// the target (cart) is being paused, and says which it saw.
func waitPaused(a *attachedDemo, orch int, d time.Duration) string {
	controllers := childrenOf(orch, " controller ")
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for name, pid := range a.pids {
			if name == "cart" {
				continue
			}
			if st, ok := proc.Read(pid); ok && (st.State == 'T' || st.State == 't') {
				return "stopped"
			}
		}
		if len(frozenCgroups(orch)) > 0 {
			return "frozen"
		}
		for _, c := range controllers {
			if holding(c) {
				return "cores held"
			}
		}
	}
	return ""
}

// holding says whether a thread of process pid runs at real-time
// priority (SCHED_FIFO) right now: a held core's spinning thread.
func holding(pid int) bool {
	tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	for _, tk := range tasks {
		tid, err := strconv.Atoi(tk.Name())
		if err != nil {
			continue
		}
		// A thread's stat is at /proc/TID/stat too.
		st, ok := proc.Read(tid)
		if !ok || st.State != 'R' {
			continue
		}
		if attr, err := unix.SchedGetAttr(tid, 0); err == nil && attr.Policy == unix.SCHED_FIFO {
			return true
		}
	}
	return false
}
