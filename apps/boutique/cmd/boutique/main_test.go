package main

import (
	"testing"

	"github.com/slowpoke-dev/slowpoke/apps/boutique"
	"github.com/slowpoke-dev/slowpoke/apps/internal/apptest"
)

func TestMain(m *testing.M) { apptest.RunMain(m, main) }

// TestProcesses runs each service as a process and stops it with SIGTERM.
func TestProcesses(t *testing.T) { apptest.CheckProcess(t, boutique.App) }
