//go:build unix

package console

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize relays the terminal's resizes (SIGWINCH) to c until
// stopResize(c).
func notifyResize(c chan<- os.Signal) { signal.Notify(c, syscall.SIGWINCH) }

// stopResize stops relaying resizes to c.
func stopResize(c chan<- os.Signal) { signal.Stop(c) }
