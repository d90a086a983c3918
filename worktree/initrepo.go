package worktree

import (
	"context"
	"fmt"
)

// InitRepo makes dir, which holds files, a git repository on branch main
// with one commit of all of them, by name <email>, with ink's hardened git
// (no hooks, no program from any configuration). The offline demo makes
// its project with it.
func InitRepo(ctx context.Context, dir, message, name, email string) error {
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", name},
		{"config", "user.email", email},
		{"add", "-A"},
		{"commit", "-q", "-m", message},
	} {
		if _, err := run(ctx, dir, args...); err != nil {
			return fmt.Errorf("make a repository in %s: %w", dir, err)
		}
	}
	return nil
}
