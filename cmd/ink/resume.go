package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
)

// resumedChild finds the child that `ink task --resume` continues with the
// supervisor's own lookup (orchestrator.FindResumed), whose result the
// caller hands to the supervisor: among the children of --parent's
// session, else of the newest session of cwd that holds it. An id that no
// session knows, or a --parent that does not exist, is bad input (exit
// 2); a child that is found but cannot be read safely is refused (exit 3),
// as the supervisor would refuse it. It reads only headers and writes
// nothing.
func resumedChild(home, cwd, childID, parentID string) (orchestrator.Resumed, error) {
	found, err := orchestrator.FindResumed(home, cwd, childID, parentID)
	if err == nil {
		return found, nil
	}
	var pe *orchestrator.ParentError
	var le *session.LookupError
	switch {
	case errors.As(err, &pe) && pe.Invalid:
		return found, usageErr("--parent %q is not a session id (ids use only a-z, 0-9 and '-'); list sessions with `%s sessions ls`", parentID, selfCommand())
	case errors.As(err, &pe):
		return found, usageErr("--parent %s: no such session; list the sessions of this directory with `%s sessions ls`", parentID, selfCommand())
	case !errors.As(err, &le):
		return found, &exitError{code: exitFailed, msg: err.Error()}
	case le.Code == session.CodeNotFound && found.OwnerPath == "":
		msg := strings.TrimPrefix(le.Message, fmt.Sprintf("cannot resume child %q: ", childID))
		return found, usageErr("--resume %s: %s: %s; run ink from the directory the child was started in (or pass --cwd), or name its session with --parent (see `%s sessions ls`)", childID, le.Code, msg, selfCommand())
	}
	return found, lookupFailure(childID, le)
}

// lookupFailure turns a refusal of the child lookup into the exit of
// `ink task --resume`: an id nobody has is bad input, anything else (a
// transcript that cannot be read safely, a child of another session) is
// refused.
func lookupFailure(childID string, le *session.LookupError) error {
	msg := strings.TrimPrefix(le.Message, fmt.Sprintf("cannot resume child %q: ", childID))
	if le.Code == session.CodeNotFound || le.Code == session.CodeBadID {
		return usageErr("--resume %s: %s: %s", childID, le.Code, msg)
	}
	// The same words as the supervisor's refusal of the task call.
	return &exitError{code: exitRefused, msg: fmt.Sprintf("cannot resume child %q:\n- %s: %s\nStart a new task instead.", childID, le.Code, msg)}
}

// recordedBinding is the model binding a resumed child was launched on,
// checked as --model is: its key is set, its script loads, its server
// answers. `ink task --resume` runs on it unless --model overrides it.
func recordedBinding(ctx context.Context, h session.Header) (model.Binding, error) {
	if h.Launch == nil {
		return model.Binding{}, &exitError{code: exitRefused, msg: fmt.Sprintf("cannot resume child %q:\n- missing-launch: its transcript has no launch record, so ink cannot check it is resumed as it was launched\nStart a new task instead.", h.ID)}
	}
	b := h.Launch.Binding
	what := fmt.Sprintf("child %s was launched on %s", h.ID, b.String())
	if b.Provider == "script" {
		if _, err := os.Stat(b.Model); err != nil {
			return model.Binding{}, usageErr("%s, and that script is gone; put it back to resume the child", what)
		}
		return b, checkScript(what, b.Model)
	}
	if err := checkBinding(b, what); err != nil {
		return model.Binding{}, usageErr("%s: %v", what, err)
	}
	return b, checkServerAnswers(ctx, b, what, false)
}
