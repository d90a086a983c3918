package worktree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// parentDir returns the directory that holds p.
func parentDir(p string) string { return filepath.Dir(filepath.Clean(p)) }

// realpath resolves every symlink in p and makes it absolute.
func realpath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// samePath reports whether a and b name the same location after symlink
// resolution; when either cannot be resolved it compares them lexically.
func samePath(a, b string) bool {
	ra, errA := realpath(a)
	rb, errB := realpath(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// isInside reports whether p is dir or lies below it (both already
// cleaned/resolved).
func isInside(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// repoHash is the hex sha256 of a repository root path.
func repoHash(root string) string {
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:])
}

var slugUnsafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-zA-Z0-9._-]+`) })

// RepoSlug names a repository's directory under $INK_HOME/worktrees: its
// readable base name plus 8 hex digits of sha256(root), so two checkouts
// with the same name never share a directory.
func RepoSlug(root string) string {
	base := slugUnsafe().ReplaceAllString(filepath.Base(root), "-")
	base = strings.Trim(base, ".-")
	if len(base) > 40 {
		base = base[:40]
	}
	if base == "" {
		base = "repo"
	}
	return base + "-" + repoHash(root)[:8]
}

// slugPattern matches what RepoSlug returns.
var slugPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9._-]{1,40}-[0-9a-f]{8}$`) })

var childIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`) })

// checkChildID refuses an id that is not safe as a directory and branch name.
func checkChildID(id string) error {
	if !childIDPattern().MatchString(id) || strings.HasSuffix(id, "-") {
		return fmt.Errorf("child id %q is not valid: use 1-64 lowercase letters, digits and dashes", id)
	}
	return nil
}

// worktreesDir is $INK_HOME/worktrees.
func worktreesDir(inkHome string) string { return filepath.Join(inkHome, "worktrees") }

// dirExists reports whether p is an existing directory (symlinks followed).
func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
