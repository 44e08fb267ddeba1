package experiment

import (
	"fmt"
	"io"
	"time"
)

// stepper prints the progress of a command made of a known number of steps
// (runs of the load), with the time so far and an estimate of what is
// left: "[step/steps elapsed, about ETA left] message".
type stepper struct {
	w     io.Writer // nil: nothing is printed
	start time.Time
	total int // steps planned
	step  int // under way, from 1
}

func (s *stepper) progress(format string, args ...any) {
	if s.w == nil {
		return
	}
	eta := ""
	if left, ok := timeLeft(s.start, s.step, s.total); ok {
		eta = ", about " + left.String() + " left"
	}
	fmt.Fprintf(s.w, "[%d/%d %s%s] "+format+"\n", append([]any{s.step, s.total, time.Since(s.start).Round(time.Second), eta}, args...)...)
}

// timeLeft estimates, to the second, how long the steps from step (under
// way, from 1) to total will take at the pace of the steps done since
// start; ok is false while none is done. Both progress printers, the
// stepper's and Runner.progress, show it, each in its own words.
func timeLeft(start time.Time, step, total int) (left time.Duration, ok bool) {
	if step <= 1 {
		return 0, false
	}
	per := time.Since(start) / time.Duration(step-1)
	return (per * time.Duration(total-step+1)).Round(time.Second), true
}
