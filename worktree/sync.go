package worktree

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Sync brings the child's commits back into the user's repository: the
// objects of the worktree's branch that the repository lacks are copied
// from the worktree's own git directory into the repository's object store
// (checked as they go in, and for completeness), and refs/heads/<branch>
// there is set to the branch's tip in the worktree. It runs under the
// repository lock, with ink's hardened git, and never runs git through the
// worktree's .git link; a worktree ink cannot trust is an *UntrustedError
// and nothing is copied. The orchestrator calls it after every attempt
// (Settle does), Merge and RemoveForce before they decide. Safe for
// concurrent use.
func Sync(ctx context.Context, rec Record) error {
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		return fmt.Errorf("bring back the commits of %s: %w", rec.Branch, err)
	}
	defer lk.unlock()
	_, err = syncLocked(ctx, lk, rec)
	return err
}

// syncLocked is Sync under the caller's lock; it returns the branch's tip.
func syncLocked(ctx context.Context, lk *repoLock, rec Record) (string, error) {
	l, err := openLayout(ctx, rec)
	if err != nil {
		return "", err
	}
	if !l.sealed {
		// A worktree made by an earlier ink writes the repository's own
		// branch.
		return branchTip(ctx, rec), nil
	}
	tip, err := l.branchTip(ctx, rec.Branch)
	if err != nil {
		return "", fmt.Errorf("bring back the commits of %s: %w", rec.Branch, err)
	}
	have := branchTip(ctx, rec)
	if tip == have {
		return tip, nil
	}
	if err := copyObjects(ctx, lk, l, rec.RepoRoot, []string{tip}, []string{have, rec.Baseline}); err != nil {
		return "", fmt.Errorf("bring back the commits of %s: %w", rec.Branch, err)
	}
	args := []string{"update-ref", "-m", "ink: the child's commits, from its worktree", "refs/heads/" + rec.Branch, tip, have}
	if _, err := lk.run(ctx, rec.RepoRoot, args...); err != nil {
		return "", fmt.Errorf("bring back the commits of %s: %w", rec.Branch, err)
	}
	return tip, nil
}

// branchTip is the commit branch points at in the worktree's git
// directory.
func (l *layout) branchTip(ctx context.Context, branch string) (string, error) {
	out, err := l.read(ctx, "rev-parse", "--verify", "-q", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("branch %s no longer exists in the worktree's git directory %s", branch, l.commonDir)
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// copyObjects copies every object reachable from tips and not from have
// that the worktree's git directory holds itself (not through its
// alternates) into the object store of the repository at root: git
// pack-objects there, git index-pack --strict here (every object is
// checked, and every object it names must exist). Then it checks that
// each tip is complete in the repository. Nothing is written when the
// repository has every object already.
func copyObjects(ctx context.Context, lk *repoLock, l *layout, root string, tips, have []string) error {
	var revs strings.Builder
	for _, t := range tips {
		revs.WriteString(t + "\n")
	}
	for _, h := range have {
		if h != "" {
			revs.WriteString("^" + h + "\n")
		}
	}
	pr, pw := io.Pipe()
	packed := make(chan error, 1)
	go func() {
		c := l.call("pack-objects", "--revs", "--local", "--stdout", "-q")
		c.stdin, c.stdout = strings.NewReader(revs.String()), pw
		_, err := c.exec(ctx)
		pw.CloseWithError(err)
		packed <- err
	}()
	// A pack starts "PACK", version, object count.
	head := make([]byte, 12)
	_, err := io.ReadFull(pr, head)
	if err != nil {
		pr.CloseWithError(err)
		if perr := <-packed; perr != nil {
			return fmt.Errorf("pack the worktree's objects: %w", perr)
		}
		return fmt.Errorf("pack the worktree's objects: %w", err)
	}
	if !bytes.Equal(head[:4], []byte("PACK")) {
		pr.CloseWithError(errors.New("not a pack"))
		<-packed
		return errors.New("pack the worktree's objects: git pack-objects wrote no pack")
	}
	if binary.BigEndian.Uint32(head[8:]) == 0 {
		_, _ = io.Copy(io.Discard, pr)
		if err := <-packed; err != nil {
			return fmt.Errorf("pack the worktree's objects: %w", err)
		}
	} else {
		idx := lk.call(gitCall{dir: root, stdin: io.MultiReader(bytes.NewReader(head), pr), args: []string{"index-pack", "--strict", "--stdin"}})
		_, err := idx.exec(ctx)
		pr.CloseWithError(errors.New("index-pack has ended"))
		perr := <-packed
		if err != nil {
			return fmt.Errorf("store the worktree's objects: %w", err)
		}
		if perr != nil {
			return fmt.Errorf("pack the worktree's objects: %w", perr)
		}
	}
	for _, t := range tips {
		if _, err := read(ctx, root, "rev-list", "--objects", "--quiet", t, "--not", "--all"); err != nil {
			return fmt.Errorf("commit %s is not complete in %s after the copy (the worktree's git directory lacks objects it names): %w", ShortSHA(t), root, err)
		}
	}
	return nil
}

// bringBack brings the commits of the worktree of rec into its repository
// (syncLocked), and commit too when it is not on the branch (a detached
// HEAD), so that a new worktree can start from it.
func bringBack(ctx context.Context, lk *repoLock, rec Record, commit string) error {
	tip, err := syncLocked(ctx, lk, rec)
	if err != nil {
		return err
	}
	l, err := openLayout(ctx, rec)
	if err != nil || !l.sealed || commit == tip {
		return err
	}
	return copyObjects(ctx, lk, l, rec.RepoRoot, []string{commit}, []string{tip})
}
