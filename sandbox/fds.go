package sandbox

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseInherited marks every file descriptor above 2 close-on-exec, so
// that none the process was started with reaches a program it starts: a
// descriptor left open by whoever started ink (`exec 7>>file; ink …`)
// would otherwise be open in every bash, which could write through it to
// a file the sandbox forbids. Descriptors the process passes on purpose
// (exec.Cmd's ExtraFiles, such as a lock inherited by git or the status
// pipe of the sandbox step) are duplicated for the child after this, so
// they still arrive. Call it first thing in main; it uses close_range(2)
// (Linux 5.11) and falls back to walking /proc/self/fd.
func CloseInherited() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		unix.CloseOnExec(fd)
	}
}
