package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/inkdev/ink/model"
)

// LaunchRecord is stored in a child's header (`launch`): everything a resume
// checks to be sure it continues the same child in the same place. Unknown
// fields are tolerated on read.
type LaunchRecord struct {
	Version         int    `json:"version"`
	ParentSessionID string `json:"parentSessionId"`
	ChildID         string `json:"childId"`
	InkVersion      string `json:"inkVersion"`
	// Agent is the profile the child ran; nil for a child without one.
	Agent   *AgentRef     `json:"agent,omitempty"`
	Binding model.Binding `json:"binding"`
	// Cwd is the child's absolute working directory.
	Cwd string `json:"cwd"`
	// Worktree is set when the child runs in its own worktree.
	Worktree *WorktreeRef `json:"worktree,omitempty"`
	// Tools are the names of the child's tools, sorted, without duplicates.
	Tools    []string  `json:"tools"`
	System   SystemRef `json:"system"`
	Depth    int       `json:"depth"`
	MaxDepth int       `json:"maxDepth"`
	// Sandbox is how the child's bash commands are confined. Records
	// written before bash had a sandbox have none.
	Sandbox *SandboxRef `json:"sandbox,omitempty"`
	// Thinking is the thinking level the child's requests carry (its
	// profile's, else its parent's); "" for none.
	Thinking string `json:"thinking,omitempty"`
}

// SandboxRef records the bash sandbox a child was launched under: the mode
// asked for (or defaulted to), the extra directories it may write, whether
// it was granted the network, and whether it may write the checkout's git
// directory (--allow-git-writes).
type SandboxRef struct {
	Mode     string   `json:"mode"`
	Writable []string `json:"writable,omitempty"`
	// Network is nil in records written before bash could be cut off the
	// network.
	Network   *bool `json:"network,omitempty"`
	GitWrites bool  `json:"gitWrites,omitempty"`
}

// AgentRef names the profile a child was launched with.
type AgentRef struct {
	Name string `json:"name"`
	// Source is the absolute path of the profile file.
	Source string `json:"source"`
	// RoleSHA256 is the hex sha256 of the profile body.
	RoleSHA256 string `json:"roleSha256"`
}

// WorktreeRef records a child's worktree at launch.
type WorktreeRef struct {
	RepoRoot string `json:"repoRoot"`
	// Baseline is the commit the worktree was created at.
	Baseline string `json:"baseline"`
	Path     string `json:"path"`
	Branch   string `json:"branch"`
	// CreationReflog is the branch's reflog line written by its creation.
	CreationReflog string `json:"creationReflog,omitempty"`
}

// SystemRef fingerprints a child's system prompt and the files that went in.
type SystemRef struct {
	// SHA256 is SystemFingerprint of the assembled system prompt.
	SHA256 string    `json:"sha256"`
	Files  []FileRef `json:"files,omitempty"`
}

// FileRef is a prompt or context file and the hex sha256 of its content.
type FileRef struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// ParseLaunchRecord decodes and validates a launch record (see Validate).
// Unknown fields are ignored.
func ParseLaunchRecord(raw []byte) (LaunchRecord, error) {
	var l LaunchRecord
	if err := strictDecode(raw, &l); err != nil {
		return LaunchRecord{}, fmt.Errorf("launch record: %w", err)
	}
	if err := l.Validate(); err != nil {
		return LaunchRecord{}, err
	}
	return l, nil
}

