//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/internal/record"
)

// The multi-node fault trials as a benchmark (issue 44, step 4):
// $SLOWPOKE_MULTINODE_FAULT_TRIALS (1, what CI runs) repeats each fault of
// TestKubeMultiNodeFaults and TestKubeMultiNodeAgentPartition that many
// times, as subtests fault/trial-i. With $SLOWPOKE_MULTINODE_FAULT_RECORD=DIR
// (records/ of the repository, for the generated page) each test writes a
// record of its trials there (benchmark "faults"), and with
// $SLOWPOKE_MULTINODE_FAULT_OUT=DIR its trials' table, DIR/<test>.md. The
// checks are the same whatever the count; the record only says what each
// trial saw, e.g.
//
//	SLOWPOKE_MULTINODE_FAULT_TRIALS=10 SLOWPOKE_MULTINODE_FAULT_RECORD=$PWD/records \
//	  test/kube/multinode-e2e.sh -run '^TestKubeMultiNode(Faults|AgentPartition)$' -timeout 120m

// mnFaultTrial is one trial's record.
type mnFaultTrial = record.Fault

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

// newFaultLog writes the test's record and table, where
// $SLOWPOKE_MULTINODE_FAULT_RECORD or $SLOWPOKE_MULTINODE_FAULT_OUT is
// set, when the test ends.
func newFaultLog(t *testing.T) *mnFaultLog {
	l := &mnFaultLog{}
	recDir, outDir := os.Getenv("SLOWPOKE_MULTINODE_FAULT_RECORD"), os.Getenv("SLOWPOKE_MULTINODE_FAULT_OUT")
	if recDir == "" && outDir == "" {
		return l
	}
	name, n := t.Name(), faultTrials(t)
	begun := record.Begin("../..")
	t.Cleanup(func() {
		rec := l.record(name, n)
		rec.Stamp(begun, nil)
		if outDir != "" {
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(filepath.Join(outDir, name+".md"), []byte(record.RenderAccuracy([]record.Record{*rec})), 0o644); err != nil {
				t.Errorf("writing the fault table: %v", err)
			}
		}
		if recDir != "" {
			path, err := record.Write(recDir, rec)
			if err != nil {
				t.Errorf("writing the fault record: %v", err)
			}
			t.Logf("recorded %s", path)
		}
	})
	return l
}

// record is the test's trials as a record, its command the one that
// repeats them.
func (l *mnFaultLog) record(test string, n int) *record.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := &record.Record{Benchmark: "faults", Placement: "spread over 2 nodes",
		Command: fmt.Sprintf("SLOWPOKE_MULTINODE_FAULT_TRIALS=%d test/kube/multinode-e2e.sh -run '^%s$'", n, test),
		Note:    "Issue 44: " + test + ", the faults struck mid-pause; the bound is the lease, or the partition's cap."}
	for _, r := range l.trials {
		rec.Faults = append(rec.Faults, *r)
	}
	return rec
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
