package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

func TestCheckCommands(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exe := write("slowpoke", 0o755)
	write("beside-slowpoke", 0o755)
	plain := write("plain", 0o644)
	tool := write("tool", 0o755)
	tests := []struct {
		name, command string
		want          string // "" when it may run
	}{
		{"absolute executable", tool, ""},
		{"on PATH", "sh", ""},
		{"beside the slowpoke binary", "beside-slowpoke", ""},
		{"missing bare name", "no-such-slowpoke-command", `service "svc": command "no-such-slowpoke-command" is neither on PATH nor beside ` + exe},
		{"missing path", filepath.Join(dir, "absent"), `service "svc": command ` + filepath.Join(dir, "absent") + ": stat"},
		{"not executable", plain, `service "svc": command ` + plain + " is not an executable file"},
		{"a directory", dir, "is not an executable file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Deployment{spec: &spec.Spec{Services: []spec.Service{{Name: "svc", Command: tt.command}}}, opts: Options{Executable: exe}}
			err := d.checkCommands()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "build them first") {
				t.Fatalf("error %v, want one containing %q and the remedy", err, tt.want)
			}
		})
	}
}

// Start refuses a service whose command cannot be run before it starts
// anything: no service, controller or log.
func TestStartRefusesMissingCommand(t *testing.T) {
	logs := filepath.Join(t.TempDir(), "logs")
	s := &spec.Spec{Name: "app", Services: []spec.Service{{Name: "app", Command: "no-such-slowpoke-command"}}}
	d, err := Start(context.Background(), s, Options{LogDir: logs})
	if err == nil {
		d.Stop()
		t.Fatal("started a service whose command does not exist")
	}
	if !strings.Contains(err.Error(), `service "app": command "no-such-slowpoke-command" is neither on PATH nor beside`) {
		t.Errorf("error %q does not name the service and its command", err)
	}
	if ents, _ := os.ReadDir(logs); len(ents) > 0 {
		t.Errorf("a refused start wrote %d files in %s, e.g. %s", len(ents), logs, ents[0].Name())
	}
}
