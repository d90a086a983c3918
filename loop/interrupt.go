package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inkdev/ink/tools"
)

// cause returns why ctx is done: its cause when one was given
// ("the supervisor was lost"), else ctx.Err().
func cause(ctx context.Context) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	return ctx.Err()
}

// interruptedError is Run's error when ctx is done. It wraps both the cause
// and ctx.Err(), so errors.Is works for either.
func interruptedError(ctx context.Context) error {
	c, base := cause(ctx), ctx.Err()
	if base == nil || errors.Is(c, base) {
		return fmt.Errorf("interrupted: %w", c)
	}
	return fmt.Errorf("interrupted: %w (%w)", c, base)
}

// notStarted is the synthesized result of a call that never ran because the
// run was interrupted first.
func notStarted(ctx context.Context) tools.Result {
	return tools.Result{Content: fmt.Sprintf("interrupted: %v (the call was not started)", cause(ctx)), IsError: true}
}

// abandoned is the synthesized result text of a call whose tool did not
// return within the grace after the interrupt.
func abandoned(ctx context.Context, tool string, grace time.Duration) string {
	return fmt.Sprintf("tool %s did not stop within %v of the interrupt; its result was abandoned (interrupted: %v)", tool, grace, cause(ctx))
}

// withCause makes sure the error text of a tool stopped by the interrupt
// says why it was interrupted.
func withCause(ctx context.Context, content string) string {
	why := cause(ctx).Error()
	if strings.Contains(content, why) {
		return content
	}
	line := "interrupted: " + why
	if strings.TrimSpace(content) == "" {
		return line
	}
	return strings.TrimRight(content, "\n") + "\n" + line
}
