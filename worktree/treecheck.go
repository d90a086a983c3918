package worktree

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// A snapshot comes from a worker ink does not trust. Before ApplySnapshot
// writes any of it, the trees that reach disk (the snapshot's, written into
// the worktree, and the branch's, which `ink worktrees merge` brings into
// the user's checkout) are checked here, beyond what git's own checks of
// the received objects (index-pack --strict) refuse.

// treeEntry is one entry of `git ls-tree -r -l -z`.
type treeEntry struct {
	mode, sha string
	size      int64
}

// maxLinkTarget bounds a symlink's target (PATH_MAX).
const maxLinkTarget = 4095

// lsTree lists every file of tree (recursively) as path → entry.
func lsTree(ctx context.Context, c gitCall, tree string) (map[string]treeEntry, error) {
	c.read = true
	c.args = []string{"ls-tree", "-r", "-l", "-z", "--full-tree", tree}
	out, err := c.exec(ctx)
	if err != nil {
		return nil, err
	}
	entries := map[string]treeEntry{}
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			return nil, fmt.Errorf("git ls-tree printed %q", rec)
		}
		e := treeEntry{mode: f[0], sha: f[2]}
		if f[3] != "-" {
			if e.size, err = strconv.ParseInt(f[3], 10, 64); err != nil {
				return nil, fmt.Errorf("git ls-tree printed %q", rec)
			}
		}
		entries[path] = e
	}
	return entries, nil
}

// checkPath refuses a path that could land outside the worktree or in git's
// own files: an empty, "." or ".." element, or an element git reads as
// .git (in any case, with the trailing dots and spaces Windows drops, or
// its 8.3 short name).
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || len(p) > 4096 {
		return fmt.Errorf("the path %q is not a relative path inside the worktree", p)
	}
	for _, el := range strings.Split(p, "/") {
		switch {
		case el == "" || el == "." || el == "..":
			return fmt.Errorf("the path %q leads outside the worktree", p)
		case strings.EqualFold(strings.TrimRight(el, ". "), ".git") || strings.EqualFold(el, "git~1"):
			return fmt.Errorf("the path %q is inside a .git directory", p)
		}
	}
	return nil
}

// allowedModes are the file modes a snapshot may hold: a file, an
// executable, a symlink, a gitlink (an empty directory where a nested
// repository was).
var allowedModes = map[string]bool{"100644": true, "100755": true, "120000": true, "160000": true}

// checkEntries checks the files a snapshot adds or changes: every path
// (checkPath), every mode, and the size of symlink targets. A refused
// entry is a *RefusedError.
func checkEntries(changed map[string]treeEntry) error {
	for p, e := range changed {
		if err := checkPath(p); err != nil {
			return refuse(RefusedPath, p, "%v", err)
		}
		if !allowedModes[e.mode] {
			return refuse(RefusedPath, p, "%q has the mode %s, which is not a file, an executable, a symlink or a gitlink", p, e.mode)
		}
	}
	return nil
}

// checkLinks checks that none of the symlinks links (paths of the tree
// whose files all lists) leads outside the worktree, following the tree's
// other symlinks on the way, unless base (the baseline's files, whose
// symlinks are the user's own) has it as it is. targets reads the targets
// of symlink blobs. A refused link is a *RefusedError.
func checkLinks(links []string, all, base map[string]treeEntry, targets func([]string) (map[string]string, error)) error {
	var shas []string
	for p, e := range all {
		if e.mode != "120000" {
			continue
		}
		if e.size > maxLinkTarget {
			return refuse(RefusedSymlink, p, "the symlink %q has a target of %d bytes", p, e.size)
		}
		shas = append(shas, e.sha)
	}
	got, err := targets(shas)
	if err != nil {
		return err
	}
	byPath := map[string]string{}
	for p, e := range all {
		if e.mode == "120000" {
			byPath[p] = got[e.sha]
		}
	}
	sort.Strings(links)
	for _, p := range links {
		if b, ok := base[p]; ok && b == all[p] {
			continue
		}
		if leadsOutside(p, byPath) {
			return refuse(RefusedSymlink, p, "the symlink %q -> %q leads outside the worktree", p, byPath[p])
		}
	}
	return nil
}

