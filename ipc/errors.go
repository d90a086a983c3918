package ipc

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
)

// ProtocolMismatchError reports a worker that speaks another version of the
// worker wire than this ink, typically because the ink binary was replaced
// while a host was running. Callers branch on it with errors.As.
type ProtocolMismatchError struct {
	// Worker is the protocol version the worker speaks.
	Worker int
	// Host is the protocol version this ink speaks (ProtocolVersion).
	Host int
}

// Error says what happened and how to fix it.
func (e *ProtocolMismatchError) Error() string {
	return fmt.Sprintf("ink worker speaks protocol %d, this ink speaks %d: "+
		"the ink binary changed underneath; reinstall ink or rerun the same binary",
		e.Worker, e.Host)
}

// pluginVersionRE finds the worker's version in go-plugin's negotiation
// error ("incompatible API version with plugin. Plugin version: 2, ...").
var pluginVersionRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`incompatible API version with plugin\. Plugin version: (\d+)`)
})

// asProtocolMismatch turns go-plugin's version negotiation failure into a
// *ProtocolMismatchError; any other error is returned unchanged.
func asProtocolMismatch(err error, host int) error {
	if err == nil {
		return nil
	}
	m := pluginVersionRE().FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	worker, convErr := strconv.Atoi(m[1])
	if convErr != nil {
		return err
	}
	return &ProtocolMismatchError{Worker: worker, Host: host}
}
