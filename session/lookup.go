package session

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// LookupError is a refusal of FindChild. Callers branch on Code.
type LookupError struct {
	// Code is CodeBadID, CodeNotFound, CodeAmbiguous, CodeMalformed,
	// CodeNotOwned, CodeMissingLaunch or CodeInvalidLaunch.
	Code Code
	// Message says what was wrong, for a user.
	Message string
	// Err is the cause, when one is known (ErrNotStarted).
	Err error
}

// Error returns the message.
func (e *LookupError) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *LookupError) Unwrap() error { return e.Err }

// ChildInfo is a child transcript found by FindChild.
type ChildInfo struct {
	Path   string
	Header Header
}

// FindChild finds child childID of the session whose transcript is
// mainPath, owned by parentID. It looks only in mainPath's children
// directory and matches header ids (file names are not trusted), reading at
// most the first 64 KiB of each file and never following a symlink. The id
// is checked before any file is touched. Every refusal is a *LookupError:
// bad-id, not-found (listing this parent's children "id (last status)" and
// naming the files it skipped), ambiguous (two files claim the id),
// malformed (the only file named after the id is a symlink or has a broken
// header), not-owned (header parent or launch parentSessionId is not
// parentID), missing-launch, invalid-launch (the launch record does not
// parse, or its childId is not the header id).
func FindChild(mainPath, parentID, childID string) (ChildInfo, error) {
	if !ValidID(childID) {
		return ChildInfo{}, badChildID(childID)
	}
	dir := ChildrenDir(mainPath)
	files, err := scanChildren(dir)
	if err != nil {
		return ChildInfo{}, &LookupError{Code: CodeNotFound, Message: fmt.Sprintf("cannot resume child %q: %v", childID, err)}
	}
	var matches []childFile
	var named *childFile
	for i, c := range files {
		if c.header.ID == childID && !c.symlink && (c.err == nil || errors.Is(c.err, ErrInvalidLaunch)) {
			matches = append(matches, c)
		}
		if c.name == childID+".jsonl" && c.err != nil && !errors.Is(c.err, ErrInvalidLaunch) {
			named = &files[i]
		}
	}
	switch len(matches) {
	case 0:
		if _, err := ReadHeader(filepath.Join(dir, childID+".jsonl")); errors.Is(err, ErrNotStarted) {
			return ChildInfo{}, &LookupError{Code: CodeNotFound, Err: err, Message: fmt.Sprintf(
				"cannot resume child %q: it never started: %v. Start a new task instead.", childID, err)}
		}
		if named != nil {
			return ChildInfo{}, &LookupError{Code: CodeMalformed, Message: fmt.Sprintf(
				"cannot resume child %q: its transcript cannot be read safely: %v", childID, named.err)}
		}
		kids, _ := ListChildren(mainPath)
		return ChildInfo{}, &LookupError{Code: CodeNotFound, Message: notFoundMessage(childID, kids, files)}
	case 1:
	default:
		paths := make([]string, len(matches))
		for i, m := range matches {
			paths[i] = m.path
		}
		return ChildInfo{}, &LookupError{Code: CodeAmbiguous, Message: fmt.Sprintf(
			"cannot resume child %q: %d transcripts claim this id (%s); move the copies away", childID, len(matches), strings.Join(paths, ", "))}
	}
	c := matches[0]
	h := c.header
	refuse := func(code Code, format string, args ...any) (ChildInfo, error) {
		return ChildInfo{}, &LookupError{Code: code, Message: fmt.Sprintf("cannot resume child %q: ", childID) + fmt.Sprintf(format, args...)}
	}
	if h.Parent != parentID {
		return refuse(CodeNotOwned, "it belongs to session %q, not to this session %q", h.Parent, parentID)
	}
	if errors.Is(c.err, ErrInvalidLaunch) {
		return refuse(CodeInvalidLaunch, "%v", c.err)
	}
	if h.Launch == nil {
		return refuse(CodeMissingLaunch, "its transcript %s has no launch record, so ink cannot check it is resumed as it was launched", c.path)
	}
	if h.Launch.ParentSessionID != parentID {
		return refuse(CodeNotOwned, "its launch record names parent session %q, not this session %q", h.Launch.ParentSessionID, parentID)
	}
	if h.Launch.ChildID != h.ID {
		return refuse(CodeInvalidLaunch, "its launch record is for child %q, not %q (%s)", h.Launch.ChildID, h.ID, c.path)
	}
	return ChildInfo{Path: c.path, Header: h}, nil
}

// notFoundMessage lists this parent's children and the files skipped.
func notFoundMessage(childID string, kids []ChildSummary, files []childFile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cannot resume child %q: this session has no child with that id", childID)
	var listed []string
	for _, k := range kids {
		if k.ID == "" || strings.HasPrefix(k.Problem, "not-owned") {
			continue
		}
		st := k.LastStatus
		if st == "" {
			st = "never ran"
		}
		listed = append(listed, fmt.Sprintf("%s (%s)", k.ID, st))
	}
	if len(listed) > 0 {
		b.WriteString(". This session's children: " + strings.Join(listed, ", "))
	} else {
		b.WriteString(". This session has no children")
	}
	var skipped []string
	for _, f := range files {
		if f.err != nil && !errors.Is(f.err, ErrInvalidLaunch) {
			why := "malformed header"
			if f.symlink {
				why = "symlink"
			}
			skipped = append(skipped, fmt.Sprintf("%s (%s)", f.name, why))
		}
	}
	if len(skipped) > 0 {
		b.WriteString(". Skipped unreadable files: " + strings.Join(skipped, ", "))
	}
	return b.String()
}
