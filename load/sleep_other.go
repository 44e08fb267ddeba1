//go:build !linux

package load

import "time"

// preciseSleepMax is 0: runtime timers are used for all waits.
const preciseSleepMax = 0

type preciseTimer struct{}

func newPreciseTimer() *preciseTimer               { return nil }
func (t *preciseTimer) sleep(d time.Duration) bool { return false }
func (t *preciseTimer) close()                     {}
