package worker

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// peakRSS returns the largest resident set this process has had, in bytes
// (0 when the system cannot say). The worker logs it with each attempt's
// end, so that what a large input cost is on record. On Linux it is the
// VmHWM of /proc/self/status, which counts this program alone; getrusage's
// figure would include the supervisor's memory at the moment it started
// the worker.
func peakRSS() int64 {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		if _, rest, ok := bytes.Cut(data, []byte("\nVmHWM:")); ok {
			line, _, _ := bytes.Cut(rest, []byte("\n"))
			if kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(line), []byte("kB")))), 10, 64); err == nil {
				return kb * 1024
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes there, KiB on Linux
	}
	return int64(ru.Maxrss) * 1024
}