// diffTree lists the files that tree to adds or changes relative to from
// (`git diff-tree -r`), as path → entry (without sizes).
func diffTree(ctx context.Context, c gitCall, from, to string) (map[string]treeEntry, error) {
	c.read = true
	c.args = []string{"diff-tree", "-r", "-z", "--no-renames", "--raw", from, to}
	out, err := c.exec(ctx)
	if err != nil {
		return nil, err
	}
	changed := map[string]treeEntry{}
	f := strings.Split(out, "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(f[i], ":"))
		if len(meta) != 5 {
			return nil, fmt.Errorf("git diff-tree printed %q", f[i])
		}
		if meta[4] == "D" {
			continue
		}
		changed[f[i+1]] = treeEntry{mode: meta[1], sha: meta[3]}
	}
	return changed, nil
}

// objectSizes returns the size of each blob of entries (gitlinks have
// none), through one `git cat-file --batch-check`.
func objectSizes(ctx context.Context, c gitCall, entries map[string]treeEntry) (map[string]int64, error) {
	var in strings.Builder
	for _, e := range entries {
		if e.mode != "160000" {
			in.WriteString(e.sha + "\n")
		}
	}
	if in.Len() == 0 {
		return nil, nil
	}
	c.read = true
	c.args = []string{"cat-file", "--batch-check=%(objectname) %(objectsize)"}
	c.stdin = strings.NewReader(in.String())
	out, err := c.exec(ctx)
	if err != nil {
		return nil, err
	}
	sizes := map[string]int64{}
	for _, l := range lines(out) {
		sha, n, ok := strings.Cut(l, " ")
		size, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("git cat-file printed %q", l)
		}
		sizes[sha] = size
	}
	return sizes, nil
}

// maxLinkHops bounds how many symlinks leadsOutside follows (Linux's
// limit); a longer chain or a loop counts as leading outside.
const maxLinkHops = 40

// leadsOutside reports whether the symlink at p (a slash path relative to
// the worktree) resolves to somewhere outside the worktree, following the
// tree's symlinks (links: path → target) as the kernel would.
func leadsOutside(p string, links map[string]string) bool {
	hops := 0
	dir := strings.Split(p, "/")
	_, out := resolveLink(dir[:len(dir)-1], links[p], links, &hops)
	return out
}

// resolveLink follows target from the directory at (a list of path
// elements) and returns where it ends, or outside.
func resolveLink(at []string, target string, links map[string]string, hops *int) ([]string, bool) {
	if *hops++; *hops > maxLinkHops || strings.HasPrefix(target, "/") {
		return nil, true
	}
	cur := append([]string(nil), at...)
	for _, el := range strings.Split(target, "/") {
		switch el {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, true
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, el)
		if t, ok := links[strings.Join(cur, "/")]; ok {
			var out bool
			if cur, out = resolveLink(cur[:len(cur)-1], t, links, hops); out {
				return nil, true
			}
		}
	}
	return cur, false
}

// blobReader returns a function that reads small blobs (symlink targets)
// through one `git cat-file --batch`.
func blobReader(ctx context.Context, c gitCall) func([]string) (map[string]string, error) {
	return func(shas []string) (map[string]string, error) {
		pr, pw := io.Pipe()
		c.read = true
		c.args = []string{"cat-file", "--batch"}
		c.stdin = strings.NewReader(strings.Join(shas, "\n") + "\n")
		c.stdout = pw
		done := make(chan error, 1)
		go func() {
			_, err := c.exec(ctx)
			pw.CloseWithError(err)
			done <- err
		}()
		got := map[string]string{}
		br := bufio.NewReader(pr)
		var perr error
		for range shas {
			head, err := br.ReadString('\n')
			if err != nil {
				perr = err
				break
			}
			f := strings.Fields(head)
			if len(f) != 3 || f[1] != "blob" {
				perr = fmt.Errorf("git cat-file printed %q", strings.TrimSpace(head))
				break
			}
			n, err := strconv.Atoi(f[2])
			if err != nil || n > maxLinkTarget {
				perr = fmt.Errorf("a symlink target of %s bytes", f[2])
				break
			}
			buf := make([]byte, n+1)
			if _, err := io.ReadFull(br, buf); err != nil {
				perr = err
				break
			}
			got[f[0]] = string(buf[:n])
		}
		pr.CloseWithError(io.ErrClosedPipe)
		if err := <-done; err != nil && perr == nil {
			perr = err
		}
		if perr != nil {
			return nil, fmt.Errorf("read symlink targets: %w", perr)
		}
		return got, nil
	}
}
