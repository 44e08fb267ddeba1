package local

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// checkCommands refuses to start when a service's command cannot be run:
// its controller would fail to start it, and the cause would show up only
// in that service's log. The error names every such service, its command
// and where it was looked for.
func (d *Deployment) checkCommands() error {
	var bad []string
	for i := range d.spec.Services {
		s := &d.spec.Services[i]
		if s.CanRestart() != nil {
			continue // it runs already, and cannot be restarted
		}
		p := d.lookPath(s.CommandPath())
		if !strings.ContainsRune(p, '/') {
			if _, err := exec.LookPath(p); err != nil {
				bad = append(bad, fmt.Sprintf("service %q: command %q is neither on PATH nor beside %s", s.Name, p, d.opts.Executable))
			}
			continue
		}
		if _, err := os.Stat(p); err != nil {
			bad = append(bad, fmt.Sprintf("service %q: command %s: %v", s.Name, p, err))
		} else if !executable(p) {
			bad = append(bad, fmt.Sprintf("service %q: command %s is not an executable file", s.Name, p))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%s\n(build them first; for slowpoke's own applications and slowpoke-emu: go build -o bin/ ./cmd/... ./apps/... in its repository)", strings.Join(bad, "\n"))
}

// executable reports whether p is a file that someone may execute.
func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
