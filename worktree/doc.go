// Package worktree owns the lifecycle of the git worktrees that ink gives to
// children whose edits are risky: it detects the repository a child starts
// in, creates a worktree on a fresh ink/<childId> branch under
// $INK_HOME/worktrees (serialised per repository by a file lock), locks it
// while a worker runs there, assesses it after every attempt (clean,
// work-present or unknown), removes it only when it is provably clean,
// validates it before a resume, and serves the `ink worktrees` commands
// (list, diff, merge, rm, prune).
//
// The package never loses work: any doubt (a git failure, a missing file, a
// replaced history) is reported as Unknown and nothing is deleted, and it
// never deletes a branch it did not create. Every git call goes through one
// wrapper (git.go) that pins the locale, never prompts, and keeps ink's own
// writes free of repository hooks.
//
// Besides the worktree directory, the package writes one record file per
// worktree, $INK_HOME/worktrees/<repo-slug>/<childId>.json, so the admin
// commands know the baseline; it is removed together with the worktree.
package worktree
