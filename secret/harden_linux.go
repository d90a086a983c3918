package secret

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Harden makes this process non-dumpable (prctl PR_SET_DUMPABLE 0): other
// processes of the same user can then neither read its memory nor its
// /proc/<pid>/environ, and it leaves no core dump. The flag is reset by
// execve, so the commands ink runs are ordinary processes. Safe to call
// more than once.
func Harden() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the process non-dumpable: %w", err)
	}
	return nil
}

// ScrubEnviron blanks, in the environment block the kernel keeps for this
// process (what /proc/<pid>/environ and `ps e` show), the value of every
// variable that holds one of secrets, in place. Go read the environment
// into its own memory at start-up, so os.Getenv and os.Environ are not
// affected and the process goes on using its keys. It returns how many
// values it blanked.
func ScrubEnviron(secrets []Secret) (int, error) {
	if len(secrets) == 0 {
		return 0, nil
	}
	start, end, err := envBounds()
	if err != nil {
		return 0, err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("scrub environment: %w", err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, int64(start)); err != nil {
		return 0, fmt.Errorf("scrub environment: read: %w", err)
	}
	values := make(map[string]bool, len(secrets))
	for _, s := range secrets {
		values[s.Value] = true
	}
	n := 0
	off := 0
	for _, entry := range bytes.Split(block, []byte{0}) {
		if eq := bytes.IndexByte(entry, '='); eq > 0 {
			value := string(entry[eq+1:])
			if hidesSecret(value, values) {
				blank := make([]byte, len(entry)-eq-1)
				if _, err := mem.WriteAt(blank, int64(start)+int64(off+eq+1)); err != nil {
					return n, fmt.Errorf("scrub environment: write: %w", err)
				}
				n++
			}
		}
		off += len(entry) + 1
	}
	return n, nil
}

// hidesSecret reports whether an environment value is, or contains, a
// secret value.
func hidesSecret(value string, values map[string]bool) bool {
	if values[strings.TrimSpace(value)] {
		return true
	}
	for v := range values {
		if strings.Contains(value, v) {
			return true
		}
	}
	return false
}

// envBounds reads env_start and env_end, fields 50 and 51 of
// /proc/self/stat (Linux 3.5+).
func envBounds() (start, end uint64, err error) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("scrub environment: %w", err)
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("scrub environment: unexpected /proc/self/stat")
	}
	// Field 3 (state) is the first after the command name.
	f := strings.Fields(string(data[i+1:]))
	const envStart, envEnd = 50 - 3, 51 - 3
	if len(f) <= envEnd {
		return 0, 0, fmt.Errorf("scrub environment: /proc/self/stat has no env_start/env_end")
	}
	start, err1 := strconv.ParseUint(f[envStart], 10, 64)
	end, err2 := strconv.ParseUint(f[envEnd], 10, 64)
	if err1 != nil || err2 != nil || end <= start {
		return 0, 0, fmt.Errorf("scrub environment: bad env_start/env_end in /proc/self/stat")
	}
	return start, end, nil
}
