package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// resumedChild finds the child that `ink task --resume ID` continues, as
// the supervisor will find it: among the children of --parent's session,
// else of the newest session of cwd that has it. An id that no session
// knows, or a --parent that does not exist, is bad input (exit 2); a child
// that is found but cannot be read safely is refused (exit 3), as the
// supervisor would refuse it. It reads only headers and writes nothing.
func resumedChild(home, cwd, childID, parentID string) (session.Header, error) {
	if parentID != "" {
		path, err := mainSession(home, cwd, parentID)
		if err != nil {
			return session.Header{}, err
		}
		info, err := session.FindChild(path, parentID, childID)
		return info.Header, lookupFailure(childID, err)
	}
	sessions, err := session.ListSessions(home, cwd)
	if err != nil {
		return session.Header{}, &exitError{code: exitFailed, msg: fmt.Sprintf("cannot resume child %q: %v", childID, err)}
	}
	var known []string
	for _, s := range sessions {
		if s.ID == "" {
			continue
		}
		info, err := session.FindChild(s.Path, s.ID, childID)
		var le *session.LookupError
		if err == nil || !errors.As(err, &le) || le.Code != session.CodeNotFound {
			return info.Header, lookupFailure(childID, err)
		}
		for _, k := range le.Children {
			if k.ID == "" || k.Problem != "" {
				continue
			}
			st := k.LastStatus
			if st == "" {
				st = "never ran"
			}
			known = append(known, fmt.Sprintf("%s (%s, session %s)", k.ID, st, s.ID))
		}
	}
	msg := fmt.Sprintf("--resume %s: not-found: no session of %s has a child with that id", childID, cwd)
	switch {
	case len(known) > 0:
		msg += ". Children of this directory's sessions: " + strings.Join(known, ", ")
	case len(sessions) == 0:
		msg += " (this directory has no sessions)"
	default:
		msg += " (its sessions have no children)"
	}
	return session.Header{}, usageErr("%s; run ink from the directory the child was started in (or pass --cwd), or name its session with --parent (see `%s sessions ls`)", msg, selfCommand())
}

// lookupFailure turns a refusal of session.FindChild into the exit of
// `ink task --resume`: an id nobody has is bad input, anything else (a
// transcript that cannot be read safely, a child of another session) is
// refused.
func lookupFailure(childID string, err error) error {
	if err == nil {
		return nil
	}
	var le *session.LookupError
	if !errors.As(err, &le) {
		le = &session.LookupError{Code: session.CodeMalformed, Message: err.Error()}
	}
	msg := strings.TrimPrefix(le.Message, fmt.Sprintf("cannot resume child %q: ", childID))
	if le.Code == session.CodeNotFound || le.Code == session.CodeBadID {
		return usageErr("--resume %s: %s: %s", childID, le.Code, msg)
	}
	// The same words as the supervisor's refusal of the task call.
	return &exitError{code: exitRefused, msg: fmt.Sprintf("cannot resume child %q:\n- %s: %s\nStart a new task instead.", childID, le.Code, msg)}
}

// mainSession finds the main session id (--parent) the way the supervisor
// does: in cwd's sessions first, then in any directory's.
func mainSession(home, cwd, id string) (string, error) {
	if !session.ValidID(id) {
		return "", usageErr("--parent %q is not a session id (ids use only a-z, 0-9 and '-'); list sessions with `%s sessions ls`", id, selfCommand())
	}
	p := session.MainPath(home, cwd, id)
	if _, err := os.Lstat(p); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob(filepath.Join(home, "sessions", "*", id+".jsonl"))
	if len(matches) == 1 {
		return matches[0], nil
	}
	return "", usageErr("--parent %s: no such session; list the sessions of this directory with `%s sessions ls`", id, selfCommand())
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
