package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempDirPrefix starts the name of a sandboxed bash call's private temp
// dir, followed by the pid of the process that made it and a dash:
// ink-bash-<pid>-<random>.
const tempDirPrefix = "ink-bash-"

// makeTempDir makes a private (0700) temp dir for one bash call under the
// system temp dir, named after this process so that a later sweep can
// tell whether its maker is gone.
func makeTempDir() (string, error) {
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", tempDirPrefix, os.Getpid()))
}

// removeTempDir removes a bash call's private temp dir, making read-only
// directories in it writable first when that is what stops the removal
// (module caches, for one, are unpacked read-only).
func removeTempDir(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}

// sweepTempDirs removes the private temp dirs of bash calls whose process
// no longer exists (a worker killed mid-call cannot clean up after
// itself). A directory whose pid is alive, even if that pid was reused,
// is left alone, as is anything not named like ours or not ours to
// remove.
func sweepTempDirs() {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tempDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue
		}
		removeTempDir(filepath.Join(tmp, e.Name()))
	}
}
