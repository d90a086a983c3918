package worker

import (
	"runtime"
	"syscall"
)

// peakRSS returns the largest resident set this process has had, in bytes
// (0 when the system cannot say). The worker logs it with each attempt's
// end, so that what a large input cost is on record.
func peakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes there, KiB on Linux
	}
	return int64(ru.Maxrss) * 1024
}
