package worktree

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
)

// A workspace travels as a git bundle (format v2, as `git bundle create`
// writes it, readable by `git bundle verify` and `list-heads`): a text
// header naming the commits the receiver must already have
// (prerequisites, "-<sha>") and the refs the bundle carries ("<sha>
// <refname>"), a blank line, then a pack. ink writes and reads the header
// itself, so that the pack goes straight to `git index-pack` and a bundle
// never touches a transport: ink's git never talks to a remote.
//
// Two kinds travel: the workspace a supervisor ships out (Pack: refs
// refBaseline, refSnapshot, the branch, and refIncludes when asked) and the
// snapshot a worker sends back (Snapshot: refSnapshot alone).

const bundleSignature = "# v2 git bundle\n"

// The refs a workspace bundle carries besides the branch.
const (
	refBaseline = "refs/ink/baseline"
	refSnapshot = "refs/ink/snapshot"
	refIncludes = "refs/ink/includes"
	// refApplied, in a worktree's own git directory on the supervisor's
	// side, is the last snapshot whose tree the worktree holds: the one
	// Pack shipped or ApplySnapshot applied.
	refApplied = "refs/ink/applied"
)

// maxBundleHeader bounds the header of a bundle ink reads: a handful of
// lines, each a sha and a short ref name or comment.
const (
	maxBundleHeader = 64 << 10
	maxBundleLines  = 64
)

// bundleHeader is what the header of a bundle says.
type bundleHeader struct {
	prereqs []string
	// refs maps a ref name to its sha, in order of names.
	refs map[string]string
}

var shaPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`) })

// writeBundleHeader writes the header of a bundle that carries refs (name
// → sha, written in the order of names) and needs prereqs.
func writeBundleHeader(w io.Writer, prereqs []string, names []string, refs map[string]string) error {
	var b strings.Builder
	b.WriteString(bundleSignature)
	for _, p := range prereqs {
		if p != "" {
			b.WriteString("-" + p + "\n")
		}
	}
	for _, n := range names {
		b.WriteString(refs[n] + " " + n + "\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// errHeader is the cause of a header that is not one ink reads.
var errHeader = errors.New("not a workspace bundle")

// readBundleHeader reads a bundle's header from br, at most
// maxBundleHeader bytes, and leaves br at the start of the pack. Every sha
// must be a full hex object name and every ref name one of want (a ref
// outside want, or a ref given twice, is refused); the caller checks which
// refs it needs.
func readBundleHeader(br *bufio.Reader, want func(ref string) bool) (bundleHeader, error) {
	h := bundleHeader{refs: map[string]string{}}
	read := 0
	for n := 0; ; n++ {
		if n > maxBundleLines {
			return h, fmt.Errorf("%w: its header has more than %d lines", errHeader, maxBundleLines)
		}
		line, err := br.ReadSlice('\n')
		read += len(line)
		if errors.Is(err, bufio.ErrBufferFull) || read > maxBundleHeader {
			return h, fmt.Errorf("%w: its header is longer than %d bytes", errHeader, maxBundleHeader)
		}
		if err != nil {
			return h, fmt.Errorf("%w: its header ends early (%v)", errHeader, err)
		}
		l := strings.TrimSuffix(string(line), "\n")
		switch {
		case n == 0:
			if l+"\n" != bundleSignature {
				return h, fmt.Errorf("%w: it does not start with %q", errHeader, strings.TrimSpace(bundleSignature))
			}
		case l == "":
			return h, nil
		case strings.HasPrefix(l, "-"):
			sha, _, _ := strings.Cut(l[1:], " ")
			if !shaPattern().MatchString(sha) {
				return h, fmt.Errorf("%w: prerequisite %q is not an object name", errHeader, sha)
			}
			h.prereqs = append(h.prereqs, sha)
		default:
			sha, ref, ok := strings.Cut(l, " ")
			if !ok || !shaPattern().MatchString(sha) {
				return h, fmt.Errorf("%w: header line %q is neither a prerequisite nor a ref", errHeader, l)
			}
			if !want(ref) {
				return h, fmt.Errorf("%w: it carries the ref %q, which ink does not expect there", errHeader, ref)
			}
			if _, dup := h.refs[ref]; dup {
				return h, fmt.Errorf("%w: it names the ref %q twice", errHeader, ref)
			}
			h.refs[ref] = sha
		}
	}
}

// packObjects runs `git pack-objects --stdout` in the repository at c with
// args, fed the object or revision list that feed writes, and copies the
// pack to w. It returns the number of bytes written.
func packObjects(ctx context.Context, c gitCall, args []string, feed func(io.Writer) error, w io.Writer) (int64, error) {
	pr, pw := io.Pipe()
	fed := make(chan error, 1)
	go func() {
		err := feed(pw)
		pw.CloseWithError(err)
		fed <- err
	}()
	cw := &countingWriter{w: w}
	c.args = append([]string{"pack-objects", "--stdout", "-q"}, args...)
	c.stdin, c.stdout = pr, cw
	_, err := c.exec(ctx)
	pr.CloseWithError(errors.New("pack-objects has ended"))
	ferr := <-fed
	if err != nil {
		return cw.n, err
	}
	if ferr != nil {
		return cw.n, ferr
	}
	return cw.n, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// limitedReader reads at most max bytes from r; reading past them is
// errTooLarge, and over reports it.
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

var errTooLarge = errors.New("larger than the bound")

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more than allowed tells a stream that ends exactly
		// at the bound from one that goes on.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			l.over = true
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
