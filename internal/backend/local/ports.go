package local

import (
	"fmt"
	"github.com/slowpoke-dev/slowpoke/internal/attach"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
)

// checkPorts refuses to start when a service's port is already taken: the
// service would fail to listen, and the failure would show up later and
// elsewhere (a controller that never answers, a log file). The error names
// the service, the port and, where /proc says, the process that holds it.
func checkPorts(services []spec.Service) error {
	var busy []string
	for _, s := range services {
		if s.Port <= 0 {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
		if err == nil {
			ln.Close()
			continue
		}
		owner := portOwner(s.Port)
		if owner == "" {
			owner = "another process"
		}
		busy = append(busy, fmt.Sprintf("service %q: port %d is already in use by %s", s.Name, s.Port, owner))
	}
	if len(busy) == 0 {
		return nil
	}
	return fmt.Errorf("%s\n(is another slowpoke run, or the application itself, still running? stop it, or change the ports in the spec)", strings.Join(busy, "\n"))
}

// portOwner names the process listening on TCP port, from /proc/net/tcp
// and tcp6 and the processes' descriptors ("" if it cannot tell).
func portOwner(port int) string {
	if holders, _ := attach.PortHolders(port); len(holders) > 0 {
		return describeProcess(holders[0])
	}
	return ""
}

// describeProcess names a process: "PID 123 (slowpoke-emu -service a)".
func describeProcess(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if err != nil || cmd == "" {
		return fmt.Sprintf("PID %d", pid)
	}
	if len(cmd) > 120 {
		cmd = cmd[:117] + "..."
	}
	return fmt.Sprintf("PID %d (%s)", pid, cmd)
}
