package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Holder is a main session whose children directory holds a transcript
// that a resume of some child must answer for (ChildHolders).
type Holder struct {
	// Path is the main transcript; Header its header.
	Path   string
	Header Header
}

// ChildHolders returns the main sessions of cwd whose children directory
// holds childID in a form a resume must answer for — a transcript whose
// header claims the id, or one named after the id that cannot be read
// safely (a symlink, a broken header) — newest first (by creation time,
// then id). Sessions without a readable header are left out.
//
// The file name is the index: a child is created as <id>.jsonl in its
// parent's children directory, in the same durable write as its first
// bytes, so the index can neither lag behind the transcript nor survive
// it. With scan false only files of that name are looked at: one Lstat
// per session of cwd and one header per file found, never a transcript's
// body and never another child's file. A name can go stale (a transcript
// moved, renamed or replaced by another child's): a named file whose
// header claims another id is not a holder. With scan true every child
// file of every session of cwd is read up to its header (at most 64 KiB
// each), which finds a transcript under any name: the bounded lookup a
// caller falls back on when the names find no holder. Neither reads past
// a header, and neither follows a symlink.
func ChildHolders(inkHome, cwd, childID string, scan bool) ([]Holder, error) {
	if !ValidID(childID) {
		return nil, badChildID(childID)
	}
	mains, err := mainTranscripts(inkHome, cwd)
	if err != nil {
		return nil, err
	}
	var out []Holder
	for _, main := range mains {
		kids := ChildrenDir(main)
		var holds bool
		if scan {
			holds = scanHolds(kids, childID)
		} else {
			holds = namedHolds(filepath.Join(kids, childID+".jsonl"), childID)
		}
		if !holds {
			continue
		}
		h, err := ReadHeader(main)
		if err != nil {
			continue // not a session a lookup can name (ListSessions lists it with its problem)
		}
		out = append(out, Holder{Path: main, Header: h})
	}
	slices.SortFunc(out, func(a, b Holder) int {
		if c := b.Header.CreatedAt.Compare(a.Header.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.Header.ID, a.Header.ID)
	})
	return out, nil
}

// namedHolds reports whether the file at path, named after childID, is
// one FindChild answers for: its header claims childID, or it cannot be
// read safely. A missing file, one that never started, and one whose
// header names another child do not hold it.
func namedHolds(path, childID string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return true // FindChild refuses it as malformed
	}
	h, err := ReadHeader(path)
	switch {
	case errors.Is(err, ErrNotStarted):
		return false
	case err != nil && !errors.Is(err, ErrInvalidLaunch):
		return true // malformed: FindChild says so
	}
	return h.ID == childID
}

// scanHolds reports whether the children directory dir holds childID in
// a form FindChild answers for, reading headers only.
func scanHolds(dir, childID string) bool {
	files, err := scanChildren(dir)
	if err != nil {
		return false
	}
	for _, c := range files {
		usable := c.err == nil || errors.Is(c.err, ErrInvalidLaunch)
		if c.header.ID == childID && !c.symlink && usable {
			return true
		}
		if c.name == childID+".jsonl" && !usable {
			return true
		}
	}
	return false
}

// badChildID is the refusal of a child id outside the id alphabet.
func badChildID(childID string) *LookupError {
	return &LookupError{Code: CodeBadID, Message: fmt.Sprintf(
		"cannot resume child %q: not a child id (ids are 1-64 characters of a-z, 0-9 and '-', as printed in \"child session id: …\")", childID)}
}
