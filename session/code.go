package session

// Code says in one word why ink refused to run or continue a transcript: a
// worker's refusal of an attempt (ipc.Outcome with StatusRefused), a
// lookup's (LookupError) and each problem of a resume check. It travels
// beside its message, never inside it; a message is rendered "code:
// message" only where a user reads it. Decoding a refusal code a worker
// cannot send is an error (see RefusalCode).
type Code string

// Refusal codes of a child lookup (docs/architecture.md, "Resume", step 1),
// plus bad-id for an id that is not in the id alphabet.
const (
	CodeNotFound      Code = "not-found"
	CodeAmbiguous     Code = "ambiguous"
	CodeNotOwned      Code = "not-owned"
	CodeMalformed     Code = "malformed"
	CodeMissingLaunch Code = "missing-launch"
	CodeInvalidLaunch Code = "invalid-launch"
	CodeBadID         Code = "bad-id"
)

// Refusal codes a worker answers an attempt with (besides CodeMalformed: a
// transcript it cannot read, continue or repair, or an unusable lease file).
const (
	// CodeStillRunning: another process holds the transcript's lease.
	CodeStillRunning Code = "still-running"
	// CodeHeaderChanged: the transcript's header differs from the one the
	// supervisor validated.
	CodeHeaderChanged Code = "header-changed"
	// CodeCreateFailed: a new child's transcript could not be created.
	CodeCreateFailed Code = "create-failed"
)

// RefusalCodes lists the codes a worker may refuse an attempt with.
var RefusalCodes = []Code{CodeStillRunning, CodeMalformed, CodeHeaderChanged, CodeCreateFailed}

// RefusalCode reports whether a worker may refuse an attempt with c.
func (c Code) RefusalCode() bool {
	switch c {
	case CodeStillRunning, CodeMalformed, CodeHeaderChanged, CodeCreateFailed:
		return true
	}
	return false
}
