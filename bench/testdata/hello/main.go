// Command hello does nothing: the floor of a Go process's start and exit.
// Given an argument it waits a fifth of a second first, so that its memory
// can be sampled.
package main

import (
	"os"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		time.Sleep(200 * time.Millisecond)
	}
}
