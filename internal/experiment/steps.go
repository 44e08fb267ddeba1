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
	if s.step > 1 {
		per := time.Since(s.start) / time.Duration(s.step-1)
		eta = ", about " + (per * time.Duration(s.total-s.step+1)).Round(time.Second).String() + " left"
	}
	fmt.Fprintf(s.w, "[%d/%d %s%s] "+format+"\n", append([]any{s.step, s.total, time.Since(s.start).Round(time.Second), eta}, args...)...)
}
