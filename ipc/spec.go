package ipc

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/secret"
	"github.com/inkdev/ink/session"
)

// AttemptSpec is everything one attempt needs. The orchestrator sends it as JSON in
// the Run message; the worker trusts nothing else from its environment. It is defined here, on the wire, because both
// sides speak it.
type AttemptSpec struct {
	InkHome    string `json:"inkHome"`
	Transcript string `json:"transcript"` // absolute path of the transcript this attempt writes
	// Create, when set, is the header of a transcript that does not exist
	// yet. When nil the transcript exists and this attempt continues it.
	Create *session.Header `json:"create,omitempty"`
	// ExpectHeader, when continuing, is the header the orchestrator
	// validated; the worker refuses if the file's header differs once it
	// holds the lease.
	ExpectHeader json.RawMessage `json:"expectHeader,omitempty"`
	// Repair allows repairing a crash tail (torn final line, tool calls
	// without results) before running.
	Repair bool `json:"repair,omitempty"`
	// Answers are results for task calls left without a result in the
	// transcript, found by the orchestrator in the children's own
	// transcripts; they are appended before the crash-tail repair.
	Answers []Answer `json:"answers,omitempty"`

	AttemptID string        `json:"attemptId"`
	SessionID string        `json:"sessionId"`
	Agent     string        `json:"agent,omitempty"` // profile name ("" = none)
	Label     string        `json:"label"`           // display label, e.g. "main" or "main/2"
	Binding   model.Binding `json:"binding"`
	System    string        `json:"system"`
	Tools     []string      `json:"tools"` // the pool; tools outside it do not exist here
	Cwd       string        `json:"cwd"`
	Root      string        `json:"root"` // confinement root of the file tools
	Prompt    string        `json:"prompt"`
	Depth     int           `json:"depth"`
	MaxTokens int           `json:"maxTokens,omitempty"`
	Thinking  string        `json:"thinking,omitempty"`

	// Sandbox is the bash sandbox mode (package sandbox) the supervisor
	// settled on; SandboxExplicit says the user asked for it by name, and
	// Writable lists extra directories bash may write.
	Sandbox         string   `json:"sandbox,omitempty"`
	SandboxExplicit bool     `json:"sandboxExplicit,omitempty"`
	Writable        []string `json:"writable,omitempty"`
	// WorktreeGitDir, for a worktree child, is its worktree's private git
	// directory as ink recorded it: bash may write that and the objects,
	// refs and logs of the worktree's own git directory, and nothing of
	// the user's repository.
	WorktreeGitDir string `json:"worktreeGitDir,omitempty"`
	// Network lets bash reach the network; NetworkExplicit says its cut
	// was asked for by name. AllowGitWrites lets bash write the
	// checkout's git directory but for config and hooks; Namespaces is how
	// bash gets the mount namespace that keeps that git state read-only
	// (sandbox.Namespaces; "" for none).
	Network         bool   `json:"network,omitempty"`
	NetworkExplicit bool   `json:"networkExplicit,omitempty"`
	AllowGitWrites  bool   `json:"allowGitWrites,omitempty"`
	Namespaces      string `json:"namespaces,omitempty"`

	// MaxTurns caps the attempt's model turns (0: none); ContextWindow
	// overrides the model's context window in tokens (0: the model's own).
	// Budget is the tree's token budget (0: none) and BudgetRemaining what
	// was left of it at launch; Budget messages keep it current.
	MaxTurns        int   `json:"maxTurns,omitempty"`
	ContextWindow   int64 `json:"contextWindow,omitempty"`
	Budget          int64 `json:"budget,omitempty"`
	BudgetRemaining int64 `json:"budgetRemaining,omitempty"`

	MaxParallel       int           `json:"maxParallel,omitempty"`
	HeartbeatInterval time.Duration `json:"heartbeatInterval,omitempty"`

	// Credentials are the secret variables the worker needs to open its
	// binding (its provider's key, nothing for the script model). They
	// travel only here, over the worker's socket: a worker's environment
	// holds no key. Never log or store a spec.
	Credentials map[string]string `json:"credentials,omitempty"`
	// Settings are the provider variables the worker needs that are not
	// secret and not resolved into the binding: the stall limits
	// (INK_RESPONSE_HEADER_TIMEOUT, INK_STREAM_IDLE_TIMEOUT) as the host
	// has them set. Like Credentials they travel only here, since a
	// worker's environment holds no provider variable.
	Settings map[string]string `json:"settings,omitempty"`
	// Redact fingerprints every other configured secret, so that the
	// worker redacts their exact occurrences without holding them.
	Redact []secret.Fingerprint `json:"redact,omitempty"`

	// Remote, when set, runs the attempt on a worker that shares no disk
	// with its host (protocol 5): the host holds the lease, opened (or
	// repaired) the transcript and wrote the start entry and the prompt;
	// the worker writes every later entry through Append.
	Remote *RemoteSpec `json:"remote,omitempty"`
}

