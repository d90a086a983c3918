package orchestrator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/inkdev/ink/session"
)

// Resumed is where a child to resume was found: the main session whose
// children directory holds it and, when it can be resumed as that
// session's child, its transcript.
type Resumed struct {
	// OwnerPath and OwnerID are the owning main session ("" when none
	// owns the child).
	OwnerPath, OwnerID string
	// Child is the child's transcript and header (zero when the lookup
	// refused it).
	Child session.ChildInfo
}

// ParentError is a refusal of FindResumed: the --parent it was given
// names no main session.
type ParentError struct {
	// ID is the --parent given; Invalid is set when it is not a session id
	// at all.
	ID      string
	Invalid bool
	// Err says why no session was found.
	Err error
}

// Error says which --parent and why.
func (e *ParentError) Error() string { return fmt.Sprintf("--parent %s: %v", e.ID, e.Err) }

// Unwrap returns why no session was found.
func (e *ParentError) Unwrap() error { return e.Err }

// FindResumed finds, in INK_HOME's files, the child `ink task --resume`
// continues, by the one rule the supervisor follows itself (locate): among
// the children of session parentID when it is given, else of the newest
// session of cwd that holds the child. The caller hands the result to
// Task (TaskOptions.Found), which then does not look again. To find the
// child it reads headers only: of the sessions with a child file named
// after the id, or, when no name finds it, of every child of cwd (see
// session.ChildHolders); only an id found nowhere reads this directory's
// children whole, to list them. It writes nothing.
//
// Its refusals: a *ParentError for a parentID that names no session; a
// *session.LookupError with the owner set (Resumed.OwnerPath) for a child
// found but not resumable as found (malformed, not-owned, …), or for a
// parentID that has no such child; a *session.LookupError without one for
// a bad id, or an id that no session of cwd holds (CodeNotFound, its
// message listing this directory's children). Anything else is an error
// reading INK_HOME.
func FindResumed(inkHome, cwd, childID, parentID string) (Resumed, error) {
	return locate(fileStore{}, inkHome, cwd, childID, parentID)
}

// locate is FindResumed over the store s.
func locate(s Store, inkHome, cwd, childID, parentID string) (Resumed, error) {
	if parentID != "" {
		path, err := findMain(s, inkHome, cwd, parentID)
		if err != nil {
			return Resumed{}, &ParentError{ID: parentID, Invalid: !session.ValidID(parentID), Err: err}
		}
		info, err := s.FindChild(path, parentID, childID)
		return Resumed{OwnerPath: path, OwnerID: parentID, Child: info}, err
	}
	// The children's file names first, then every header: a child filed
	// under another name is still found, never at the cost of a body.
	for _, scan := range []bool{false, true} {
		holders, err := s.Holders(inkHome, cwd, childID, scan)
		if err != nil {
			var le *session.LookupError
			if errors.As(err, &le) {
				return Resumed{}, err
			}
			return Resumed{}, fmt.Errorf("cannot resume child %q: %w", childID, err)
		}
		for _, h := range holders {
			info, err := s.FindChild(h.Path, h.Header.ID, childID)
			var le *session.LookupError
			if err == nil || !errors.As(err, &le) || le.Code != session.CodeNotFound {
				return Resumed{OwnerPath: h.Path, OwnerID: h.Header.ID, Child: info}, err
			}
		}
	}
	return notFoundIn(s, inkHome, cwd, childID)
}

// notFoundIn is the refusal of a child no session of cwd holds. A file
// of a session named after it that never started (a crash of the machine
// left it without its bytes) gets FindChild's refusal, which says so, with
// that session as its owner. Else it lists this
// directory's children (reading them, as a listing does: only a lookup
// that found nothing pays for it).
func notFoundIn(s Store, inkHome, cwd, childID string) (Resumed, error) {
	sessions, err := s.Sessions(inkHome, cwd)
	if err != nil {
		return Resumed{}, fmt.Errorf("cannot resume child %q: %w", childID, err)
	}
	for _, ss := range sessions {
		if ss.ID != "" && s.Exists(session.ChildPath(ss.Path, childID)) {
			if _, err := s.FindChild(ss.Path, ss.ID, childID); errors.Is(err, session.ErrNotStarted) {
				return Resumed{OwnerPath: ss.Path, OwnerID: ss.ID}, err
			}
		}
	}
	var known []string
	for _, ss := range sessions {
		if ss.ID == "" {
			continue
		}
		kids, _ := s.Children(ss.Path)
		for _, k := range kids {
			if k.ID == "" || k.Problem != "" {
				continue
			}
			st := k.LastStatus
			if st == "" {
				st = "never ran"
			}
			known = append(known, fmt.Sprintf("%s (%s, session %s)", k.ID, st, ss.ID))
		}
	}
	msg := fmt.Sprintf("cannot resume child %q: no session of %s has a child with that id", childID, cwd)
	switch {
	case len(known) > 0:
		msg += ". Children of this directory's sessions: " + strings.Join(known, ", ")
	case len(sessions) == 0:
		msg += " (this directory has no sessions)"
	default:
		msg += " (its sessions have no children)"
	}
	return Resumed{}, &session.LookupError{Code: session.CodeNotFound, Message: msg}
}

// ownerRefusal words a lookup that found no owner for childID, for a task
// call's result.
func ownerRefusal(childID string, err error) string {
	var pe *ParentError
	var le *session.LookupError
	switch {
	case errors.As(err, &pe):
		return fmt.Sprintf("cannot resume child %q: %v\nStart a new task instead.", childID, pe)
	case errors.As(err, &le) && le.Code == session.CodeNotFound:
		return fmt.Sprintf("cannot resume child %q: %s: %s; run ink from the directory the child was started in, or name its session with --parent (see `ink sessions ls`)\nStart a new task instead.",
			childID, le.Code, strings.TrimPrefix(le.Message, fmt.Sprintf("cannot resume child %q: ", childID)))
	case errors.As(err, &le):
		return resumeRefusal(childID, []Problem{{Code: le.Code, Message: strings.TrimPrefix(le.Message, fmt.Sprintf("cannot resume child %q: ", childID))}})
	}
	return err.Error() + "\nStart a new task instead."
}

// findMain locates main session id: in cwd's directory first, then the
// only one of that id in any directory of inkHome.
func findMain(s Store, inkHome, cwd, id string) (string, error) {
	if !session.ValidID(id) {
		return "", fmt.Errorf("--session %q is not a session id (ids use only a-z, 0-9 and '-'); list sessions with `ink sessions ls`", id)
	}
	p := session.MainPath(inkHome, cwd, id)
	if s.Exists(p) {
		return p, nil
	}
	matches, kids := s.Named(inkHome, id)
	if len(matches) == 1 {
		return matches[0], nil
	}
	if len(kids) > 0 {
		return "", fmt.Errorf("%s is a child session, not a main session; continue it with `ink task --resume %s \"…\"`", id, id)
	}
	return "", fmt.Errorf("no session %s for %s; list sessions with `ink sessions ls`", id, cwd)
}
