//go:build !linux

package hrtimer

import "time"

// Max is 0: runtime timers are used for all waits.
const Max = 0

// Timer is not available on this system.
type Timer struct{}

// New returns nil: callers use runtime timers.
func New() *Timer { return nil }

// Sleep reports false: the timer cannot be used.
func (t *Timer) Sleep(d time.Duration) bool { return false }

// Close does nothing.
func (t *Timer) Close() {}