// Validate checks l: version 1, valid parent and child ids, an ink version,
// a valid binding, absolute paths, 64-digit lowercase hex hashes, sorted
// unique tool names, and 1 <= depth <= maxDepth.
func (l LaunchRecord) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if l.Version != 1 {
		bad("version %d is not supported (want 1)", l.Version)
	}
	if !ValidID(l.ParentSessionID) {
		bad("parentSessionId %q is not a valid id", l.ParentSessionID)
	}
	if !ValidID(l.ChildID) {
		bad("childId %q is not a valid id", l.ChildID)
	}
	if strings.TrimSpace(l.InkVersion) == "" {
		bad("inkVersion is empty")
	}
	if l.Agent != nil {
		if strings.TrimSpace(l.Agent.Name) == "" {
			bad("agent name is empty")
		}
		if !filepath.IsAbs(l.Agent.Source) {
			bad("agent source %q is not an absolute path", l.Agent.Source)
		}
		if !isHash(l.Agent.RoleSHA256) {
			bad("agent roleSha256 %q is not a sha256 hex digest", l.Agent.RoleSHA256)
		}
	}
	if err := validateBinding(l.Binding); err != nil {
		bad("%v", err)
	}
	if !filepath.IsAbs(l.Cwd) {
		bad("cwd %q is not an absolute path", l.Cwd)
	}
	if w := l.Worktree; w != nil {
		if !filepath.IsAbs(w.RepoRoot) {
			bad("worktree repoRoot %q is not an absolute path", w.RepoRoot)
		}
		if !filepath.IsAbs(w.Path) {
			bad("worktree path %q is not an absolute path", w.Path)
		}
		if !isCommit(w.Baseline) {
			bad("worktree baseline %q is not a commit id", w.Baseline)
		}
		if w.Branch == "" || strings.ContainsAny(w.Branch, " \t\n~^:?*[\\") || strings.Contains(w.Branch, "..") {
			bad("worktree branch %q is not a valid branch name", w.Branch)
		}
	}
	if err := validateToolNames(l.Tools, true); err != nil {
		bad("%v", err)
	}
	if !isHash(l.System.SHA256) {
		bad("system sha256 %q is not a sha256 hex digest", l.System.SHA256)
	}
	for _, f := range l.System.Files {
		if !filepath.IsAbs(f.Path) {
			bad("system file %q is not an absolute path", f.Path)
		}
		if !isHash(f.SHA256) {
			bad("system file %s: sha256 %q is not a sha256 hex digest", f.Path, f.SHA256)
		}
	}
	if l.Depth < 1 || l.MaxDepth < l.Depth {
		bad("depth %d / maxDepth %d: want 1 <= depth <= maxDepth", l.Depth, l.MaxDepth)
	}
	if len(errs) > 0 {
		return fmt.Errorf("launch record: %w", errors.Join(errs...))
	}
	return nil
}

// Encode sorts a copy of l's tools, validates it and returns its JSON.
func (l LaunchRecord) Encode() (json.RawMessage, error) {
	l.Tools = sortedCopy(l.Tools)
	if err := l.Validate(); err != nil {
		return nil, err
	}
	line, err := marshalLine(l)
	if err != nil {
		return nil, fmt.Errorf("launch record: %w", err)
	}
	return json.RawMessage(bytes.TrimSuffix(line, []byte("\n"))), nil
}

// strictDecode decodes one JSON value into v, refusing trailing data.
func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// validateBinding checks a model binding names a known provider and a model.
func validateBinding(b model.Binding) error {
	if !slices.Contains(model.KnownProviders, b.Provider) {
		return fmt.Errorf("binding provider %q is not one of %s", b.Provider, strings.Join(model.KnownProviders, ", "))
	}
	if strings.TrimSpace(b.Model) == "" {
		return fmt.Errorf("binding %s has no model", b.Provider)
	}
	if b.BaseURL != "" && !strings.HasPrefix(b.BaseURL, "http://") && !strings.HasPrefix(b.BaseURL, "https://") {
		return fmt.Errorf("binding baseURL %q is not an http(s) URL", b.BaseURL)
	}
	return nil
}

// validateToolNames checks tool names are non-empty and unique, and sorted
// when sorted is set.
func validateToolNames(tools []string, sorted bool) error {
	for i, t := range tools {
		if strings.TrimSpace(t) == "" {
			return errors.New("tools holds an empty name")
		}
		if i > 0 && sorted && tools[i-1] >= t {
			return fmt.Errorf("tools are not sorted and unique (%q before %q)", tools[i-1], t)
		}
	}
	if !sorted {
		seen := map[string]bool{}
		for _, t := range tools {
			if seen[t] {
				return fmt.Errorf("tools lists %q twice", t)
			}
			seen[t] = true
		}
	}
	return nil
}

// sortedCopy returns a sorted copy of s (nil stays nil).
func sortedCopy(s []string) []string {
	if s == nil {
		return nil
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// isHash reports whether s is a lowercase hex sha256 digest.
func isHash(s string) bool { return len(s) == 64 && isLowerHex(s) }

// isCommit reports whether s is a full git object id (sha1 or sha256).
func isCommit(s string) bool { return (len(s) == 40 || len(s) == 64) && isLowerHex(s) }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
