package main

import (
	"testing"

	"github.com/slowpoke-dev/slowpoke/apps/internal/apptest"
	"github.com/slowpoke-dev/slowpoke/apps/social"
)

func TestMain(m *testing.M) { apptest.RunMain(m, main) }

// TestProcesses runs each service as a process and stops it with SIGTERM.
func TestProcesses(t *testing.T) { apptest.CheckProcess(t, social.App) }
