package agents

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/inkdev/ink/model"
)

// MaxProfileBytes is the profile-file bound: a profile file larger than
// this is skipped with a problem that names the bound, without being read
// past it. A profile is a short Markdown file; the bound keeps a huge file
// in an agents directory (a log, a data dump, a hostile repository's) from
// taking every ink process that loads profiles to gigabytes.
const MaxProfileBytes = 1 << 20

// readProfileFile reads the file at path, at most MaxProfileBytes of it.
// A larger file is a Problem (or errNotAProfile when it is a collection's
// README and the like, which are skipped silently at any size).
func readProfileFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Problem{Path: path, Reason: fmt.Sprintf("cannot read the file: %v", unwrapPathError(err))}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxProfileBytes+1))
	if err != nil {
		return nil, Problem{Path: path, Reason: fmt.Sprintf("cannot read the file: %v", unwrapPathError(err))}
	}
	if len(data) <= MaxProfileBytes {
		return data, nil
	}
	if collectionDoc(path, data) {
		return nil, errNotAProfile
	}
	size := int64(len(data))
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	return nil, Problem{Path: path, Reason: fmt.Sprintf("the file is %s, over ink's profile-file bound of %s, so ink skipped it; a profile is a short Markdown file: move long reference text to a file the agent reads",
		model.SizeString(size), model.SizeString(MaxProfileBytes))}
}

// asProblem returns err as a Problem of path.
func asProblem(path string, err error) Problem {
	var p Problem
	if errors.As(err, &p) {
		return p
	}
	return Problem{Path: path, Reason: err.Error()}
}
