package local

import (
	"bufio"
	"fmt"
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
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, ino := range listeningInodes(f, port) {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return ""
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir("/proc/" + p.Name() + "/fd")
		for _, fd := range fds {
			link, err := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				return describeProcess(pid)
			}
		}
	}
	return ""
}

// listeningInodes returns the socket inodes listening on port in a
// /proc/net/tcp-format file.
func listeningInodes(path string, port int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st ... inode (field 9)
		if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
			out = append(out, fields[9])
		}
	}
	return out
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
