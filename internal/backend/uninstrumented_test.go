package backend

import (
	"fmt"
	"testing"
)

func TestUninstrumentedSaysOncePerService(t *testing.T) {
	var u Uninstrumented
	var lines []string
	logf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	for _, name := range []string{"cart", "cart", "frontend", "cart"} {
		u.Note(name, logf)
	}
	if len(lines) != 2 {
		t.Fatalf("said %d times, want once each for cart and frontend: %q", len(lines), lines)
	}
}
