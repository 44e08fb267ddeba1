package proc_test

import (
	"os"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/testroot"
)

// TestMain runs this package's tests, which time real processes, one
// timing package at a time (testroot.Serialize).
func TestMain(m *testing.M) {
	testroot.Serialize()
	os.Exit(m.Run())
}
