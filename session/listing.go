package session

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ChildSummary describes one file in a session's children directory.
type ChildSummary struct {
	// ID is the header id ("" when the header could not be read).
	ID   string
	Path string
	// Agent is the profile name from the launch record ("" for none).
	Agent string
	// LastStatus is the status of the last attempt end entry, "unfinished"
	// when the last attempt has a start but no end, "" when none ran.
	LastStatus Status
	// Attempts counts the attempts started on the transcript.
	Attempts int
	// Problem says why the file cannot be resumed as this session's child
	// ("symlink", "malformed: …", "missing-launch", "invalid-launch: …",
	// "not-owned: …"); "" when none was found.
	Problem string
}

// SessionSummary describes one main transcript of a cwd.
type SessionSummary struct {
	ID        string
	Path      string
	CreatedAt time.Time
	// ModTime is the file's modification time: when it was last written.
	ModTime time.Time
	// Children counts the files in the session's children directory.
	Children int
	// LastStatus is as in ChildSummary.
	LastStatus Status
	// FirstPrompt is the start of the first user message, on one line.
	FirstPrompt string
	// Problem says why the transcript could not be read ("" when fine).
	Problem string
}

// ListChildren lists the transcripts in mainPath's children directory,
// sorted by id then path, with each child's last status and any problem
// that would stop a resume. Symlinks and unreadable files are listed with
// their Problem, not followed. A missing directory is an empty list.
func ListChildren(mainPath string) ([]ChildSummary, error) {
	files, err := scanChildren(ChildrenDir(mainPath))
	if err != nil {
		return nil, err
	}
	parentID := ""
	if h, err := ReadHeader(mainPath); err == nil {
		parentID = h.ID
	}
	out := make([]ChildSummary, 0, len(files))
	for _, c := range files {
		s := ChildSummary{ID: c.header.ID, Path: c.path, Problem: c.problem()}
		if c.header.Launch != nil && c.header.Launch.Agent != nil {
			s.Agent = c.header.Launch.Agent.Name
		}
		if s.Problem == "" && parentID != "" {
			s.Problem = ownership(c.header, parentID)
		}
		if c.err == nil || errors.Is(c.err, ErrInvalidLaunch) {
			if sum, err := summarise(c.path); err == nil {
				s.LastStatus, s.Attempts = sum.lastStatus, sum.attempts
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ChildSummary) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

// mainTranscripts returns the paths of the main transcripts started in
// cwd, in directory order; no sessions directory is none.
func mainTranscripts(inkHome, cwd string) ([]string, error) {
	dir := SessionsDir(inkHome, cwd)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".jsonl") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// ListSessions lists the main transcripts started in cwd, newest first (by
// creation time, then id). A transcript that cannot be read is listed with
// its Problem. No sessions directory is an empty list.
func ListSessions(inkHome, cwd string) ([]SessionSummary, error) {
	paths, err := mainTranscripts(inkHome, cwd)
	if err != nil {
		return nil, err
	}
	var out []SessionSummary
	for _, path := range paths {
		s := SessionSummary{Path: path}
		if fi, err := os.Lstat(path); err == nil {
			s.ModTime = fi.ModTime()
		}
		h, err := ReadHeader(path)
		if errors.Is(err, ErrNotStarted) {
			continue // never started: not a session
		}
		if err != nil {
			s.Problem = err.Error()
		} else {
			s.ID, s.CreatedAt = h.ID, h.CreatedAt
			if sum, err := summarise(path); err == nil {
				s.LastStatus, s.FirstPrompt = sum.lastStatus, sum.firstPrompt
			}
		}
		if kids, err := os.ReadDir(ChildrenDir(path)); err == nil {
			for _, k := range kids {
				if strings.HasSuffix(k.Name(), ".jsonl") && !k.IsDir() {
					if fi, err := k.Info(); err == nil && fi.Size() > 0 { // an empty one never started
						s.Children++
					}
				}
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b SessionSummary) int {
		at, bt := a.CreatedAt, b.CreatedAt
		if at.IsZero() {
			at = a.ModTime
		}
		if bt.IsZero() {
			bt = b.ModTime
		}
		if c := bt.Compare(at); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, nil
}

// childFile is one *.jsonl file of a children directory.
type childFile struct {
	name   string
	path   string
	header Header
	// err is why the header could not be read; it wraps ErrInvalidLaunch
	// when only the launch record is bad (header then holds the rest).
	err     error
	symlink bool
}

// problem words why the file cannot be resumed, from its header alone.
func (c childFile) problem() string {
	switch {
	case c.symlink:
		return "symlink"
	case errors.Is(c.err, ErrInvalidLaunch):
		return "invalid-launch: " + c.err.Error()
	case c.err != nil:
		return "malformed: " + c.err.Error()
	case c.header.Launch == nil:
		return "missing-launch"
	}
	return ""
}

// ownership says why a child with header h does not belong to parentID.
func ownership(h Header, parentID string) string {
	if h.Parent != parentID {
		return fmt.Sprintf("not-owned: its header names parent %q", h.Parent)
	}
	if h.Launch != nil && h.Launch.ParentSessionID != parentID {
		return fmt.Sprintf("not-owned: its launch record names parent %q", h.Launch.ParentSessionID)
	}
	return ""
}

// scanChildren reads the header of every *.jsonl entry of dir, sorted by
// name, without following symlinks. A missing directory yields nothing; a
// directory that is a symlink or not a directory is an error.
func scanChildren(dir string) ([]childFile, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list children: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("list children: %s is not a directory (a symlink is not followed); move it away", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list children: %w", err)
	}
	var out []childFile
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		c := childFile{name: e.Name(), path: filepath.Join(dir, e.Name())}
		if e.Type()&fs.ModeSymlink != 0 {
			c.symlink = true
			c.err = fmt.Errorf("%s is a symlink; ink does not follow it: %w", c.path, ErrNotRegular)
		} else {
			c.header, c.err = ReadHeader(c.path)
			if errors.Is(c.err, ErrNotStarted) {
				continue // never started: not a child
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// transcriptSummary is what summarise finds.
type transcriptSummary struct {
	attempts    int
	lastStatus  Status
	firstPrompt string
}

// maxPromptRunes bounds SessionSummary.FirstPrompt.
const maxPromptRunes = 200

var (
	attemptPrefix = []byte(`{"type":"attempt"`)
	messagePrefix = []byte(`{"type":"message"`)
	userMarker    = []byte(`"message":{"role":"user"`)
)

// summarise streams a transcript and decodes only its attempt entries and
// its first user message, relying on the field order this package writes.
// Lines that do not decode (a torn tail) are ignored.
func summarise(path string) (transcriptSummary, error) {
	var s transcriptSummary
	f, _, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return s, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for lineNo := 1; ; lineNo++ {
		frag, err := r.ReadSlice('\n')
		head := frag[:min(len(frag), 160)]
		need := lineNo > 1 && (bytes.HasPrefix(frag, attemptPrefix) ||
			s.firstPrompt == "" && bytes.HasPrefix(frag, messagePrefix) && bytes.Contains(head, userMarker))
		var line []byte
		if need {
			line = append(line, frag...)
		}
		for errors.Is(err, bufio.ErrBufferFull) {
			frag, err = r.ReadSlice('\n')
			if need {
				line = append(line, frag...)
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return s, err
		}
		if need {
			if e, derr := decodeEntry(line); derr == nil {
				switch {
				case e.Attempt != nil && e.Attempt.Phase == PhaseStart:
					s.attempts++
					s.lastStatus = StatusUnfinished
				case e.Attempt != nil:
					s.lastStatus = e.Attempt.Status
				case e.Message != nil:
					s.firstPrompt = oneLine(e.Message.Text(), maxPromptRunes)
				}
			}
		}
		if err != nil {
			return s, nil
		}
	}
}

// oneLine folds whitespace runs to single spaces and cuts s to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
