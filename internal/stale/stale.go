package stale

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/slowpoke-dev/slowpoke/internal/proc"
)

// Prefix is the start of the name of a file or directory of kind made by
// this process: kind, its pid and a dash ("slowpoke-agent-4242-"), ready
// for os.MkdirTemp or os.CreateTemp, or to append a suffix of one's own.
func Prefix(kind string) string { return fmt.Sprintf("%s-%d-", kind, os.Getpid()) }

// Sweep removes the entries of dir named kind-PID-* (files, or directories
// with everything in them) whose PID runs no process and that belong to
// this process's user. It returns the paths removed. Errors are not
// returned: a sweep is best effort, and an entry it cannot remove is left
// for a later one.
func Sweep(dir, kind string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		pid, ok := Creator(e.Name(), kind)
		if !ok || running(pid) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !ownedByMe(fi) || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if os.RemoveAll(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// Creator parses the pid of the process that made the entry named name,
// of the form kind-PID-suffix (see Prefix).
func Creator(name, kind string) (int, bool) {
	rest, ok := strings.CutPrefix(name, kind+"-")
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != digits {
		return 0, false
	}
	return pid, true
}

// running says whether pid is a process (of any user) that has not ended:
// a zombie, which its parent has not reaped yet, has ended.
func running(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	return !ended(pid)
}

// ended says whether /proc shows pid as a process that has ended and not
// been reaped. It is false where /proc cannot be read.
func ended(pid int) bool {
	s, ok := proc.Read(pid)
	return ok && s.Ended()
}

func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
