package agents

import "fmt"

// Problem is one thing wrong with a profile file (or a profile directory,
// or the model alias file): the file, the 1-based line the reason points
// at (0 when it concerns the whole file, such as an unreadable one) and the
// reason itself.
//
// An error (Warning false) means the file is not used; a warning means it
// is used as ink read it, with something dropped or ignored (a tool ink
// lacks, an unknown field, a duplicate name). Problem is also the error
// type Parse returns, so callers may recover the parts with errors.As(err,
// &p) where p is a Problem.
type Problem struct {
	Path   string
	Line   int
	Reason string
	// Warning marks a problem that does not stop the file from loading.
	Warning bool
	// Agent is the name the file declares, when it could be read even
	// though the file was skipped; "" otherwise. It lets `unknown agent X`
	// say that X's file was skipped and why.
	Agent string
}

// Error renders the problem as "PATH:LINE: reason" (or "PATH: reason" when
// Line is 0), the form editors and terminals turn into links.
func (p Problem) Error() string {
	if p.Line <= 0 {
		return fmt.Sprintf("%s: %s", p.Path, p.Reason)
	}
	return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Reason)
}

// String is the same as Error.
func (p Problem) String() string { return p.Error() }

// Severity is "warning" or "error", as `ink agents check --json` prints it.
func (p Problem) Severity() string {
	if p.Warning {
		return "warning"
	}
	return "error"
}
