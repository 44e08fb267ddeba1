//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The multi-node fault trials as a benchmark (issue 44, step 4):
// $SLOWPOKE_MULTINODE_FAULT_TRIALS (1, what CI runs) repeats each fault of
// TestKubeMultiNodeFaults and TestKubeMultiNodeAgentPartition that many
// times, as subtests fault/trial-i; with $SLOWPOKE_MULTINODE_FAULT_OUT=DIR
// each test writes there a summary of its trials, DIR/<test>.json and
// DIR/<test>.md. The checks are the same whatever the count; the summary
// only records what each trial saw, e.g.
//
//	SLOWPOKE_MULTINODE_FAULT_TRIALS=10 SLOWPOKE_MULTINODE_FAULT_OUT=/tmp/faults \
//	  test/kube/multinode-e2e.sh -run '^TestKubeMultiNode(Faults|AgentPartition)$' -timeout 120m

// mnFaultTrial is one trial's record.
type mnFaultTrial struct {
	Fault     string  `json:"fault"`
	Trial     int     `json:"trial"`
	Frozen    int     `json:"frozen_at_fault"`          // pods frozen when the fault struck
	ThawedS   float64 `json:"thawed_after_s"`           // until every pod was thawed; -1 if never seen
	LeaseS    float64 `json:"lease_s"`                  // the bound the trial checks (the lease, or the partition's cap)
	Within    bool    `json:"within_lease"`             // thawed within it
	RunError  string  `json:"run_error"`                // the run's last line (empty where the run was killed)
	NamesNode bool    `json:"run_error_names_node_pod"` // that line names the node (or pod)
	Restore   string  `json:"restore"`                  // what slowpoke restore found
	Restarted bool    `json:"app_pod_restarted"`        // any application pod restarted (the deleted one aside)
	TrialS    float64 `json:"trial_s"`                  // the trial's wall time
	Passed    bool    `json:"passed"`                   // the subtest passed: every check, nothing frozen, no agent, no change
}

// mnFaultLog collects a test's trials and writes them out at its end.
type mnFaultLog struct {
	mu     sync.Mutex
	trials []*mnFaultTrial
}

func faultTrials(t *testing.T) int {
	n := kubeEnvInt(t, "SLOWPOKE_MULTINODE_FAULT_TRIALS", 1)
	if n < 1 {
		n = 1
	}
	return n
}

// newFaultLog writes the test's summary, where $SLOWPOKE_MULTINODE_FAULT_OUT
// is set, when the test ends.
func newFaultLog(t *testing.T) *mnFaultLog {
	l := &mnFaultLog{}
	dir := os.Getenv("SLOWPOKE_MULTINODE_FAULT_OUT")
	if dir == "" {
		return l
	}
	name := t.Name()
	t.Cleanup(func() {
		if err := l.write(dir, name); err != nil {
			t.Errorf("writing the fault summary: %v", err)
		}
	})
	return l
}

// trial starts a trial's record; the record is complete (its time, whether
// it passed) when the subtest ends.
func (l *mnFaultLog) trial(t *testing.T, fault string, i int) *mnFaultTrial {
	r := &mnFaultTrial{Fault: fault, Trial: i, ThawedS: -1}
	start := time.Now()
	t.Cleanup(func() {
		r.TrialS = time.Since(start).Seconds()
		r.Passed = !t.Failed()
		l.mu.Lock()
		l.trials = append(l.trials, r)
		l.mu.Unlock()
	})
	return r
}

func (l *mnFaultLog) write(dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the run's error keeps its "->"
	enc.SetIndent("", "  ")
	if err := enc.Encode(l.trials); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), b.Bytes(), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "%s, %s\n\n", name, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	md.WriteString("| fault | trial | frozen at the fault | all thawed after | lease | within | the run's error | names the node/pod | restore | app pod restarted | trial |\n")
	md.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	var order []string
	tally := map[string][2]int{}
	for _, r := range l.trials {
		thawed := "never"
		if r.ThawedS >= 0 {
			thawed = fmt.Sprintf("%.2f s", r.ThawedS)
		}
		runErr := r.RunError
		if runErr == "" {
			runErr = "(killed)"
		}
		fmt.Fprintf(&md, "| %s | %d | %d | %s | %.1f s | %v | `%s` | %v | %s | %v | %.0f s |\n",
			r.Fault, r.Trial, r.Frozen, thawed, r.LeaseS, r.Within, strings.ReplaceAll(runErr, "|", "\\|"),
			r.NamesNode, strings.ReplaceAll(r.Restore, "|", "\\|"), r.Restarted, r.TrialS)
		if _, ok := tally[r.Fault]; !ok {
			order = append(order, r.Fault)
		}
		k := tally[r.Fault]
		k[1]++
		if r.Within && r.Passed {
			k[0]++
		}
		tally[r.Fault] = k
	}
	md.WriteString("\n")
	for _, f := range order {
		fmt.Fprintf(&md, "- %s: %d/%d thawed within the lease, nothing left\n", f, tally[f][0], tally[f][1])
	}
	return os.WriteFile(filepath.Join(dir, name+".md"), []byte(md.String()), 0o644)
}

// restoreSummary is restore's output in a line.
func restoreSummary(out string) string {
	return strings.Join(strings.Fields(strings.TrimSpace(out)), " ")
}

// podsRestarted: whether a pod of before restarted or went by after.
func podsRestarted(before, after map[string]int32) bool {
	for uid, n := range before {
		if a, ok := after[uid]; !ok || a != n {
			return true
		}
	}
	return false
}
