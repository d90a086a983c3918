package agents

import "fmt"

// Problem is one reason a profile file could not be used: the file, the
// 1-based line the reason points at (0 when it concerns the whole file, such
// as an unreadable one) and the reason itself.
//
// Problem is also the error type Parse returns, so callers may recover the
// parts with errors.As(err, &p) where p is a Problem.
type Problem struct {
	Path   string
	Line   int
	Reason string
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