// RemoteSpec is what a remote worker gets in place of the transcript and
// the lease it cannot open.
type RemoteSpec struct {
	// Epoch is the lease's epoch the host holds for the attempt; every
	// Append names it.
	Epoch int64 `json:"epoch"`
	// History is what the model sees of the transcript, start and prompt
	// included, with the entry ids a compaction names.
	History []session.ViewEntry `json:"history"`
	// Reserved are the call ids of the transcript's compacted part: new
	// calls must not reuse them.
	Reserved []string `json:"reserved,omitempty"`
	// Lifetime sums the transcript's attempts, this one's start included,
	// of which LifetimeEnded recorded their end.
	Lifetime      session.Lifetime `json:"lifetime"`
	LifetimeEnded int              `json:"lifetimeEnded"`
	// Workspace is the worktree the child works in; its baseline follows
	// Run in WorkspaceChunks.
	Workspace *RemoteWorkspace `json:"workspace,omitempty"`
}

// RemoteWorkspace names a remote child's worktree: the worker makes a
// repository of its own at Path (the worktree's absolute path on the
// host), from the baseline commit Baseline, on branch Branch.
type RemoteWorkspace struct {
	Path     string `json:"path"`
	Baseline string `json:"baseline"`
	Branch   string `json:"branch"`
}

// Validate reports the first missing or malformed field of s.
func (s *AttemptSpec) Validate() error {
	switch {
	case s.Remote != nil && (s.InkHome != "" || s.Transcript != ""):
		return fmt.Errorf("spec: a remote attempt names no path of its host (inkHome %q, transcript %q)", s.InkHome, s.Transcript)
	case s.Remote == nil && !filepath.IsAbs(s.InkHome):
		return fmt.Errorf("spec: inkHome %q is not absolute", s.InkHome)
	case s.Remote == nil && !filepath.IsAbs(s.Transcript):
		return fmt.Errorf("spec: transcript %q is not absolute", s.Transcript)
	case !filepath.IsAbs(s.Cwd) || !filepath.IsAbs(s.Root):
		return fmt.Errorf("spec: cwd %q and root %q must be absolute", s.Cwd, s.Root)
	case s.AttemptID == "" || s.SessionID == "":
		return fmt.Errorf("spec: attemptId and sessionId are required")
	case s.Binding.Provider == "" || s.Binding.Model == "":
		return fmt.Errorf("spec: binding is required")
	}
	return nil
}

// HostLost is the reason recorded when the orchestrator disappears.
const HostLost = "host lost"

// WorkerLost begins the reason the supervisor records for an attempt whose
// worker stopped sending heartbeats ("worker lost: no heartbeat for 4s"):
// the supervisor stopped the worker and wrote the attempt's end itself.
const WorkerLost = "worker lost"

// Answer is one result for a task call left without a result, with the
// TaskRecord to store beside it (model.Message does not carry its record in
// JSON, so the record travels here).
type Answer struct {
	Message    model.Message   `json:"message"`
	TaskRecord json.RawMessage `json:"taskRecord,omitempty"`
}

// WithRecord returns the answer as a message carrying its TaskRecord.
func (a Answer) WithRecord() model.Message {
	m := a.Message
	m.TaskRecord = a.TaskRecord
	return m
}
