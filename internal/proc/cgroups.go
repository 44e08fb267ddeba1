package proc

import (
	"os"
	"strconv"
	"strings"
)

// Cgroups reads pid's cgroups (/proc/PID/cgroup): ParseCgroups.
func Cgroups(pid int) (map[string]string, error) {
	return ReadCgroups("/proc/" + strconv.Itoa(pid) + "/cgroup")
}

// ReadCgroups reads a file in /proc/PID/cgroup's format (such as
// /proc/thread-self/cgroup): ParseCgroups.
func ReadCgroups(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseCgroups(string(b)), nil
}

// ParseCgroups parses the lines of /proc/PID/cgroup
// ("hierarchy-ID:controller-list:path"): each controller of a v1
// hierarchy ("freezer", "cpu", "name=systemd"), and "" for the unified
// hierarchy (hierarchy 0), maps to its path.
func ParseCgroups(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				out[c] = parts[2]
			}
		}
	}
	return out
}
