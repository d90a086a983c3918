//go:build !unix

package console

import "os"

// notifyResize does nothing where there is no SIGWINCH: a resize then shows
// at the next tick, which reads the width afresh.
func notifyResize(chan<- os.Signal) {}

// stopResize does nothing where there is no SIGWINCH.
func stopResize(chan<- os.Signal) {}
