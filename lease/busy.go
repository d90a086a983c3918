package lease

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrBusy reports that another holder has the transcript's lease. Errors
// returned by Acquire match it with errors.Is when the lease is taken; use
// errors.As with *BusyError for the holder's details.
var ErrBusy = errors.New("lease busy")

// BusyError is the error Acquire returns when the lease is held. It matches
// ErrBusy.
type BusyError struct {
	// Path is the transcript path.
	Path string
	// Holder is the holder's metadata, nil when it had not written any yet.
	Holder *Meta
	// HeartbeatAge is how long ago the holder last beat (0 without Holder).
	HeartbeatAge time.Duration
	// InProcess is true when the holder is this very process.
	InProcess bool
}

// Error says who holds the lease and what the user can do about it.
func (e *BusyError) Error() string {
	var b strings.Builder
	if e.InProcess {
		fmt.Fprintf(&b, "transcript %s is already running in this process", e.Path)
		if e.Holder != nil && e.Holder.AttemptID != "" {
			fmt.Fprintf(&b, " (attempt %s", e.Holder.AttemptID)
			if e.Holder.Agent != "" {
				fmt.Fprintf(&b, ", agent %s", e.Holder.Agent)
			}
			b.WriteString(")")
		}
		b.WriteString("; wait for that run to finish")
		return b.String()
	}
	if e.Holder == nil {
		fmt.Fprintf(&b, "transcript %s is in use by another process (it has not written its lease metadata yet); wait for it to finish, or check with: ink leases ls", e.Path)
		return b.String()
	}
	fmt.Fprintf(&b, "transcript %s is in use by pid %d on host %s (", e.Path, e.Holder.Pid, e.Holder.Host)
	if e.Holder.Agent != "" {
		fmt.Fprintf(&b, "agent %s, ", e.Holder.Agent)
	}
	fmt.Fprintf(&b, "attempt %s, heartbeat %s ago); wait for it to finish or, if it is hung, run: ink leases break %s",
		e.Holder.AttemptID, formatAge(e.HeartbeatAge), e.Path)
	return b.String()
}

// Is makes BusyError match ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// formatAge renders a heartbeat age the way a person reads it: "0.4s",
// "12.0s", "3m5s".
func formatAge(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
